"""OpenInference (Arize/Phoenix) spans, as emitted by openinference-instrumentation-langchain.

Detected by `openinference.span.kind` (docs/conventions.md §1.1 row 2). Peculiarities handled here:

- AGENT is a *name* heuristic (`"agent" in run.name.lower()`): the prebuilt ReAct node `agent` is
  AGENT though it is just a node of its graph, and a hand-built graph compiled as
  `weather_math_agent` is AGENT though it is a graph. So an AGENT or CHAIN is classified by
  LangGraph structure first (`normalizers.langgraph`); only an AGENT that is not part of a
  LangGraph run at all (e.g. a LangChain AgentExecutor) stays an agent.
- CHAIN spans whose input has `messages` also carry `llm.input_messages.*`, so those keys say
  nothing about the kind; model content is reassembled from them only on LLM spans.
- Tool spans carry no tool-call id; it is inside the output ToolMessage JSON.
- OpenInference JS (@arizeai/openinference-instrumentation-langchain 4.x) fills
  `llm.output_messages.N.message.tool_calls` only from a message's `additional_kwargs.tool_calls`
  (OpenAI's wire form), which a LangChain 1.x message built from `tool_calls` does not have. Its
  `output.value` (LangChain's generations) still holds them, so a model step whose indexed output
  has no tool calls takes its output from there when that has some. Likewise its indexed input
  messages carry neither the history's tool calls nor the tool messages' call ids, which
  `input.value` has: a model step whose indexed input lacks them takes its input from there. The
  same holds for a message whose content is a list of blocks (LangChain.js `createAgent`'s system
  prompt): the indexed message has its role only.
- OpenInference JS 4.x records `prompt_details.cache_read` and `completion_details.reasoning` but
  not the cache write (`usage_metadata.input_token_details.cache_creation`); a token count the
  attributes lack is read from the `usage_metadata` of the message in `output.value`.
- No first-token latency attribute exists.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any

from trajhub.normalizers.attrs import (
    copy_attrs,
    dig,
    dumps,
    get_int,
    get_str,
    parse_json,
    put,
    put_tool_call_id,
    unflatten,
)
from trajhub.normalizers.langgraph import (
    is_graph,
    tool_call_id_from_node_input,
    tool_call_id_from_tool_message,
)
from trajhub.normalizers.model import Span
from trajhub.normalizers.payloads import model_input, model_output
from trajhub.normalizers.reading import ModelUsage, SpanReading, StepKind, TraceView
from trajhub.normalizers.span_errors import span_error

KIND_KEY = "openinference.span.kind"


def _metadata_json(span: Span) -> dict[str, Any]:
    return _parse_metadata(get_str(span.attributes, "metadata") or "")


@lru_cache(maxsize=4096)
def _parse_metadata(text: str) -> dict[str, Any]:
    """Cached: every span's metadata is read several times per derivation (node, step, graph
    detection of its parent). Callers must not mutate the result."""
    value = parse_json(text)
    return value if isinstance(value, dict) else {}


def node_of(span: Span) -> str:
    node = _metadata_json(span).get("langgraph_node")
    return node if isinstance(node, str) else ""


def messages(span: Span, prefix: str) -> list[dict[str, Any]] | None:
    """`prefix.N.message.*` as a list of plain message dicts (`message.` and `tool_call.`
    wrappers removed), or None when the span has none."""
    tree = unflatten(span.attributes, prefix)
    if not isinstance(tree, list):
        return None
    out: list[dict[str, Any]] = []
    for item in tree:
        message = dig(item, "message")
        if not isinstance(message, dict):
            continue
        message = dict(message)
        calls = message.get("tool_calls")
        if isinstance(calls, list):
            message["tool_calls"] = [
                c["tool_call"] if isinstance(c, dict) and "tool_call" in c else c for c in calls
            ]
        out.append(message)
    return out or None


def _usage_metadata(output_value: str) -> dict[str, Any]:
    """LangChain's `usage_metadata` of the first generation's message in an LLM span's
    `output.value` (`{"generations": [[{"message": ...}]]}`, the message plain or in `lc` form)."""
    first = dig(parse_json(output_value), "generations", 0, 0, "message")
    if isinstance(first, dict) and isinstance(first.get("kwargs"), dict):
        first = first["kwargs"]
    found = first.get("usage_metadata") if isinstance(first, dict) else None
    return found if isinstance(found, dict) else {}


def _links_tools(messages: object) -> bool:
    """Whether chat messages carry tool calls or tool-call ids."""
    return isinstance(messages, list) and any(
        isinstance(m, dict) and (m.get("tool_calls") or m.get("tool_call_id")) for m in messages
    )


def _lacks_content(indexed: list[dict[str, Any]], serialised: object) -> bool:
    """Whether the indexed messages leave out a content the serialised call has: OpenInference
    JS writes no `message.content` for content made of blocks (the system prompt LangChain.js's
    `createAgent` sends as `[{"type": "text", ...}]`), only its role."""
    if not isinstance(serialised, list) or len(serialised) != len(indexed):
        return False
    return any(
        not m.get("content") and isinstance(s, dict) and s.get("content")
        for m, s in zip(indexed, serialised, strict=True)
    )


def _has_tool_calls(canonical_output: str) -> bool:
    message = parse_json(canonical_output)
    return isinstance(message, dict) and bool(message.get("tool_calls"))


class OpenInference:
    name = "openinference"

    def detect(self, span: Span) -> bool:
        return KIND_KEY in span.attributes

    def read(self, span: Span, trace: TraceView) -> SpanReading:
        attrs = span.attributes
        raw_kind = (get_str(attrs, KIND_KEY) or "").upper()
        meta_json = _metadata_json(span)
        node = meta_json.get("langgraph_node")
        in_langgraph = isinstance(node, str) or meta_json.get("ls_integration") == "langgraph"
        warnings: list[str] = []

        kind = StepKind.OTHER
        rule = f"{KIND_KEY}={raw_kind}"
        if raw_kind == "LLM":
            kind = StepKind.MODEL
        elif raw_kind == "TOOL":
            kind = StepKind.TOOL
        elif raw_kind == "AGENT" and get_str(attrs, "tool.name"):
            # a tool run whose name says "agent" (a handoff tool, transfer_to_weather_agent):
            # the name heuristic made it AGENT, but the run is a tool call
            kind, rule = StepKind.TOOL, f"{rule} with tool.name (a tool run, name heuristic)"
        elif raw_kind in ("AGENT", "CHAIN"):
            graph, why = is_graph(span, trace, node_of)
            if graph:
                kind, rule = StepKind.GRAPH, f"{rule}, {why}"
                in_langgraph = True
            elif raw_kind == "AGENT" and isinstance(node, str) and node:
                rule = f"{rule} is the LangGraph node {node!r} (name heuristic), not an agent"
            elif raw_kind == "AGENT":
                kind = StepKind.AGENT

        name = span.name
        if kind is StepKind.TOOL:
            name = get_str(attrs, "tool.name") or span.name

        input_text = get_str(attrs, "input.value") or ""
        output_text = get_str(attrs, "output.value") or ""
        usage = None
        metadata: dict[str, str] = {"span_type": raw_kind}
        if kind is StepKind.MODEL:
            # the indexed messages are the clean conversation; input.value is LangChain's
            # serialised call
            in_messages = messages(span, "llm.input_messages")
            out_messages = messages(span, "llm.output_messages")
            serialised = parse_json(model_input(input_text))
            if in_messages is not None and (
                _links_tools(in_messages) or not _links_tools(serialised)
            ) and not _lacks_content(in_messages, serialised):
                input_text = dumps(in_messages)
            if out_messages is not None and (
                any(m.get("tool_calls") for m in out_messages)
                or not _has_tool_calls(model_output(output_text))
            ):
                output_text = dumps(out_messages)
            recorded = _usage_metadata(get_str(attrs, "output.value") or "")

            def count(key: str, *path: str) -> int | None:
                value = get_int(attrs, key)
                if value is None:
                    found = dig(recorded, *path)
                    exact = isinstance(found, int) and not isinstance(found, bool)
                    value = found if exact else None
                return value

            usage = ModelUsage(
                input_tokens=count("llm.token_count.prompt", "input_tokens"),
                output_tokens=count("llm.token_count.completion", "output_tokens"),
                reasoning_tokens=count(
                    "llm.token_count.completion_details.reasoning",
                    "output_token_details",
                    "reasoning",
                ),
                cache_read_tokens=count(
                    "llm.token_count.prompt_details.cache_read",
                    "input_token_details",
                    "cache_read",
                ),
                cache_write_tokens=count(
                    "llm.token_count.prompt_details.cache_write",
                    "input_token_details",
                    "cache_creation",
                ),
            )
            put(metadata, "model_name", get_str(
                attrs, "llm.response.model_name", "llm.model_name", "llm.request.model_name"))
            put(metadata, "model_provider", get_str(attrs, "llm.provider", "llm.system"))
        elif kind is StepKind.TOOL:
            call_id = get_str(attrs, "tool.id") or tool_call_id_from_tool_message(output_text)
            parent = trace.parent(span)
            if not call_id and parent is not None:
                # a failed tool returns no ToolMessage; its `tools` node input has the call
                call_id = tool_call_id_from_node_input(
                    parse_json(get_str(parent.attributes, "input.value")), name
                )
            put_tool_call_id(metadata, warnings, call_id)

        if isinstance(node, str) and node:
            metadata["langgraph_node"] = node
        step = meta_json.get("langgraph_step")
        if isinstance(step, (int, str)) and not isinstance(step, bool) and str(step):
            metadata["langgraph_step"] = str(step)
        # the task id ("<node>:<id>"): tells parallel tasks of one node in one step apart
        task = meta_json.get("langgraph_checkpoint_ns")
        if isinstance(task, str) and task:
            metadata["langgraph_checkpoint_ns"] = task
        copy_attrs(metadata, attrs, {"session_id": "session.id", "user_id": "user.id"})

        framework = ""
        if in_langgraph:
            framework = "langgraph"
        elif "langchain" in span.scope_name:
            framework = "langchain"
        return SpanReading(self.name, kind, rule, name, input=input_text, output=output_text,
                           error=span_error(span), usage=usage, metadata=metadata,
                           framework=framework, warnings=tuple(warnings))


OPENINFERENCE = OpenInference()
