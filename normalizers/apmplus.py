"""Eino `callbacks/apmplus` spans (OTLP).

apmplus (cloudwego/eino-ext `callbacks/apmplus`, docs/conventions.md §1.3e) opens one CLIENT span
per Eino callback, marks every span `gen_ai.system=eino` with the raw run info
(`runinfo.{name,type,component}`), and types it with `gen_ai.span.kind`: `workflow` for the
outermost span, `lower(component)` for the others.

We classify by `runinfo.component` first, because `gen_ai.span.kind=workflow` hides what the root
is (a compose Graph in a ReAct run, an ADK Agent in an ADK run), and map components exactly as
the cozeloop callback does (`normalizers.cozeloop`) so one Eino run gives the same trajectory
through either export: ChatModel/AgenticModel → model, Tool → tool, Graph/Workflow → graph,
Agent → agent, anything else (Chain, Lambda, ToolsNode, ChatTemplate, ...) → other.

Quirks handled here (tests/fixtures/eino-real/README.md):
- content is flattened into `gen_ai.prompt.N.{role,content}` / `gen_ai.completion.N.*`, except on
  the root (`gen_ai.input` / `gen_ai.output`); a tool's arguments and result are JSON-quoted;
- no tool call ids: recovered from the ToolsNode parent, whose input is the assistant message;
- an ADK agent span ends as soon as the agent starts and never fails: its error is its run
  Chain's;
- first-token latency is in seconds; token counts use the legacy prompt/completion keys.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Final

from trajhub.normalizers.attrs import copy_attrs, first_present_int, parse_json, put
from trajhub.normalizers.coerce import to_float, to_int, to_str
from trajhub.normalizers.cozeloop import inside_adk_agent, tool_call_id_from_calls
from trajhub.normalizers.model import STATUS_ERROR, Attributes, Span
from trajhub.normalizers.reading import ErrorInfo, ModelUsage, SpanReading, StepKind, TraceView
from trajhub.normalizers.span_errors import split_error

_KINDS: Final[Mapping[str, StepKind]] = {
    "chatmodel": StepKind.MODEL,
    "agenticmodel": StepKind.MODEL,
    "tool": StepKind.TOOL,
    "graph": StepKind.GRAPH,
    "workflow": StepKind.GRAPH,
    "agent": StepKind.AGENT,
}

_PROMPT: Final = "gen_ai.prompt."
_COMPLETION: Final = "gen_ai.completion."


def _messages(attrs: Attributes, prefix: str) -> list[dict[str, str]]:
    """`prefix.N.field` attributes as a list of {field: value} ordered by N. apmplus skips
    messages without content, so indexes can have gaps; the list closes them."""
    by_index: dict[int, dict[str, str]] = {}
    for key, value in attrs.items():
        if not key.startswith(prefix):
            continue
        index_text, _, field = key[len(prefix) :].partition(".")
        index = to_int(index_text) if index_text.isdigit() else None
        if index is None or not field:
            continue
        by_index.setdefault(index, {})[field] = to_str(value)
    return [by_index[i] for i in sorted(by_index)]


def _has_gaps(attrs: Attributes, prefix: str) -> bool:
    """apmplus skipped messages (those without content, such as an assistant message that only
    calls tools): the reassembled list is not the whole conversation."""
    indexes = {
        int(head)
        for key in attrs
        if key.startswith(prefix) and (head := key[len(prefix) :].partition(".")[0]).isdigit()
    }
    return bool(indexes) and indexes != set(range(max(indexes) + 1))


def _unquote(text: str) -> str:
    """apmplus serialises a tool's string argument/result once more (`"{\\"city\\":...}"`)."""
    if text.startswith('"'):
        value = parse_json(text)
        if isinstance(value, str):
            return value
    return text


def _content(attrs: Attributes, whole_key: str, prefix: str, kind: StepKind) -> str:
    """A span's input or output as one string.

    The root has the whole value (`gen_ai.input`/`gen_ai.output`). Elsewhere a single unnamed
    entry 0 is apmplus's fallback (the value serialised as it was) and is returned as it is;
    real messages are reassembled into one JSON list of {role, content, ...}."""
    whole = attrs.get(whole_key)
    if whole is not None:
        return to_str(whole)
    messages = _messages(attrs, prefix)
    if not messages:
        return ""
    if len(messages) == 1:
        text = messages[0].get("content", "")
        if kind is not StepKind.MODEL or "role" not in messages[0] or _is_message_list(text):
            return _unquote(text) if kind is StepKind.TOOL else text
    return json.dumps(messages, ensure_ascii=False)


def _is_message_list(text: str) -> bool:
    """apmplus's fallback when no output message has content (a turn that only calls tools): the
    messages serialised whole as entry 0's content. Its stream path also sets entry 0's role to
    `assistant` (callbacks/apmplus OnEndWithStreamOutput), which makes the fallback look like one
    real message whose text is JSON (tests/fixtures/eino-real/streaming)."""
    if not text.startswith("["):
        return False
    value = parse_json(text)
    return (
        isinstance(value, list)
        and bool(value)
        and all(isinstance(m, Mapping) and "role" in m for m in value)
    )


def _component(span: Span) -> str:
    return to_str(span.attributes.get("runinfo.component"))


def _component_kind(span: Span) -> StepKind:
    return _KINDS.get(_component(span).lower(), StepKind.OTHER)


