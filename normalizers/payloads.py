"""The canonical forms of step payloads (docs/trajectory-rules.md §8).

Conventions extract a step's input and output as their instrumentation recorded it: OpenInference
reassembles indexed messages, LangSmith keeps LangChain's serialised call, Coze Loop the OpenAI
request and response, Traceloop GenAI "parts", and so on. This module turns any of those into the
one form §8 fixes, so the same run gives the same payload whichever instrumentation traced it:

- model: the chat messages sent → the assistant message returned;
- tool: the call's arguments object → the tool's own result text;
- agent, graph, root: the chat messages of a chat state, else the input object → the final
  assistant message of a chat state, else the output object.

A chat message is `{"role", "content"}` plus, where present, `tool_calls` (`[{id, name,
arguments}]`), `tool_call_id` and `name`. Canonical JSON is `attrs.dumps`: sorted keys, compact,
UTF-8. A payload that is not recognised stays as recorded (JSON re-serialised canonically),
never dropped: the raw spans keep the original either way.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any, Final

from trajhub.normalizers.attrs import dumps, parse_json, parse_literal
from trajhub.normalizers.coerce import to_str
from trajhub.normalizers.reading import ErrorInfo, SpanReading, StepKind
from trajhub.normalizers.span_errors import one_line

#: every role name seen in the wild → the four roles of §8
_ROLES: Final[Mapping[str, str]] = {
    "user": "user",
    "human": "user",
    "humanmessage": "user",
    "humanmessagechunk": "user",
    "assistant": "assistant",
    "ai": "assistant",
    "model": "assistant",
    "aimessage": "assistant",
    "aimessagechunk": "assistant",
    "system": "system",
    "developer": "system",
    "systemmessage": "system",
    "systemmessagechunk": "system",
    "tool": "tool",
    "function": "tool",
    "toolmessage": "tool",
    "toolmessagechunk": "tool",
    "functionmessage": "tool",
}

Message = dict[str, Any]


# ---------------------------------------------------------------------------------------------
# messages


def _role(value: object) -> str:
    return _ROLES.get(value.lower(), "") if isinstance(value, str) else ""


def _unwrap_langchain(value: Mapping[str, Any]) -> tuple[Mapping[str, Any], str]:
    """(the message fields, the role its wrapper names) of LangChain's serialised forms:
    `{"lc": 1, "type": "constructor", "id": [..., "AIMessage"], "kwargs": {...}}` (dumpd, JS and
    Traceloop), `{"type": "ai", "data": {...}}` (messages_to_dict, OpenInference)."""
    kwargs = value.get("kwargs")
    ids = value.get("id")
    if value.get("lc") is not None and isinstance(kwargs, Mapping):
        name = ids[-1] if isinstance(ids, list) and ids and isinstance(ids[-1], str) else ""
        return kwargs, _role(name) or _role(kwargs.get("type"))
    data = value.get("data")
    if isinstance(data, Mapping) and _role(value.get("type")) and "content" in data:
        return data, _role(value.get("type"))
    return value, ""


def _arguments(value: object) -> Any:
    """A tool call's arguments as an object: JSON text parsed, Python-literal text too."""
    if isinstance(value, str):
        parsed = parse_json(value)
        if parsed is None and value.strip()[:1] in ("{", "["):
            parsed = parse_literal(value)
        return parsed if parsed is not None else value
    return {} if value is None else value


def _tool_call(value: object) -> Message | None:
    """One tool call in OpenAI (`function: {name, arguments}`), LangChain (`name`, `args`) or
    GenAI part (`name`, `arguments`) form."""
    if isinstance(value, Mapping) and isinstance(value.get("tool_call"), Mapping):
        value = value["tool_call"]  # OpenInference's indexed wrapper
    if not isinstance(value, Mapping):
        return None
    function = value.get("function")
    if isinstance(function, Mapping):
        name, arguments = function.get("name"), function.get("arguments")
    elif "args" in value:
        name, arguments = value.get("name"), value.get("args")
    else:
        name, arguments = value.get("name"), value.get("arguments")
    if not isinstance(name, str) or not name:
        return None
    call: Message = {"name": name, "arguments": _arguments(arguments)}
    call_id = value.get("id")
    if isinstance(call_id, str) and call_id:
        call["id"] = call_id
    return call


