"""Generic OTel GenAI semantic conventions (`gen_ai.*`), the last specific convention tried.

Detected by `gen_ai.operation.name` (docs/conventions.md §1.1 row 7); vendor conventions that
also set it with non-standard values (LangSmith, Traceloop) are detected before this one.

- Content: `gen_ai.input.messages` / `gen_ai.output.messages` (JSON string or structured value),
  `gen_ai.system_instructions`, tool `gen_ai.tool.call.arguments` / `.result`; the opt-in event
  `gen_ai.client.inference.operation.details`; the deprecated `gen_ai.prompt` / `gen_ai.completion`
  attributes and `gen_ai.{system,user,assistant,tool}.message` / `gen_ai.choice` events.
- Usage: `gen_ai.usage.{input,output}_tokens` (deprecated `prompt_tokens`/`completion_tokens`),
  `gen_ai.usage.reasoning.output_tokens`, `gen_ai.usage.cache_{read,creation}.input_tokens` and
  the other spellings of the cache counts (`CACHE_READ_KEYS`, `CACHE_WRITE_KEYS`).
- First-chunk latency `gen_ai.response.time_to_first_chunk` is in **seconds**; the trajectory
  wants milliseconds.
"""

from __future__ import annotations

from typing import Any

from trajhub.normalizers.attrs import dumps, get_float, get_int, get_str, parse_json, span_error
from trajhub.normalizers.model import Attributes, Span
from trajhub.normalizers.reading import ModelUsage, SpanReading, StepKind, TraceView

OPERATION_KEY = "gen_ai.operation.name"

#: Cache-read and cache-write counts under every spelling seen (docs/conventions.md §1.2). The
#: first present is the count: a span that carries the same fact under two spellings (an
#: instrumentation moving from one to the other, a dual write) is never counted twice.
CACHE_READ_KEYS = (
    "gen_ai.usage.cache_read.input_tokens",  # the GenAI registry
    "gen_ai.usage.cache_read_input_tokens",  # its deprecated spelling
    "gen_ai.usage.input_tokens.cached",
    "gen_ai.usage.cache_read_tokens",
)
CACHE_WRITE_KEYS = (
    "gen_ai.usage.cache_creation.input_tokens",  # the GenAI registry
    "gen_ai.usage.cache_write.input_tokens",  # the `cache_write` spelling of its bucket
    "gen_ai.usage.cache_creation_input_tokens",  # deprecated spellings
    "gen_ai.usage.cache_write_input_tokens",
    "gen_ai.usage.input_tokens.cache_write",
    "gen_ai.usage.cache_write_tokens",
)
MODEL_OPERATIONS = frozenset({"chat", "text_completion", "generate_content"})
_DETAILS_EVENT = "gen_ai.client.inference.operation.details"
_MESSAGE_EVENTS = {
    "gen_ai.system.message": "system",
    "gen_ai.user.message": "user",
    "gen_ai.assistant.message": "assistant",
    "gen_ai.tool.message": "tool",
}


def _json_value(attrs: Attributes, key: str) -> Any:
    """A structured attribute as is, a JSON string parsed, or None."""
    value = attrs.get(key)
    if isinstance(value, (list, dict)):
        return value
    if isinstance(value, str):
        parsed = parse_json(value)
        return parsed if parsed is not None else value
    return None


def input_messages(attrs: Attributes) -> str:
    """Input messages as one JSON string, with the system instructions first as a system
    message (GenAI keeps them apart; a reader wants the whole prompt)."""
    messages = _json_value(attrs, "gen_ai.input.messages")
    system = _json_value(attrs, "gen_ai.system_instructions")
    if messages is None and system is None:
        return ""
    if system is not None and (messages is None or isinstance(messages, list)):
        parts = system if isinstance(system, list) else [{"type": "text", "content": system}]
        return dumps([{"role": "system", "parts": parts}, *(messages or [])])
    return messages if isinstance(messages, str) else dumps(messages)


def output_messages(attrs: Attributes) -> str:
    messages = _json_value(attrs, "gen_ai.output.messages")
    if messages is None:
        return ""
    return messages if isinstance(messages, str) else dumps(messages)


