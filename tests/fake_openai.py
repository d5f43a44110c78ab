"""A scripted OpenAI-compatible chat server: one tool call, then the final answer.

The official `openai` client talks to it as to api.openai.com (`base_url=<url>`), plain or
streaming (server-sent events, with the usage chunk when `stream_options.include_usage` asks
for it). A conversation's first request (no tool result yet) is answered with `TOOL_TURN`, a
call of `get_weather`; once the request carries the tool's result, with `FINAL_TURN`. Every
request body is recorded. The server is tests/chat_server.py's, as tests/fake_judge.py's.
"""

from __future__ import annotations

import json
from typing import Any

from tests.chat_server import ChatServer, Reply, json_reply

MODEL = "gpt-4o-mini"
TOOL_CALL = {"id": "call_weather_1", "name": "get_weather", "arguments": {"city": "Paris"}}
#: (content, tool calls, prompt tokens, completion tokens) of one answer
Turn = tuple[str, list[dict[str, Any]], int, int]
TOOL_TURN: Turn = ("Let me look up the weather.", [TOOL_CALL], 52, 14)
FINAL_TURN: Turn = ("It is sunny and 22C in Paris.", [], 81, 9)


def turn(body: dict[str, Any]) -> tuple[str, list[dict[str, Any]], int, int]:
    """The scripted answer to one request body."""
    has_result = any(m.get("role") == "tool" for m in body.get("messages", []))
    return FINAL_TURN if has_result else TOOL_TURN


def _wire_calls(calls: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [{"id": c["id"], "type": "function",
             "function": {"name": c["name"], "arguments": json.dumps(c["arguments"])}}
            for c in calls]


def _usage(prompt: int, completion: int) -> dict[str, int]:
    return {"prompt_tokens": prompt, "completion_tokens": completion,
            "total_tokens": prompt + completion}


def completion(body: dict[str, Any]) -> dict[str, Any]:
    content, calls, prompt, output = turn(body)
    message: dict[str, Any] = {"role": "assistant", "content": content}
    if calls:
        message["tool_calls"] = _wire_calls(calls)
    return {"id": "chatcmpl-fake-1", "object": "chat.completion", "created": 1_700_000_000,
            "model": body["model"],
            "choices": [{"index": 0, "message": message,
                         "finish_reason": "tool_calls" if calls else "stop"}],
            "usage": _usage(prompt, output)}


def chunks(body: dict[str, Any]) -> list[dict[str, Any]]:
    """The streamed answer: the role, the content in two pieces, each tool call with its
    arguments in two pieces, the finish reason, then the usage if asked for."""
    content, calls, prompt, output = turn(body)
    base = {"id": "chatcmpl-fake-1", "object": "chat.completion.chunk",
            "created": 1_700_000_000, "model": body["model"]}

    def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
        return {**base, "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}

    half = len(content) // 2
    out = [chunk({"role": "assistant", "content": ""}), chunk({"content": content[:half]}),
           chunk({"content": content[half:]})]
    for index, call in enumerate(_wire_calls(calls)):
        arguments = call["function"]["arguments"]
        cut = len(arguments) // 2
        out.append(chunk({"tool_calls": [{"index": index, "id": call["id"], "type": "function",
                                          "function": {"name": call["function"]["name"],
                                                       "arguments": arguments[:cut]}}]}))
        out.append(chunk({"tool_calls": [{"index": index,
                                          "function": {"arguments": arguments[cut:]}}]}))
    out.append(chunk({}, "tool_calls" if calls else "stop"))
    if (body.get("stream_options") or {}).get("include_usage"):
        out.append({**base, "choices": [], "usage": _usage(prompt, output)})
    return out


class FakeOpenAI(ChatServer):
    """Answers POST /v1/chat/completions from the script; `url` is the client's base_url."""

    def __init__(self) -> None:
        self.requests: list[dict[str, Any]] = []

        def respond(body: dict[str, Any]) -> Reply:
            if body.get("stream"):
                events = b"".join(b"data: " + json.dumps(c).encode() + b"\n\n"
                                  for c in chunks(body))
                return 200, events + b"data: [DONE]\n\n", "text/event-stream"
            return json_reply(200, completion(body))

        super().__init__(respond)

    def received(self, headers: dict[str, str], body: dict[str, Any]) -> None:
        self.requests.append(body)