def _tool_calls(fields: Mapping[str, Any]) -> list[Message]:
    raw = fields.get("tool_calls")
    if not raw:
        extra = fields.get("additional_kwargs")
        raw = extra.get("tool_calls") if isinstance(extra, Mapping) else None
    if not isinstance(raw, list):
        return []
    return [call for item in raw if (call := _tool_call(item)) is not None]


def _part(value: object) -> Any:
    """One part of multi-part content; text parts in one form ({"type": "text", "text"})."""
    if isinstance(value, str):
        return {"type": "text", "text": value}
    if isinstance(value, Mapping) and value.get("type") == "text":
        text = value.get("text", value.get("content"))
        if isinstance(text, str):
            return {"type": "text", "text": text}
    return value


def _content(value: object) -> Any:
    """Content as a string; multi-part content stays a list of parts, except that a single text
    part is its text (GenAI always uses parts, LangChain a string for the same message)."""
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        parts = [_part(p) for p in value]
        if len(parts) == 1 and isinstance(parts[0], Mapping) and parts[0].get("type") == "text":
            return parts[0]["text"]
        return parts
    return to_str(value)


def _from_parts(fields: Mapping[str, Any], message: Message) -> None:
    """GenAI `parts`: text parts are the content, tool_call parts the calls, a
    tool_call_response part the result of a call."""
    texts: list[Any] = []
    calls: list[Message] = []
    for part in fields.get("parts") or []:
        if not isinstance(part, Mapping):
            continue
        kind = part.get("type")
        if kind == "tool_call":
            call = _tool_call(part)
            if call is not None:
                calls.append(call)
        elif kind == "tool_call_response":
            call_id = part.get("id")
            if isinstance(call_id, str) and call_id:
                message["tool_call_id"] = call_id
            response = part.get("response", part.get("result"))
            texts.append(response if isinstance(response, str) else dumps(response))
        else:
            texts.append(part)
    message["content"] = _content(texts) if texts else ""
    if calls:
        message["tool_calls"] = calls


def _text_blocks(value: object) -> str | None:
    """The text of a list of content blocks that holds one text block only (what
    langchain-mcp-adapters returns as a tool's result), else None."""
    if not isinstance(value, list) or not all(
        isinstance(v, Mapping) and v.get("type") == "text" for v in value
    ):
        return None
    content = _content(value)
    return content if isinstance(content, str) else None


def _tool_content(content: Any) -> Any:
    """A tool message's content as its result. Content blocks recorded as their JSON text
    (Traceloop, OTel GenAI) are read as the blocks: one text block is its text.

    cozeloop-python records a tool message's content as the Python repr of a dict around it,
    `"{'content': 'Sunny, 22C'}"`, on tool spans and inside every message list: the result is what
    is inside. Only that exact form (a literal dict whose one key is `content`, or `content` and
    the `artifact` a `content_and_artifact` tool such as an MCP adapter's returns) is
    unwrapped."""
    if isinstance(content, str) and content.startswith("[{"):
        text = _text_blocks(_parsed(content))
        if text is not None:
            return text
    if not isinstance(content, str) or not content.startswith("{'content': "):
        return content
    inner = parse_literal(content)
    if isinstance(inner, Mapping) and set(inner) in ({"content"}, {"content", "artifact"}):
        return _content(inner["content"])
    return content


def chat_message(value: object) -> Message | None:
    """`value` as a §8 chat message, or None when it is not a message in any known form."""
    if not isinstance(value, Mapping):
        return None
    fields, role = _unwrap_langchain(value)
    role = role or _role(fields.get("role")) or _role(fields.get("type"))
    if not role:
        return None
    contents = fields.get("contents")
    if "content" not in fields and isinstance(contents, list):
        # OpenInference's multi-part message (`message.contents.N.message_content.*`)
        fields = {**fields, "content": [
            c.get("message_content", c) if isinstance(c, Mapping) else c for c in contents]}
    has_body = any(key in fields for key in ("content", "parts", "tool_calls"))
    if not has_body:
        return None
    message: Message = {"role": role}
    if "parts" in fields and "content" not in fields:
        _from_parts(fields, message)
    else:
        message["content"] = _content(fields.get("content"))
        calls = _tool_calls(fields) if role == "assistant" else []
        if calls:
            message["tool_calls"] = calls
    if role == "tool":
        message["content"] = _tool_content(message["content"])
    call_id = fields.get("tool_call_id")
    if isinstance(call_id, str) and call_id:
        message["tool_call_id"] = call_id
    name = fields.get("name")
    if role == "tool" and isinstance(name, str) and name:
        # a tool message's name is the tool's; other messages' names are speaker labels that
        # only some instrumentations record, so they would break invariance
        message["name"] = name
    return message


