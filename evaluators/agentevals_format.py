"""Convert a trajectory document to agentevals' trajectory format: OpenAI chat messages.

So a trajectory can be scored by agentevals itself (or any OpenAI-message tool), and so the LLM
judge sees the run in the form judges are prompted with. The shape:

    user       the root input
    assistant  one per model turn that called tools: content = the model step's output,
               tool_calls = [{id, type: "function", function: {name, arguments}}]
    tool       one per call: tool_call_id, content = the tool output (or its error)
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

from trajhub.evaluators.trajectory_view import Step, parse_trajectory

Message = dict[str, Any]


@dataclass
class _Turn:
    key: int  # the view's turn number: a tool call joins the turn of the model step that issued it
    content: str
    calls: list[Message] = field(default_factory=list)
    results: list[Message] = field(default_factory=list)


def to_agentevals_messages(doc: Mapping[str, Any]) -> list[Message]:
    view = parse_trajectory(doc)
    messages: list[Message] = []
    if view.input:
        messages.append({"role": "user", "content": view.input})
    turns: list[_Turn] = []
    call_ids = _CallIds()
    models = iter(view.model_calls)
    calls = iter(view.tool_calls)
    # view.steps is in execution order, so a sub-agent's calls appear where its parent invoked it;
    # model_calls and tool_calls list the same steps in the same order.
    for step in view.steps:
        if step.type == "model":
            turns.append(_Turn(key=next(models).turn, content=step.output))
        elif step.type == "tool":
            call = next(calls)
            if not turns or turns[-1].key != call.turn:
                # Calls without a model step of their own (e.g. a graph's tool node invoked
                # directly): an assistant message with no content issues them.
                turns.append(_Turn(key=call.turn, content=""))
            call_id = call_ids.issue(step)
            turns[-1].calls.append(_tool_call(step, call_id))
            turns[-1].results.append(
                {"role": "tool", "tool_call_id": call_id, "content": _tool_content(step)}
            )
    final = view.output
    if turns and not turns[-1].calls:
        # The last model turn produced the answer; the root output is the same answer as the run
        # returned it, so prefer that and do not repeat it.
        last = turns.pop()
        final = final or last.content
    for turn in turns:
        message: Message = {"role": "assistant", "content": turn.content}
        if turn.calls:
            message["tool_calls"] = turn.calls
        messages.append(message)
        messages.extend(turn.results)
    if final:
        messages.append({"role": "assistant", "content": final})
    return messages


class _CallIds:
    """The real tool call id (metadata "tool_call_id") when the normalizer kept it, else a
    stable id derived from the step id, so converting the same document twice gives the same ids."""

    def __init__(self) -> None:
        self._used: set[str] = set()

    def issue(self, step: Step) -> str:
        base = step.metadata.get("tool_call_id") or f"call_{step.id or len(self._used)}"
        call_id, n = base, 1
        while call_id in self._used:
            n += 1
            call_id = f"{base}_{n}"
        self._used.add(call_id)
        return call_id


def _tool_call(step: Step, call_id: str) -> Message:
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


def _tool_content(step: Step) -> str:
    if step.output or step.error is None:
        return step.output
    return f"Error: {step.error.msg}" if step.error.msg else f"Error (code {step.error.code})"
