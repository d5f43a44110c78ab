"""The fields of an evaluation item filled from a trajectory document.

An evaluation item asks a question and holds the answer a good run gives. From a production
run that is:

- `input`: the user's request, i.e. the content of the last user message of the run's input; or
  the run's whole input when it is not chat-shaped (a custom graph state, a plain string);
- `reference_output`: the run's final answer, i.e. the content of the last assistant message of
  its output; or its whole output when it is not chat-shaped;
- `metadata`: the rest of the state (the conversation before the request, the whole final
  message with its tool calls, ...), so that nothing the run was given or gave is lost.

Custom graph states name their own fields: `input_pointer` / `output_pointer` (RFC 6901 JSON
pointers into the run's input / output as the trajectory stores them) choose them instead. A chat
state is stored as its messages only (§8), so pointers are for states that are not chat-shaped.

The document is read by `normalizers.document` (its tolerance rules apply: a root input that is
not a string is read as its JSON text). Trajectories derived by older normalizers carry their
payloads as the instrumentation recorded them; they are brought to the canonical forms of
docs/trajectory-rules.md §8 first (`normalizers.payloads`), so items look the same whatever
derived the document.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import field
from typing import Any

from trajhub.normalizers.attrs import parse_json
from trajhub.normalizers.document import parse_document
from trajhub.normalizers.immutable import immutable
from trajhub.normalizers.payloads import chat_message, chat_messages, state_input, state_output


class PointerError(ValueError):
    """A JSON pointer that is not one (RFC 6901: "" or "/"-separated reference tokens)."""


@immutable
class ItemFields:
    input: Any
    reference_output: Any
    metadata: dict[str, Any] = field(default_factory=dict)


def check_pointer(pointer: str) -> list[str]:
    """The reference tokens of a JSON pointer; PointerError when it is malformed."""
    if pointer == "":
        return []
    if not pointer.startswith("/"):
        raise PointerError(f"JSON pointer {pointer!r} must be empty or start with '/'")
    tokens = pointer[1:].split("/")
    for token in tokens:
        rest = token.replace("~0", "").replace("~1", "")
        if "~" in rest:
            raise PointerError(f"JSON pointer {pointer!r} has an invalid escape ('~' + not 0/1)")
    return [t.replace("~1", "/").replace("~0", "~") for t in tokens]


_ABSENT = object()


def resolve_pointer(document: Any, pointer: str) -> Any:
    """The value `pointer` names in `document`, or `_ABSENT`."""
    value = document
    for token in check_pointer(pointer):
        if isinstance(value, Mapping):
            if token not in value:
                return _ABSENT
            value = value[token]
        elif isinstance(value, list):
            if not token.isdigit() or (token != "0" and token.startswith("0")):
                return _ABSENT
            index = int(token)
            if index >= len(value):
                return _ABSENT
            value = value[index]
        else:
            return _ABSENT
    return value


def _value(text: str) -> Any:
    """A payload string as a JSON value; text that is not JSON is the string itself; an empty
    payload is None (nothing was recorded)."""
    if not text:
        return None
    parsed = parse_json(text)
    return text if parsed is None else parsed


def _last(messages: list[dict[str, Any]], role: str) -> dict[str, Any] | None:
    return next((m for m in reversed(messages) if m["role"] == role), None)


def _request(run_input: Any) -> tuple[Any, dict[str, Any]]:
    """(the user's request, the rest) of a canonical run input."""
    messages = chat_messages(run_input)
    if messages is None:
        return run_input, {}
    request = _last(messages, "user")
    if request is None:
        return run_input, {}
    # the system prompt and any earlier turns are the request's context, not the request
    rest = {"input_messages": messages} if len(messages) > 1 else {}
    return request["content"], rest


def _answer(run_output: Any) -> tuple[Any, dict[str, Any]]:
    """(the final answer, the rest) of a canonical run output."""
    message = chat_message(run_output)
    if message is None:
        messages = chat_messages(run_output)
        message = _last(messages, "assistant") if messages is not None else None
    if message is None or message["role"] != "assistant":
        return run_output, {}
    rest: dict[str, Any] = {}
    if set(message) != {"role", "content"}:
        rest["final_message"] = message
    return message["content"], rest


def final_answer(document: Mapping[str, Any]) -> Any:
    """The run's final answer: what `item_fields` gives as `reference_output` by default (an
    evaluator shows it next to, and apart from, the item's own reference)."""
    return item_fields(document).reference_output


def _pointed(raw: Any, pointer: str, side: str, run_value: Any,
             metadata: dict[str, Any]) -> Any:
    """The value `pointer` selects in the run's raw input or output (None when absent, noted
    as `<side>_pointer_missing`); the whole run value goes to `run_<side>`."""
    found = resolve_pointer(_value(raw), pointer)
    if found is _ABSENT:
        metadata[f"{side}_pointer_missing"] = pointer
    metadata[f"run_{side}"] = run_value
    return None if found is _ABSENT else found


def item_fields(
    document: Mapping[str, Any],
    *,
    input_pointer: str | None = None,
    output_pointer: str | None = None,
) -> ItemFields:
    """The evaluation item fields of a trajectory document (see module doc).

    A pointer that names nothing in this run gives None for that field and says so in
    `metadata` (`input_pointer_missing` / `output_pointer_missing`); a malformed pointer raises
    PointerError."""
    for pointer in (input_pointer, output_pointer):
        if pointer is not None:
            check_pointer(pointer)
    trajectory = parse_document(document)
    raw_input, raw_output = trajectory.root_step.input, trajectory.root_step.output
    run_input = _value(state_input(raw_input))
    run_output = _value(state_output(raw_output))
    metadata: dict[str, Any] = {}
    if trajectory.id:
        metadata["trace_id"] = trajectory.id

    if input_pointer is not None:
        request = _pointed(raw_input, input_pointer, "input", run_input, metadata)
    else:
        request, rest = _request(run_input)
        metadata.update(rest)
    if output_pointer is not None:
        answer = _pointed(raw_output, output_pointer, "output", run_output, metadata)
    else:
        answer, rest = _answer(run_output)
        metadata.update(rest)
    return ItemFields(input=request, reference_output=answer, metadata=metadata)


def message_text(value: Any) -> str | None:
    """A message content (or a payload) as text a person reads: a string as it is, a list of
    content parts as their text parts joined by newlines, anything else as its JSON; None for
    None (nothing recorded)."""
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, list):
        texts = [part["text"] for part in value
                 if isinstance(part, Mapping) and isinstance(part.get("text"), str)]
        if texts and len(texts) == len(value):
            return "\n".join(texts)
    return json.dumps(value, ensure_ascii=False, sort_keys=True, separators=(",", ":"))


def turn_texts(document: Mapping[str, Any]) -> tuple[str | None, str | None]:
    """(the user's text, the answer) of one run as a conversation turn: the request and the
    final answer `item_fields` takes for an evaluation item, as text."""
    root = parse_document(document).root_step
    return run_texts(root.input, root.output)


def run_texts(raw_input: str, raw_output: str) -> tuple[str | None, str | None]:
    """`turn_texts` from the root step's raw input and output (what a trajectory's summary
    keeps, so the list's previews need no document)."""
    request, _ = _request(_value(state_input(raw_input)))
    answer, _ = _answer(_value(state_output(raw_output)))
    return message_text(request), message_text(answer)