def chat_messages(value: object) -> list[Message] | None:
    """A list of messages (every item one), or None."""
    if not isinstance(value, list) or not value:
        return None
    out = [chat_message(item) for item in value]
    if any(m is None for m in out):
        return None
    return _link_tool_results([m for m in out if m is not None])


def _link_tool_results(messages: list[Message]) -> list[Message]:
    """Give every tool message the id and name of the call it answers.

    Some instrumentations drop them (@cozeloop/langchain keeps neither, Traceloop no name), so
    they are taken from the assistant message before: by id when the tool message has one,
    else by position (a tool node answers the calls in the order they were made)."""
    calls: list[Message] = []
    answered = 0
    for message in messages:
        if message["role"] == "assistant":
            calls = list(message.get("tool_calls", ()))
            answered = 0
            continue
        if message["role"] != "tool":
            calls = []
            continue
        call_id = message.get("tool_call_id")
        call = next((c for c in calls if c.get("id") == call_id), None) if call_id else None
        if call is None and call_id is None and answered < len(calls):
            call = calls[answered]
        answered += 1
        if call is None:
            continue
        if "tool_call_id" not in message and isinstance(call.get("id"), str):
            message["tool_call_id"] = call["id"]
        message.setdefault("name", call["name"])
    return messages


def _state(value: object) -> object:
    """The graph state inside instrumentation envelopes: Traceloop's `{"inputs": ...}` /
    `{"outputs": ...}`, Eino ADK's `{"Input": {"Messages": ...}, "ResumeInfo": ...}`."""
    if isinstance(value, Mapping):
        inner = value.get("Input")
        if isinstance(inner, Mapping) and "Messages" in inner:
            return inner
        for key in ("inputs", "outputs"):
            inner = value.get(key)
            if isinstance(inner, (Mapping, list)) and set(value) <= {
                key,
                "tags",
                "metadata",
                "kwargs",
                "run_type",
                "name",
            }:
                return inner
    return value


def _messages_of_state(state: object) -> list[Message] | None:
    if isinstance(state, Mapping):
        for key in ("messages", "Messages"):
            found = state.get(key)
            if isinstance(found, list) and found and isinstance(found[0], list):
                found = found[0]  # LangSmith: a batch of message lists, one per prompt
            messages = chat_messages(found)
            if messages is not None:
                return messages
        return None
    return chat_messages(state)


def _final_assistant(messages: Sequence[Message]) -> Message | None:
    for message in reversed(messages):
        if message["role"] == "assistant":
            return message
    return None


def _events_messages(value: object) -> list[Message] | None:
    """Eino ADK agent output: a list of AgentEvents `{agent_name, run_path, message}`."""
    if not isinstance(value, list) or not value:
        return None
    messages = [
        m
        for event in value
        if isinstance(event, Mapping)
        and (m := chat_message(event.get("message") or event.get("output"))) is not None
    ]
    return messages or None


# ---------------------------------------------------------------------------------------------
# per step type


def _parsed(text: str) -> Any:
    return parse_json(text) if text else None


def _as_recorded(text: str) -> str:
    """Unrecognised content: JSON re-serialised canonically, anything else as it is."""
    value = _parsed(text)
    return dumps(value) if isinstance(value, (Mapping, list)) else text


def model_input(text: str) -> str:
    value = _parsed(text)
    messages = _messages_of_state(value)
    return dumps(messages) if messages is not None else _as_recorded(text)


def model_output(text: str) -> str:
    value = _parsed(text)
    message: Message | None = None
    if isinstance(value, Mapping):
        choices = value.get("choices")
        generations = value.get("generations")
        if isinstance(choices, list) and choices and isinstance(choices[0], Mapping):
            message = chat_message(choices[0].get("message") or choices[0].get("delta"))
        elif isinstance(generations, list) and generations:
            first = generations[0]
            first = first[0] if isinstance(first, list) and first else first
            if isinstance(first, Mapping):
                message = chat_message(first.get("message"))
        else:
            message = chat_message(value)
    elif isinstance(value, list):
        messages = [m for item in value if (m := chat_message(item)) is not None]
        message = _final_assistant(messages)
    if message is None:
        return _as_recorded(text)
    return dumps({**message, "role": "assistant"})


