"""Convert a trajectory document to agentevals' trajectory format: OpenAI chat messages.

So a trajectory can be scored by agentevals itself (or any OpenAI-message tool), and so an LLM
judge sees the run in the form judges are prompted with. The shape:

    user       every user turn of the conversation: the root input's messages (a chat-shaped
               input keeps its whole history, plain assistant replies included), then any user
               message a later model call was sent that the conversation did not have yet
    assistant  one per model turn that called tools: content = the model's reply text,
               tool_calls = [{id, type: "function", function: {name, arguments}}]
    tool       one per call that returned a result or raised: tool_call_id, content = the
               tool output (or its error); a call the run has no result for gets none
    ...
    assistant  the final answer: the root output (else the last model turn's output)

A model turn that called no tool and is not the last becomes a plain assistant message.
`arguments` is always a JSON string of an object, as OpenAI sends it: a tool input that is a JSON
object is kept; any other input is wrapped as {"input": <decoded value or string>}.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from trajhub.evaluators.trajectory_view import ViewStep, decode_arguments, parse_trajectory

Message = dict[str, Any]


@dataclass
class _Turn:
    key: int  # the view's turn number: a tool call joins the turn of the model step that issued it
    content: Any
    #: user messages that reached the model first in this turn's call (a new user turn)
    users: list[Message] = field(default_factory=list)
    calls: list[Message] = field(default_factory=list)
    results: list[Message] = field(default_factory=list)


def to_agentevals_messages(doc: Mapping[str, Any]) -> list[Message]:
    view = parse_trajectory(doc)
    conversation = _Conversation()
    messages: list[Message] = conversation.start(view.input)
    turns: list[_Turn] = []
    call_ids = _CallIds()
    models = iter(view.model_calls)
    calls = iter(view.tool_calls)
    # view.steps is in execution order, so a sub-agent's calls appear where its parent invoked it;
    # model_calls and tool_calls list the same steps in the same order.
    for step in view.steps:
        if step.type == "model":
            turn = _Turn(key=next(models).turn, content=_reply_content(step.output))
            turn.users = conversation.new_user_messages(step.input)
            turns.append(turn)
        elif step.type == "tool":
            call = next(calls)
            if not turns or turns[-1].key != call.turn:
                # Calls without a model step of their own (e.g. a graph's tool node invoked
                # directly): an assistant message with no content issues them.
                turns.append(_Turn(key=call.turn, content=""))
            call_id = call_ids.issue(step)
            turns[-1].calls.append(_tool_call(step, call_id))
            if _has_result(step):
                turns[-1].results.append(
                    {"role": "tool", "tool_call_id": call_id, "content": _tool_content(step)}
                )
    final: Any = _reply_content(view.output) if view.output else ""
    last_users: list[Message] = []
    if turns and not turns[-1].calls:
        # The last model turn produced the answer; the root output is the same answer as the run
        # returned it, so prefer that and do not repeat it.
        last = turns.pop()
        final = final or last.content
        last_users = last.users
    for turn in turns:
        messages.extend(turn.users)
        message: Message = {"role": "assistant", "content": turn.content}
        if turn.calls:
            message["tool_calls"] = turn.calls
        messages.append(message)
        messages.extend(turn.results)
    messages.extend(last_users)
    if final:
        messages.append({"role": "assistant", "content": final})
    return messages


class _Conversation:
    """The user turns seen so far. A model call's input is the chat history it was sent (maybe
    trimmed to its most recent messages); user messages after the last one already emitted are
    new turns of the same conversation. An input without that message is another conversation
    (a sub-agent prompted with a history of its own) and adds no user turn."""

    def __init__(self) -> None:
        self._last_user: Any = None
        self._started = False

    def start(self, root_input: str) -> list[Message]:
        if not root_input:
            return []
        self._started = True
        history = _chat_messages(root_input)
        if history is None:
            self._last_user = root_input
            return [{"role": "user", "content": root_input}]
        out: list[Message] = []
        for role, content, has_calls in history:
            if role == "user":
                self._last_user = content
                out.append({"role": "user", "content": content if content is not None else ""})
            elif role == "assistant" and not has_calls and content:
                out.append({"role": "assistant", "content": content})
        if self._last_user is None:
            # chat-shaped but without a user message: the question is still the whole input
            self._last_user = root_input
            return [{"role": "user", "content": root_input}]
        return out

    def new_user_messages(self, model_input: str) -> list[Message]:
        history = _chat_messages(model_input)
        if history is None or not self._started:
            return []
        users = [content for role, content, _ in history if role == "user"]
        if self._last_user not in users:
            return []
        last = len(users) - 1 - users[::-1].index(self._last_user)
        new = users[last + 1 :]
        if new:
            self._last_user = new[-1]
        return [{"role": "user", "content": c if c is not None else ""} for c in new]


#: LangChain message types (and other conventions' roles) as OpenAI roles; trajectory-rules 8
#: maps them in the normalizers, this keeps documents derived before that readable.
_ROLES = {"human": "user", "ai": "assistant", "AIMessage": "assistant", "HumanMessage": "user"}


def _chat_messages(text: str) -> list[tuple[str, Any, bool]] | None:
    """(role, content, has tool calls) of each chat message of a payload (trajectory-rules 8: a
    list of {role, content, ...}, or a chat state {"messages": [...]}), or None when it is not
    chat-shaped."""
    decoded = decode_arguments(text)
    if isinstance(decoded, Mapping) and isinstance(decoded.get("messages"), list):
        decoded = decoded["messages"]
    if not isinstance(decoded, list) or not decoded:
        return None
    out: list[tuple[str, Any, bool]] = []
    for message in decoded:
        if not isinstance(message, Mapping):
            return None
        # a serialized LangChain message: {"type": "human", "data": {"content": ...}}
        nested = message.get("data")
        data: Mapping[str, Any] = nested if isinstance(nested, Mapping) else message
        role = message.get("role") or message.get("type")
        if not isinstance(role, str):
            return None
        out.append((_ROLES.get(role, role), data.get("content"), bool(data.get("tool_calls"))))
    return out


def _reply_content(text: str) -> Any:
    """A model step's output (and a chat-shaped root output) is the assistant message it
    returned; its content is the reply. Anything else is the reply as it is."""
    decoded = decode_arguments(text)
    if isinstance(decoded, Mapping) and decoded.get("role") == "assistant":
        content = decoded.get("content")
        return content if content is not None else ""
    return text


def _has_result(step: ViewStep) -> bool:
    return bool(step.output) or step.error is not None


class _CallIds:
    """The real tool call id (metadata "tool_call_id") when the normalizer kept it, else a
    stable id derived from the step id, so converting the same document twice gives the same ids."""

    def __init__(self) -> None:
        self._used: set[str] = set()

    def issue(self, step: ViewStep) -> str:
        base = step.metadata.get("tool_call_id") or f"call_{step.id or len(self._used)}"
        call_id, n = base, 1
        while call_id in self._used:
            n += 1
            call_id = f"{base}_{n}"
        self._used.add(call_id)
        return call_id


def _tool_call(step: ViewStep, call_id: str) -> Message:
    return {
        "id": call_id,
        "type": "function",
        "function": {"name": step.name, "arguments": _arguments(step.input)},
    }


def _arguments(raw: str) -> str:
    text = raw.strip()
    if not text:
        return "{}"
    try:
        decoded = json.loads(text)
    except ValueError:
        return json.dumps({"input": raw}, ensure_ascii=False)
    if isinstance(decoded, dict):
        return text
    return json.dumps({"input": decoded}, ensure_ascii=False)


def _tool_content(step: ViewStep) -> str:
    if step.output or step.error is None:
        return step.output
    return f"Error: {step.error.msg}" if step.error.msg else f"Error (code {step.error.code})"