def model_usage(attrs: Attributes, *, reasoning: bool = True) -> ModelUsage:
    ttft_s = get_float(attrs, "gen_ai.response.time_to_first_chunk")
    return ModelUsage(
        input_tokens=get_int(attrs, "gen_ai.usage.input_tokens", "gen_ai.usage.prompt_tokens"),
        output_tokens=get_int(
            attrs, "gen_ai.usage.output_tokens", "gen_ai.usage.completion_tokens"
        ),
        reasoning_tokens=(
            get_int(attrs, "gen_ai.usage.reasoning.output_tokens", "gen_ai.usage.reasoning_tokens")
            if reasoning
            else None
        ),
        cache_read_tokens=get_int(attrs, *CACHE_READ_KEYS),
        cache_write_tokens=get_int(attrs, *CACHE_WRITE_KEYS),
        latency_first_resp_ms=ttft_s * 1000.0 if ttft_s is not None else None,
    )


def model_name(attrs: Attributes) -> str:
    """Response model, else request model; "unknown" (Traceloop's placeholder) means missing."""
    for key in ("gen_ai.response.model", "gen_ai.request.model"):
        value = get_str(attrs, key)
        if value and value != "unknown":
            return value
    return ""


def _event_content(span: Span) -> tuple[str, str]:
    """Input/output from events when the attributes have none."""
    for event in span.events:
        if event.name == _DETAILS_EVENT:
            return input_messages(event.attributes), output_messages(event.attributes)
    inputs: list[dict[str, Any]] = []
    outputs: list[Any] = []
    for event in span.events:
        role = _MESSAGE_EVENTS.get(event.name)
        body = {k: v for k, v in event.attributes.items() if not k.startswith("gen_ai.system")}
        if role is not None:
            inputs.append({"role": role, **body})
        elif event.name == "gen_ai.choice":
            outputs.append(body)
    return (dumps(inputs) if inputs else "", dumps(outputs) if outputs else "")


class GenAI:
    name = "genai"

    def detect(self, span: Span) -> bool:
        return OPERATION_KEY in span.attributes

    def read(self, span: Span, trace: TraceView) -> SpanReading:
        attrs = span.attributes
        operation = get_str(attrs, OPERATION_KEY) or ""
        rule = f"{OPERATION_KEY}={operation}"
        kind = StepKind.OTHER
        if operation in MODEL_OPERATIONS:
            kind = StepKind.MODEL
        elif operation == "execute_tool":
            kind = StepKind.TOOL
        elif operation == "invoke_agent":
            kind = StepKind.AGENT
        elif operation == "invoke_workflow":
            kind = StepKind.GRAPH

        warnings: list[str] = []
        metadata: dict[str, str] = {"span_type": operation}
        name = span.name
        usage = None
        if kind is StepKind.TOOL:
            input_text = get_str(attrs, "gen_ai.tool.call.arguments") or ""
            output_text = get_str(attrs, "gen_ai.tool.call.result") or ""
            name = get_str(attrs, "gen_ai.tool.name") or span.name.removeprefix("execute_tool ")
            call_id = get_str(attrs, "gen_ai.tool.call.id")
            if call_id:
                metadata["tool_call_id"] = call_id
            else:
                warnings.append("tool call id not found")
        else:
            input_text = input_messages(attrs) or get_str(attrs, "gen_ai.prompt") or ""
            output_text = output_messages(attrs) or get_str(attrs, "gen_ai.completion") or ""
            if not input_text and not output_text:
                input_text, output_text = _event_content(span)
        if kind is StepKind.MODEL:
            usage = model_usage(attrs)
            model = model_name(attrs)
            if model:
                metadata["model_name"] = model
        if kind is StepKind.AGENT:
            name = get_str(attrs, "gen_ai.agent.name") or span.name
        elif kind is StepKind.GRAPH:
            name = get_str(attrs, "gen_ai.workflow.name") or span.name
        provider = get_str(attrs, "gen_ai.provider.name", "gen_ai.system")
        if provider and kind is StepKind.MODEL:
            metadata["model_provider"] = provider
        for key, attr in (
            ("session_id", "gen_ai.conversation.id"),
            ("agent_id", "gen_ai.agent.id"),
        ):
            value = get_str(attrs, attr)
            if value:
                metadata[key] = value
        return SpanReading(
            convention=self.name,
            kind=kind,
            rule=rule,
            name=name,
            input=input_text,
            output=output_text,
            error=span_error(span),
            usage=usage,
            metadata=metadata,
            framework="",
            warnings=tuple(warnings),
        )


GENAI = GenAI()