def tool_arguments(text: str) -> Any:
    """The arguments object of a tool input, or None when the text is not one."""
    value = _parsed(text)
    if value is None and text.strip()[:1] in ("{", "["):
        value = parse_literal(text)
    return value if isinstance(value, Mapping) else None


def tool_input(text: str) -> str:
    arguments = tool_arguments(text)
    return dumps(arguments) if arguments is not None else text


def tool_output(text: str) -> str:
    """The tool's own result out of a ToolMessage (any serialised form) or an `{"output": ...}`
    envelope. Text that is not such a wrapper is the result itself and stays exactly as it is:
    JSON a tool returned is not re-serialised."""
    value = _parsed(text)
    if value is None and text.startswith("Command("):
        return _command_repr_result(text) or text
    if isinstance(value, list):
        # content blocks (langchain-mcp-adapters' results, as OTel GenAI records them): a single
        # text block is the text, as inside a ToolMessage
        blocks = _text_blocks(value)
        return blocks if blocks is not None else text
    for _ in range(3):  # envelopes nest at most twice ({"output": <ToolMessage>})
        if not isinstance(value, Mapping):
            return text
        if _is_output_envelope(value):
            value = value["output"]
            if isinstance(value, str):
                return value
            continue
        if _is_command(value):
            return _command_result(value) or text
        message = chat_message(value)
        if message is None or message["role"] != "tool":
            return text
        content = message["content"]
        return content if isinstance(content, str) else dumps(content)
    return text


def message_text(fields: Mapping[str, Any]) -> str:
    """A message's content as one text: a single text part is its text, other multi-part content
    is its canonical JSON (langchain-mcp-adapters returns a tool's result as text parts)."""
    content = _content(fields.get("content"))
    return content if isinstance(content, str) else dumps(content)


def returned_error(text: str) -> str | None:
    """The error text of a tool's recorded output when it is a ToolMessage with `status:
    "error"`: an error the tool caught inside its own run and returned to the model (a tool with
    `handle_tool_error`, as langchain-mcp-adapters makes them) rather than raised, so the span
    itself ended normally. None when the output is anything else (docs/trajectory-rules.md §4,
    returned tool errors)."""
    value = _parsed(text)
    for _ in range(3):  # the same envelopes as tool_output
        if not isinstance(value, Mapping):
            return None
        if _is_output_envelope(value):
            value = value["output"]
            continue
        fields, role = _unwrap_langchain(value)
        if (role or _role(fields.get("type"))) != "tool" or fields.get("status") != "error":
            return None
        return message_text(fields)
    return None


def _is_output_envelope(value: Mapping[str, Any]) -> bool:
    """A callback's record of what a tool returned: LangSmith's `{"output": ...}`, Traceloop's
    `{"output": ..., "kwargs": ...}`."""
    return "output" in value and set(value) <= {"output", "kwargs"}


def _is_command(value: Mapping[str, Any]) -> bool:
    """A LangGraph `Command` a tool returned (a handoff): Python serialises its fields (`graph`,
    `goto`, `update`), LangGraph.js adds `lg_name: "Command"`."""
    return value.get("lg_name") == "Command" or (
        isinstance(value.get("update"), Mapping) and ("graph" in value or "goto" in value)
    )


def _command_result(command: Mapping[str, Any]) -> str:
    """A handoff's result: the content of the tool message its Command adds to the state."""
    update = command.get("update")
    found = _messages_of_state(update) if isinstance(update, Mapping) else None
    for message in reversed(found or []):
        if message["role"] == "tool":
            content = message["content"]
            return content if isinstance(content, str) else dumps(content)
    return ""


_TOOL_MESSAGE_REPR: Final = re.compile(
    r"ToolMessage\(content=('(?:[^'\\]|\\.)*'|\"(?:[^\"\\]|\\.)*\")"
)
_GOTO_REPR: Final = re.compile(r"goto='([^']+)'")


def command_goto(text: str) -> str:
    """The node a tool's `Command` result routes to ("" when the result is not a Command that
    goes to one node): the target of a handoff, whatever the tool is called."""
    if text.startswith("Command("):
        match = _GOTO_REPR.search(text)
        return match.group(1) if match else ""
    value = _parsed(text)
    if isinstance(value, Mapping) and _is_output_envelope(value):
        value = value["output"]
    if isinstance(value, Mapping) and _is_command(value):
        goto = value.get("goto")
        return goto if isinstance(goto, str) else ""
    return ""