class Apmplus:
    """Eino apmplus callback spans."""

    name = "apmplus"

    def detect(self, span: Span) -> bool:
        if span.cozeloop is not None:
            return False
        attrs = span.attributes
        if isinstance(attrs.get("gen_ai.span.kind"), str):
            return True
        return attrs.get("gen_ai.system") == "eino" and any(
            key.startswith("runinfo.") for key in attrs
        )

    def read(self, span: Span, trace: TraceView) -> SpanReading:
        attrs = span.attributes
        warnings: list[str] = []
        span_kind = to_str(attrs.get("gen_ai.span.kind"))
        component = _component(span)
        if component:
            kind = _KINDS.get(component.lower(), StepKind.OTHER)
            rule = f"runinfo.component={component}"
            if kind is StepKind.GRAPH and inside_adk_agent(span, trace, _component_kind):
                kind, rule = StepKind.OTHER, f"{rule} run by its ADK agent (part of the agent)"
        else:
            kind = _KINDS.get(span_kind.lower(), StepKind.OTHER)
            rule = f"gen_ai.span.kind={span_kind or '(empty)'}"
            warnings.append("apmplus: span has no runinfo.component")

        run_name = to_str(attrs.get("runinfo.name"))
        # The span name is info.Name or "Type Component"; a tool's run name is the tool's name.
        name = (run_name or span.name) if kind is StepKind.TOOL else (span.name or run_name)

        input_text = _content(attrs, "gen_ai.input", _PROMPT, kind)
        output_text = _content(attrs, "gen_ai.output", _COMPLETION, kind)

        metadata: dict[str, str] = {
            "convention": self.name,
            "framework": "eino",
            "span_type": span_kind,
        }
        put(metadata, "eino_run_info_component", component)
        put(metadata, "eino_run_info_name", run_name)
        copy_attrs(metadata, attrs, {"eino_run_info_type": "runinfo.type",
                                     "session_id": "gen_ai.session.id",
                                     "user_id": "gen_ai.user.id"})
        if "gen_ai.is_streaming" in attrs:
            put(metadata, "stream", attrs.get("gen_ai.is_streaming"))

        usage: ModelUsage | None = None
        if kind is StepKind.MODEL:
            put(
                metadata,
                "model_name",
                attrs.get("gen_ai.response.model") or attrs.get("gen_ai.request.model"),
            )
            # gen_ai.system is always "eino"; the provider is the model implementation's type
            # (e.g. "OpenAI"), which is also what the cozeloop callback reports.
            put(metadata, "model_provider", attrs.get("runinfo.type"))
            put(metadata, "finish_reason", attrs.get("gen_ai.response.finish_reason"))
            usage = _usage(attrs, warnings)
            if _has_gaps(attrs, _PROMPT) or _has_gaps(attrs, _COMPLETION):
                metadata["payload_truncated"] = "true"
        elif kind is StepKind.TOOL:
            put(metadata, "tool_call_id", _tool_call_id(span, name, input_text, trace))
        elif kind is StepKind.AGENT:
            # apmplus serialises the ADK agent's event iterator, which has no exported fields:
            # `{"Events":{}}` records nothing
            if parse_json(output_text) == {"Events": {}}:
                output_text = ""
            # apmplus ends an ADK agent span when the agent starts running (Eino calls OnEnd at
            # the start of flowAgent.run): its duration says nothing, its children outlive it.
            metadata["end_time_unreliable"] = "true"

        error = _error(span)
        if error is None and kind is StepKind.AGENT:
            error = _agent_error(span, trace)
        return SpanReading(self.name, kind, rule, name, input=input_text, output=output_text,
                           error=error, usage=usage, metadata=metadata, framework="eino",
                           warnings=tuple(warnings))


def _usage(attrs: Attributes, warnings: list[str]) -> ModelUsage:
    def count(*keys: str) -> int | None:
        return first_present_int(attrs, *keys, warnings=warnings, label="apmplus: ")

    latency_ms: float | None = None
    ttft_key = "gen_ai.chat_completions.streaming_time_to_first_token"
    if ttft_key in attrs:
        seconds = to_float(attrs[ttft_key])
        if seconds is None:
            warnings.append(f"apmplus: {ttft_key} is not a number: {attrs[ttft_key]!r}")
        else:
            latency_ms = seconds * 1000  # apmplus records seconds
    return ModelUsage(
        input_tokens=count("gen_ai.usage.prompt_tokens", "gen_ai.usage.input_tokens"),
        output_tokens=count("gen_ai.usage.completion_tokens", "gen_ai.usage.output_tokens"),
        latency_first_resp_ms=latency_ms,
    )


def _error(span: Span) -> ErrorInfo | None:
    """apmplus's OnError: status ERROR with err.Error() plus an `exception` event."""
    exception = next((e.attributes for e in span.events if e.name == "exception"), None)
    if span.status_code != STATUS_ERROR and exception is None:
        return None
    text = span.status_message
    if not text.strip() and exception is not None:
        text = to_str(exception.get("exception.message"))
    message, rest = split_error(text)
    return ErrorInfo(code=-1, message=message or "error", traceback=rest)


def _agent_error(span: Span, trace: TraceView) -> ErrorInfo | None:
    """An ADK agent fails through its run Chain (a direct child Chain span), never itself."""
    for child in trace.children(span):
        if _component(child).lower() == "chain":
            error = _error(child)
            if error is not None:
                return error
    return None


def _tool_call_id(span: Span, tool_name: str, arguments: str, trace: TraceView) -> str:
    parent = trace.parent(span)
    if parent is None or _component(parent).lower() not in ("toolsnode", "agentictoolsnode"):
        return ""
    # The ToolsNode's input (apmplus's fallback prompt.0.content) is the assistant message.
    messages = _messages(parent.attributes, _PROMPT)
    if not messages:
        return ""
    return tool_call_id_from_calls(parse_json(messages[0].get("content", "")), tool_name, arguments)


APMPLUS: Final = Apmplus()

CONVENTIONS = (APMPLUS,)
