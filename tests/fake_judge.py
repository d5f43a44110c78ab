"""An OpenAI-compatible chat server on its own port, standing in for an LLM judge.

trajhub's judges (evaluators/judge_protocol.py) POST a chat completion request to
`<endpoint>/chat/completions`; this answers from a function of the request body, so each test
scripts its own verdicts, failures and delays. Every request is recorded with its headers
(lower-cased) and the time it came.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from typing import Any

from tests.chat_server import ChatServer, Reply, json_reply

#: (headers, body) of one request
Request = tuple[dict[str, str], dict[str, Any]]
#: the request body → (status, content): 200 answers a chat completion whose message is
#: `content` (a text, or JSON-encoded); any other status sends `{"error": content}`
Answer = Callable[[dict[str, Any]], tuple[int, Any]]


def completion(model: str, content: str) -> dict[str, Any]:
    return {"id": "chatcmpl-1", "object": "chat.completion", "model": model,
            "choices": [{"index": 0, "finish_reason": "stop",
                         "message": {"role": "assistant", "content": content}}]}


class FakeJudge(ChatServer):
    """Answers POST /v1/chat/completions with `answer`, after `delay` seconds; other paths 404."""

    def __init__(self, answer: Answer, delay: float = 0.0) -> None:
        self.requests: list[Request] = []
        self.times: list[float] = []

        def respond(body: dict[str, Any]) -> Reply:
            status, content = answer(body)
            time.sleep(delay)
            if status != 200:
                return json_reply(status, {"error": content})
            text = content if isinstance(content, str) else json.dumps(content)
            return json_reply(200, completion(body["model"], text))

        super().__init__(respond)

    def received(self, headers: dict[str, str], body: dict[str, Any]) -> None:
        self.requests.append((headers, body))
        self.times.append(time.monotonic())
