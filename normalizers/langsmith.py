"""LangSmith OTel-mode spans (langsmith SDK with LANGSMITH_OTEL_ENABLED).

Detected by `langsmith.span.kind` (the LangSmith run_type; docs/conventions.md §1.1 row 3), checked
before the GenAI keys because LangSmith fills `gen_ai.operation.name` with non-standard values
(`chain`, `prompt`→`chat`, `retriever`→`embeddings`).

- There is no agent run type; a `chain` is a graph when it runs LangGraph nodes
  (`langsmith.metadata.langgraph_node` on its children), otherwise it is dropped.
- ⚠ `gen_ai.usage.*` is also set on parent chain spans (e.g. RunnableSequence). Usage is read on
  `llm` spans only, so it is never counted twice.
- Reasoning and cache tokens live in `langsmith.metadata.usage_metadata` (JSON), or in
  `gen_ai.usage.{input,output}_token_details` as a Python `str(dict)`.
- Error status has an empty message; the `exception` event carries repr(err)+traceback with the
  generic type "Exception".
"""

from __future__ import annotations

from typing import Any

from trajhub.normalizers.attrs import (
    copy_attrs,
    dig,
    get_int,
    get_str,
    parse_json,
    parse_literal,
    put,
    put_tool_call_id,
)
from trajhub.normalizers.coerce import to_int
from trajhub.normalizers.langgraph import is_graph
from trajhub.normalizers.model import Span
from trajhub.normalizers.reading import ModelUsage, SpanReading, StepKind, TraceView
from trajhub.normalizers.span_errors import span_error

KIND_KEY = "langsmith.span.kind"
_META = "langsmith.metadata."
#: metadata copied as is from `langsmith.metadata.<the same name>`: the LangGraph node, step and
#: task id ("<node>:<id>", which tells parallel tasks of one node in one step apart), and the
#: run's session, user and thread
_COPIED = {key: _META + key for key in (
    "langgraph_node", "langgraph_step", "langgraph_checkpoint_ns", "session_id", "user_id",
    "thread_id")}


def node_of(span: Span) -> str:
    return get_str(span.attributes, _META + "langgraph_node") or ""


def _details(span: Span, key: str) -> dict[str, Any]:
    """A token-details dict from usage_metadata JSON, else from the str(dict) attribute."""
    usage = parse_json(get_str(span.attributes, _META + "usage_metadata"))
    found = dig(usage, key)
    if isinstance(found, dict):
        return found
    text = get_str(span.attributes, f"gen_ai.usage.{key}")
    if text:
        value: Any = parse_json(text)
        if value is None:  # Python repr of a dict of ints
            value = parse_literal(text)
        if isinstance(value, dict):
            return value
    return {}


class LangSmith:
    name = "langsmith"

    def detect(self, span: Span) -> bool:
        return KIND_KEY in span.attributes

    def read(self, span: Span, trace: TraceView) -> SpanReading:
        attrs = span.attributes
        run_type = (get_str(attrs, KIND_KEY) or "").lower()
        node = node_of(span)
        in_langgraph = bool(node) or get_str(attrs, _META + "ls_integration") == "langgraph"
        warnings: list[str] = []
        kind = StepKind.OTHER
        rule = f"{KIND_KEY}={run_type}"
        if run_type == "llm":
            kind = StepKind.MODEL
        elif run_type == "tool":
            kind = StepKind.TOOL
        elif run_type == "chain":
            graph, why = is_graph(span, trace, node_of)
            if graph:
                kind, rule, in_langgraph = StepKind.GRAPH, f"{rule}, {why}", True

        metadata: dict[str, str] = {"span_type": run_type}
        name = span.name
        usage = None
        if kind is StepKind.MODEL:
            out_details = _details(span, "output_token_details")
            in_details = _details(span, "input_token_details")
            usage = ModelUsage(
                input_tokens=get_int(attrs, "gen_ai.usage.input_tokens"),
                output_tokens=get_int(attrs, "gen_ai.usage.output_tokens"),
                reasoning_tokens=to_int(out_details.get("reasoning")),
                cache_read_tokens=to_int(in_details.get("cache_read")),
                cache_write_tokens=to_int(in_details.get("cache_creation")),
            )
            put(metadata, "model_name", get_str(
                attrs, "gen_ai.response.model", "gen_ai.request.model", _META + "ls_model_name"))
            put(metadata, "model_provider", get_str(attrs, _META + "ls_provider", "gen_ai.system"))
        elif kind is StepKind.TOOL:
            name = get_str(attrs, "gen_ai.tool.name") or span.name
            put_tool_call_id(metadata, warnings, get_str(attrs, "gen_ai.tool.call.id"))

        copy_attrs(metadata, attrs, _COPIED)
        framework = "langgraph" if in_langgraph else "langchain"
        return SpanReading(self.name, kind, rule, name,
                           input=get_str(attrs, "gen_ai.prompt") or "",
                           output=get_str(attrs, "gen_ai.completion") or "",
                           error=span_error(span), usage=usage, metadata=metadata,
                           framework=framework, warnings=tuple(warnings))


LANGSMITH = LangSmith()