def _command_repr_result(text: str) -> str:
    """The same from a Command's Python repr (cozeloop-python stringifies what a tool returns)."""
    found = _TOOL_MESSAGE_REPR.findall(text)
    if not found:
        return ""
    value = parse_literal(found[-1])
    return value if isinstance(value, str) else ""


_RESUME_REPR: Final = re.compile(r"^Command\((?:.*, )?resume=(.*?)(?:, goto=.*)?\)$", re.DOTALL)
_COMMAND_FIELDS: Final = frozenset({"graph", "update", "resume", "goto", "lg_name"})


def _resume_of(value: object) -> str | None:
    """The resume value of a serialised `Command` (inside a LangSmith `{"input": ...}` envelope
    too), None when `value` is not a Command that resumes."""
    if isinstance(value, Mapping) and set(value) == {"input"}:
        value = value["input"]
    if not (isinstance(value, Mapping) and "resume" in value and set(value) <= _COMMAND_FIELDS):
        return None
    resume = value["resume"]
    if resume is None:
        return None
    return resume if isinstance(resume, str) else dumps(resume)


def resume_value(text: str) -> str | None:
    """The resume value of a run's input that is a LangGraph `Command(resume=...)` (the run
    resuming an interrupted one, docs/trajectory-rules.md, "Interrupted runs"): text as itself,
    anything else as JSON; None when the input is not such a Command."""
    value = _parsed(text)
    if value is None and text.startswith("Command("):
        match = _RESUME_REPR.match(text.strip())
        value = {"resume": parse_literal(match.group(1))} if match else None
    return _resume_of(_state(value))


def state_input(text: str) -> str:
    resumed = resume_value(text)
    if resumed is not None:
        return resumed
    value = _parsed(text)
    if value is None:
        return text
    state = _state(value)
    messages = _messages_of_state(state)
    return dumps(messages) if messages is not None else dumps(state)


def state_output(text: str) -> str:
    value = _parsed(text)
    if value is None:
        return text
    state = _state(value)
    messages = _messages_of_state(state) or _events_messages(state)
    if messages is None:
        single = chat_message(state)
        messages = [single] if single is not None else None
    if messages is not None:
        final = _final_assistant(messages)
        if final is not None:
            return dumps(final)
    return dumps(state)


# ---------------------------------------------------------------------------------------------
# a whole reading

#: metadata keys of §8's markers
TRUNCATED: Final = "payload_truncated"
MISSING: Final = "payload_missing"


def call_arguments(model_output_text: str) -> dict[str, Any]:
    """tool call id → arguments, of the calls in a canonical model output."""
    message = parse_json(model_output_text)
    calls = message.get("tool_calls") if isinstance(message, Mapping) else None
    found: dict[str, Any] = {}
    for call in calls if isinstance(calls, list) else []:
        if isinstance(call, Mapping) and isinstance(call.get("id"), str):
            found[call["id"]] = call.get("arguments")
    return found


def canonical(
    reading: SpanReading, *, as_state: bool, arguments: Mapping[str, Any]
) -> SpanReading:
    """`reading` with §8 payloads and the missing-payload marker.

    `as_state`: read the payloads as a run's (agent, graph or root) whatever the step kind.
    `arguments`: tool call id → arguments as the model asked for them; a tool step whose call
    is there takes them as its input (some instrumentations record only a rendering, such as
    OpenInference's `"Paris"` for `{"city": "Paris"}`)."""
    kind = reading.kind
    if as_state or kind in (StepKind.AGENT, StepKind.GRAPH, StepKind.OTHER):
        input_text, output_text = state_input(reading.input), state_output(reading.output)
    elif kind is StepKind.MODEL:
        input_text, output_text = model_input(reading.input), model_output(reading.output)
    else:
        call_id = reading.metadata.get("tool_call_id", "")
        input_text = (
            dumps(arguments[call_id])
            if call_id in arguments and isinstance(arguments[call_id], Mapping)
            else tool_input(reading.input)
        )
        output_text = tool_output(reading.output)
        returned = returned_error(reading.output) if reading.error is None else None
        if returned is not None:
            reading = replace(reading, error=ErrorInfo(code=-1, message=one_line(returned)))
    if reading.error is not None and output_text == "{}":
        output_text = ""  # LangSmith records a failed run's absent outputs as {}
    missing = [
        name for name, text in (("input", input_text), ("output", output_text)) if not text
    ]
    metadata = dict(reading.metadata)
    if missing:
        metadata[MISSING] = ",".join(missing)
    return replace(reading, input=input_text, output=output_text, metadata=metadata)
