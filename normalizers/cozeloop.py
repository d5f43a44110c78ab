"""Coze Loop conventions: native ingest spans, and the `cozeloop.*` OTLP spans of JS clients.

Two producers, one vocabulary (docs/coze-loop.md):

- **native** (`CozeLoopNative`): `UploadSpan` JSON posted to `/v1/loop/traces/ingest` by
  cozeloop-go (Eino's `callbacks/cozeloop`) and by the cozeloop-python LangChain/LangGraph
  callback. They reach us as `Span` objects with `span.cozeloop` set (`sources.span_from_cozeloop`).
- **OTel** (`CozeLoopOtel`): OTLP spans from `@cozeloop/langchain` (JS), recognised by the
  `cozeloop.span_type` attribute.

Both map `span_type` model/tool/graph/agent to the step kinds and drop everything else (chain,
prompt, Eino Lambda/ToolsNode/Chain, ...), as Coze Loop does (§5.3), with three deliberate
differences: `graph` stays a graph (Coze Loop renames it agent), Eino ADK's pre-v0.2.2 `Agent` is an
agent (Coze Loop drops it: its match is case-sensitive), and a LangGraph compiled under another
name — which both callbacks report as a plain `chain` — is still recognised as the graph when it is
the run's root (see `_is_unnamed_langgraph_root`).

`tool_call_id_from_calls` is shared with `normalizers.apmplus`; values are coerced by
`normalizers.coerce`.
"""

from __future__ import annotations

import json
import weakref
from collections.abc import Callable, Mapping
from typing import Any, Final

from trajhub.normalizers.attrs import copy_attrs, first_present_int, parse_json, parse_literal, put
from trajhub.normalizers.coerce import to_float, to_int, to_str
from trajhub.normalizers.genai import CACHE_READ_KEYS, CACHE_WRITE_KEYS
from trajhub.normalizers.langgraph import tool_call_id_from_tool_message
from trajhub.normalizers.model import STATUS_ERROR, AttributeValue, Span
from trajhub.normalizers.reading import (
    Convention,
    ErrorInfo,
    ModelUsage,
    SpanReading,
    StepKind,
    TraceView,
)
from trajhub.normalizers.span_errors import split_error

#: How far we walk up a parent chain or down a subtree; a malformed trace (a cycle, or a span
#: that claims itself as parent) must not hang the normalizer.
MAX_HOPS: Final = 1000


def tool_call_id_from_calls(message: object, tool_name: str, arguments: str) -> str:
    """The id of the tool call in an assistant message whose function is `tool_name` with these
    `arguments`; "" when there is no single such call. Used to recover a tool span's call id from
    its Eino ToolsNode parent, whose input is the assistant message that asked for the tools."""
    if not isinstance(message, Mapping):
        return ""
    calls = message.get("tool_calls")
    if not isinstance(calls, list):
        return ""
    by_name: list[str] = []
    exact: list[str] = []
    for call in calls:
        if not isinstance(call, Mapping):
            continue
        function = call.get("function")
        call_id = call.get("id")
        if not isinstance(function, Mapping) or not isinstance(call_id, str):
            continue
        if function.get("name") != tool_name:
            continue
        by_name.append(call_id)
        if _same_arguments(function.get("arguments"), arguments):
            exact.append(call_id)
    if len(exact) == 1:
        return exact[0]
    if len(by_name) == 1:
        return by_name[0]
    return ""


def _same_arguments(left: object, right: str) -> bool:
    if not isinstance(left, str):
        return False
    if left == right:
        return True
    parsed_left, parsed_right = parse_json(left), parse_json(right)
    return parsed_left is not None and parsed_left == parsed_right


# --------------------------------------------------------------------------------------------
# Classification shared by both Coze Loop conventions
# --------------------------------------------------------------------------------------------

_KINDS: Final[Mapping[str, StepKind]] = {
    "model": StepKind.MODEL,
    "tool": StepKind.TOOL,
    "graph": StepKind.GRAPH,
    "agent": StepKind.AGENT,
    # eino-ext callbacks/cozeloop v0.2.0-v0.2.1 typed ADK agents "Agent"; Coze Loop drops them
    # (case-sensitive match) but they are the same ADK agent spans as the later "agent".
    "Agent": StepKind.AGENT,
    # An Eino compose.Workflow is a graph run entry like compose.Graph; cozeloop-go passes its
    # component string through unchanged.
    "Workflow": StepKind.GRAPH,
}

#: Eino components, for native spans that lost their span_type (never seen from the SDK, but
#: the tag is the same information and costs nothing to honour).
_EINO_COMPONENT_KINDS: Final[Mapping[str, StepKind]] = {
    "ChatModel": StepKind.MODEL,
    "AgenticModel": StepKind.MODEL,
    "Tool": StepKind.TOOL,
    "Graph": StepKind.GRAPH,
    "Workflow": StepKind.GRAPH,
    "Agent": StepKind.AGENT,
}


def _span_type(span: Span) -> str:
    """The Coze Loop span_type of either flavour ("" for a span of another convention)."""
    if span.cozeloop is not None:
        return span.cozeloop.span_type
    value = span.attributes.get("cozeloop.span_type")
    return value if isinstance(value, str) else ""


#: trace view -> {root span id: is an unnamed LangGraph root}; entries vanish with their view.
_ROOT_MEMO: weakref.WeakKeyDictionary[TraceView, dict[str, bool]] = weakref.WeakKeyDictionary()


def _is_unnamed_langgraph_root(span: Span, trace: TraceView) -> bool:
    """A LangGraph run compiled with a name of its own (not "LangGraph").

    Both LangChain callbacks type a graph run `graph` only when its run name is exactly
    "LangGraph"; `StateGraph(...).compile(name="weather_math_agent")` arrives as a `chain`. The
    structural signature of a graph run is that it does nothing itself: every child is a node
    run (`chain`), and the model and tool calls happen inside those. A plain LangChain root
    (`prompt | model`, AgentExecutor) has model, prompt or tool runs as direct children. Only a
    root qualifies: inside a run, nested chains with only chain children are common
    (RunnableSequence > RunnableSequence) and a nested named subgraph cannot be told from them.
    """
    if _span_type(span) != "chain" or trace.parent(span) is not None:
        return False
    # Every span of a run asks about its root (for its framework): remember the answer per
    # trace view, or a root with thousands of node runs makes reading a trace quadratic.
    try:
        memo = _ROOT_MEMO.setdefault(trace, {})
    except TypeError:  # a view that cannot be weakly referenced: just compute
        memo = {}
    known = memo.get(span.span_id)
    if known is None:
        children = trace.children(span)
        known = bool(children) and all(_span_type(child) == "chain" for child in children)
        memo[span.span_id] = known
    return known


def _langchain_framework(span: Span, trace: TraceView) -> str:
    """The framework of a LangChain-callback span: "langgraph" when it belongs to a LangGraph
    run (it or an ancestor is the graph), else "langchain"."""
    current: Span | None = span
    top = span
    for _ in range(MAX_HOPS):
        if current is None:
            break
        if _span_type(current) == "graph":
            return "langgraph"
        top = current
        current = trace.parent(current)
    return "langgraph" if _is_unnamed_langgraph_root(top, trace) else "langchain"


#: the node of LangChain v1's create_agent that calls the chat model
CREATE_AGENT_MODEL_NODE: Final = "model"


def _is_nested_graph_run(span: Span, trace: TraceView) -> bool:
    """A compiled LangGraph graph running inside another run: a sub-agent added as a node
    (`create_react_agent(..., name="weather_agent")`, members of langgraph-supervisor and
    langgraph-swarm) or an agent invoked from inside a tool. Both callbacks report it as a plain
    `chain` named after the graph.

    A graph run does nothing itself: its children are node runs (all `chain`), and the calls
    happen inside those. LangGraph.js also reports the graph's `__start__` node. Python hides it,
    so the depth of the calls decides: a node runs its tools directly (node > tool) and its
    model through a chain (node > RunnableSequence > model); a graph has one more level
    (graph > node > tool, graph > node > chain > model). A node wrapping a graph (call_agent in
    langgraph-supervisor, the node named like the sub-agent) has one level more still.
    LangChain v1's `create_agent` (and deepagents, built on it) calls its model directly from its
    node `model` (graph > model > model): a node of that name with a model run under it is the
    graph's (a node named `model` cannot be the RunnableSequence inside a node)."""
    if _span_type(span) != "chain" or trace.parent(span) is None:
        return False
    children = trace.children(span)
    if not children or any(_span_type(child) != "chain" for child in children):
        return False
    if any(child.name == "__start__" for child in children):
        return True
    for child in children:
        for grandchild in trace.children(child):
            kind = _span_type(grandchild)
            if kind == "tool" or (kind == "model" and child.name == CREATE_AGENT_MODEL_NODE):
                return True
            if kind in ("model", "graph", "agent"):
                return False  # a node calling its model directly
            if any(_span_type(g) == "model" for g in trace.children(grandchild)):
                return True
    return False


def _native_kind(span: Span) -> StepKind:
    """The kind a native span's span_type names (OTHER for chain, Lambda, ToolsNode, ...)."""
    return _KINDS.get(_span_type(span), StepKind.OTHER)


def inside_adk_agent(span: Span, trace: TraceView, kind_of: Callable[[Span], StepKind]) -> bool:
    """An Eino graph that an ADK agent runs as its own implementation (a ChatModelAgent runs a
    ReAct graph inside a Chain named after it): the nearest kept ancestor is the agent. Its
    model and tool calls are the agent's own steps (docs/trajectory-rules.md §7), not a separate
    activation's."""
    current = trace.parent(span)
    for _ in range(MAX_HOPS):
        if current is None:
            return False
        kind = kind_of(current)
        if kind is not StepKind.OTHER:
            return kind is StepKind.AGENT
        current = trace.parent(current)
    return False


def _classify(span_type: str, span: Span, trace: TraceView, prefix: str) -> tuple[StepKind, str]:
    kind = _KINDS.get(span_type)
    if kind is not None:
        return kind, f"{prefix}={span_type}"
    if _is_unnamed_langgraph_root(span, trace):
        return StepKind.GRAPH, f"{prefix}=chain root whose children are all chain runs (LangGraph)"
    if _is_nested_graph_run(span, trace):
        return StepKind.AGENT, f"{prefix}=chain that runs LangGraph nodes (a sub-agent)"
    return StepKind.OTHER, f"{prefix}={span_type or '(empty)'}"


# --------------------------------------------------------------------------------------------
# Native ingest spans (cozeloop-go / Eino, cozeloop-python LangChain callback)
# --------------------------------------------------------------------------------------------

#: String tags worth keeping for evaluators (the schema has no field for them).
_NATIVE_METADATA_TAGS: Final = (
    "model_name",
    "model_provider",
    "call_options",
    "tool_call_id",
    "agent_name",
    "agent_run_id",
    "run_mode",
    "thread_id",
    "user_id",
    "message_id",
    "prompt_key",
    "prompt_version",
    "prompt_provider",
    "eino_run_info_component",
    "eino_run_info_name",
    "eino_run_info_type",
)


def _runtime(span: Span) -> Mapping[str, Any]:
    """The `runtime` JSON (language, library, ...): system tag first, the user tag as fallback."""
    assert span.cozeloop is not None
    for tags in (span.cozeloop.system_tags_string, span.cozeloop.tags_string):
        raw = tags.get("runtime")
        parsed = parse_json(raw) if isinstance(raw, str) else None
        if isinstance(parsed, Mapping):
            return parsed
    return {}


class CozeLoopNative:
    """Coze Loop native `UploadSpan`s (cozeloop-go / Eino and cozeloop-python LangChain)."""

    name = "cozeloop"

    def detect(self, span: Span) -> bool:
        return span.cozeloop is not None

    def read(self, span: Span, trace: TraceView) -> SpanReading:
        native = span.cozeloop
        if native is None:  # detect() said no; read anyway rather than raise
            return SpanReading(self.name, StepKind.OTHER, "cozeloop: not a native span", span.name,
                               warnings=("cozeloop: span has no native Coze Loop fields",))
        warnings: list[str] = []
        runtime = _runtime(span)
        language = to_str(runtime.get("language"))
        library = to_str(runtime.get("library"))
        is_eino = library == "eino" or "eino_run_info_component" in native.tags_string

        span_type = native.span_type
        if not span_type:
            component = to_str(native.tags_string.get("eino_run_info_component"))
            fallback = _EINO_COMPONENT_KINDS.get(component)
            if fallback is not None:
                kind, rule = fallback, f"eino_run_info_component={component}"
            else:
                kind, rule = _classify(span_type, span, trace, "cozeloop.span_type")
            warnings.append("cozeloop: span has no span_type")
        else:
            kind, rule = _classify(span_type, span, trace, "cozeloop.span_type")

        if is_eino and kind is StepKind.GRAPH and inside_adk_agent(span, trace, _native_kind):
            kind, rule = StepKind.OTHER, f"{rule} run by its ADK agent (part of the agent)"
        if is_eino:
            framework = "eino"
        elif library == "langchain":
            framework = _langchain_framework(span, trace)
        else:
            framework = ""

        name = span.name or to_str(native.tags_string.get("eino_run_info_name"))
        if kind is StepKind.TOOL:
            # cozeloop-python copies the tool's `serialized` dict into tags: `name` is the tool.
            name = span.name or to_str(native.tags_string.get("name"))

        input_text = native.input
        output_text = native.output
        if kind is StepKind.TOOL and language == "python" and library == "langchain":
            input_text = _python_repr_to_json(input_text)
        if is_eino:
            input_text, output_text = _eino_unstream(input_text), _eino_unstream(output_text)

        metadata: dict[str, str] = {
            "convention": self.name,
            "span_type": span_type,
        }
        put(metadata, "framework", framework)
        put(metadata, "runtime_language", language)
        put(metadata, "runtime_library", library)
        for key in _NATIVE_METADATA_TAGS:
            put(metadata, key, native.tags_string.get(key))
        tags = native.system_tags_string
        cut_off = to_str(tags.get("cut_off") or native.tags_string.get("cut_off"))
        if cut_off and cut_off not in ("[]", "null"):
            # cozeloop-go cuts tag values over its size limit and lists their keys in the
            # system tag `cut_off` (internal/trace/span.go setCutOffTag)
            metadata["payload_truncated"] = "true"
            put(metadata, "payload_truncated_fields", cut_off)
        put(metadata, "object_storage", native.object_storage)
        stream = span.attributes.get("stream")
        if stream is not None:
            # Eino sends a bool, the Python callback the strings "true"/"false".
            put(metadata, "stream", stream)
        if kind is StepKind.TOOL and "tool_call_id" not in metadata and library == "langchain":
            parent = trace.parent(span)
            if parent is not None and parent.cozeloop is not None:
                put(
                    metadata,
                    "tool_call_id",
                    _langchain_tool_call_id(parent.cozeloop.input, name, input_text),
                )
        if kind is StepKind.TOOL and "tool_call_id" not in metadata and is_eino:
            # Eino sets tool_call_id only on success; the ToolsNode parent's input is the
            # assistant message that asked for the call, which names it.
            parent = trace.parent(span)
            if parent is not None and parent.cozeloop is not None:
                put(
                    metadata,
                    "tool_call_id",
                    tool_call_id_from_calls(parse_json(parent.cozeloop.input), name, native.input),
                )

        error = self._error(span, kind, is_eino, trace)
        usage = self._usage(span, language, library, warnings) if kind is StepKind.MODEL else None
        return SpanReading(self.name, kind, rule, name, input=input_text, output=output_text,
                           error=error, usage=usage, metadata=metadata, framework=framework,
                           warnings=tuple(warnings))

    @staticmethod
    def _error(span: Span, kind: StepKind, is_eino: bool, trace: TraceView) -> ErrorInfo | None:
        native = span.cozeloop
        assert native is not None
        message, rest = split_error(to_str(native.tags_string.get("error")))
        trace_text = to_str(native.tags_string.get("error_trace"))
        # cozeloop-python records traceback.format_exc() even where no exception is being
        # handled (tool errors caught by ToolNode), which yields this placeholder.
        if trace_text.strip() == "NoneType: None":
            trace_text = ""
        traceback = trace_text or rest
        if native.status_code != 0:
            return ErrorInfo(
                code=native.status_code,
                message=message or f"status_code {native.status_code}",
                traceback=traceback,
            )
        if message:
            # Both SDKs set status_code -1 whenever an error tag is set; honour the tag if a
            # producer did not.
            return ErrorInfo(code=-1, message=message, traceback=traceback)
        if kind is StepKind.AGENT and is_eino:
            return _adk_agent_error(span, trace)
        return None

    @staticmethod
    def _usage(span: Span, language: str, library: str, warnings: list[str]) -> ModelUsage:
        native = span.cozeloop
        assert native is not None
        tags = span.attributes

        def count(key: str) -> int | None:
            return first_present_int(tags, key, warnings=warnings, label="cozeloop: tag ")

        latency_ms: float | None = None
        first_resp_at = to_int(tags.get("start_time_first_resp"))
        start_us = span.start_ns // 1000
        if first_resp_at is not None and first_resp_at > start_us > 0:
            # An absolute µs timestamp; cozeloop-go recomputes latency_first_resp from it.
            latency_ms = (first_resp_at - start_us) / 1000
        elif (latency := count("latency_first_resp")) is not None:
            if language == "python" and library == "langchain":
                # The cozeloop-python LangChain callback writes milliseconds (Coze Loop itself
                # reads them as µs and shows a TTFT 1000x too small).
                latency_ms = float(latency)
            else:
                latency_ms = latency / 1000  # cozeloop-go / Eino: µs, as the SDK spec says
        return ModelUsage(
            input_tokens=count("input_tokens"),
            output_tokens=count("output_tokens"),
            reasoning_tokens=count("reasoning_tokens"),
            cache_read_tokens=count("input_cached_tokens"),
            cache_write_tokens=count("input_creation_cached_tokens"),
            latency_first_resp_ms=latency_ms,
        )


def _eino_unstream(text: str) -> str:
    """The value an Eino component streamed, as one value.

    For a component run in stream mode (a graph or ToolsNode of `Stream()`), eino-ext's cozeloop
    callback records the chunks it saw as `{"stream": [chunk, ...]}` (callbacks/cozeloop
    data_parser.go, no concat function for the type; tests/fixtures/eino-real/streaming). One
    chunk is the value itself; message chunks are concatenated as Eino's ConcatMessages does
    (content joined, tool calls merged by index, the last response_meta). Anything else stays as
    sent."""
    if not text.startswith('{"stream":'):
        return text
    value = parse_json(text)
    if not isinstance(value, Mapping) or set(value) != {"stream"}:
        return text
    chunks = value["stream"]
    if not isinstance(chunks, list) or not chunks:
        return text
    if len(chunks) == 1:
        return json.dumps(chunks[0], ensure_ascii=False, separators=(",", ":"))
    if not all(isinstance(c, Mapping) and ("role" in c or "content" in c) for c in chunks):
        return text
    merged: dict[str, Any] = {}
    content: list[str] = []
    calls: dict[int, dict[str, Any]] = {}
    for chunk in chunks:
        for key, item in chunk.items():
            if key == "content":
                content.append(to_str(item))
            elif key == "tool_calls" and isinstance(item, list):
                for position, call in enumerate(item):
                    if isinstance(call, Mapping):
                        _merge_tool_call(calls, position, call)
            elif key == "role":
                merged.setdefault("role", item)
            elif item not in (None, "", {}, []):
                merged[key] = item
    merged["content"] = "".join(content)
    if calls:
        merged["tool_calls"] = [calls[i] for i in sorted(calls)]
    return json.dumps(merged, ensure_ascii=False, separators=(",", ":"))


def _merge_tool_call(calls: dict[int, dict[str, Any]], position: int, call: Mapping[str, Any]
                     ) -> None:
    """One streamed tool-call fragment into the call of its index: ids, type and name from the
    first fragment that has them, arguments concatenated."""
    index = to_int(call.get("index"))
    slot = calls.setdefault(position if index is None else index, {})
    for key in ("index", "id", "type"):
        if call.get(key) not in (None, "") and key not in slot:
            slot[key] = call[key]
    function = call.get("function")
    if isinstance(function, Mapping):
        target = slot.setdefault("function", {"name": "", "arguments": ""})
        if function.get("name") and not target["name"]:
            target["name"] = function["name"]
        target["arguments"] += to_str(function.get("arguments"))


def _adk_agent_error(span: Span, trace: TraceView) -> ErrorInfo | None:
    """Why an Eino ADK agent failed. Its span never carries an error status: the error is the
    `error` of the last event in its output (a JSON list of AgentEvents). When the output lacks
    it, the agent's run Chain (a direct child named like the agent) carries the error."""
    native = span.cozeloop
    assert native is not None
    events = parse_json(native.output)
    if isinstance(events, list):
        for event in reversed(events):
            if isinstance(event, Mapping):
                text = to_str(event.get("error"))
                if text:
                    message, rest = split_error(text)
                    return ErrorInfo(code=-1, message=message, traceback=rest)
    for child in trace.children(span):
        child_native = child.cozeloop
        if child_native is not None and child_native.status_code != 0:
            message, rest = split_error(to_str(child_native.tags_string.get("error")))
            if message:
                return ErrorInfo(code=child_native.status_code, message=message, traceback=rest)
    return None


def _python_repr_to_json(text: str) -> str:
    """cozeloop-python records a tool's input as `str(dict)` ("{'city': 'Paris'}"); make it the
    JSON the other instrumentations give. Anything that is not a plain literal stays as sent."""
    stripped = text.strip()
    if not stripped or stripped[0] not in "{[" or parse_json(stripped) is not None:
        return text
    value = parse_literal(stripped)
    if value is None:
        return text
    try:
        return json.dumps(value, ensure_ascii=False)
    except (TypeError, ValueError):
        return text


def _langchain_tool_call_id(parent_input: str, tool_name: str, arguments: str) -> str:
    """The tool call id of a LangChain tool run, read from its LangGraph `tools` node's input.

    Neither callback records the id on the tool span (JS only inside a successful ToolMessage).
    With prebuilt ToolNode + Send the node's input is `{"__type": "tool_call_with_context",
    "tool_call": {name, args, id}}`; otherwise it is the graph state, whose last AI message with
    tool calls lists them (`tool_calls` or, in `lc` constructor form, `kwargs.tool_calls`)."""
    value = parse_json(parent_input)
    wanted = parse_json(arguments)
    if isinstance(value, list):
        # LangChain v1 create_agent sends each call to its `tools` node on its own; the Python
        # callback records that node's input as the list of calls it got
        return _call_id_among(value, tool_name, wanted)
    if not isinstance(value, Mapping):
        return ""
    call = value.get("tool_call")
    if isinstance(call, Mapping):
        call_id = call.get("id")
        if call.get("name") == tool_name and isinstance(call_id, str):
            return call_id
        return ""
    messages = value.get("messages")
    if not isinstance(messages, list):
        return ""
    for message in reversed(messages[-MAX_HOPS:]):
        if not isinstance(message, Mapping):
            continue
        kwargs = message.get("kwargs")
        calls = message.get("tool_calls")
        if calls is None and isinstance(kwargs, Mapping):
            calls = kwargs.get("tool_calls")
        if not isinstance(calls, list) or not calls:
            continue
        return _call_id_among(calls, tool_name, wanted)
    return ""


def _call_id_among(calls: list[Any], tool_name: str, wanted: object) -> str:
    """The id of the one call of `tool_name` (with these arguments, if several) in `calls`."""
    named = [c for c in calls if isinstance(c, Mapping) and c.get("name") == tool_name]
    exact = [c for c in named if wanted is not None and c.get("args") == wanted]
    for group in (exact, named):
        if len(group) == 1 and isinstance(group[0].get("id"), str):
            return str(group[0]["id"])
    return ""


# --------------------------------------------------------------------------------------------
# @cozeloop/langchain (JS) OTLP spans
# --------------------------------------------------------------------------------------------


def _first_exception(span: Span) -> Mapping[str, AttributeValue] | None:
    for event in span.events:
        if event.name == "exception":
            return event.attributes
    return None


#: metadata copied as is from the attributes of @cozeloop/langchain's spans
_OTEL_COPIED = {
    "langchain_run_id": "langchain-run-id",
    "session_id": "session.id",
    "user_id": "user.id",
    "message_id": "messaging.message.id",
    "prompt_key": "cozeloop.prompt_key",
    "prompt_version": "cozeloop.prompt_version",
}


class CozeLoopOtel:
    """`cozeloop.*` OTLP spans (@cozeloop/langchain for LangChain.js / LangGraph.js)."""

    name = "cozeloop_otel"

    def detect(self, span: Span) -> bool:
        return span.cozeloop is None and isinstance(span.attributes.get("cozeloop.span_type"), str)

    def read(self, span: Span, trace: TraceView) -> SpanReading:
        attrs = span.attributes
        warnings: list[str] = []
        span_type = to_str(attrs.get("cozeloop.span_type"))
        kind, rule = _classify(span_type, span, trace, "cozeloop.span_type")
        framework = (
            _langchain_framework(span, trace)
            if "langchain-run-id" in attrs or span_type in ("chain", "graph")
            else ""
        )
        output = to_str(attrs.get("cozeloop.output"))

        metadata: dict[str, str] = {"convention": self.name, "span_type": span_type}
        put(metadata, "framework", framework)
        copy_attrs(metadata, attrs, _OTEL_COPIED)
        if "cozeloop.stream" in attrs:
            put(metadata, "stream", attrs.get("cozeloop.stream"))

        usage: ModelUsage | None = None
        if kind is StepKind.MODEL:
            usage = self._usage(span, warnings)
            # gen_ai.request.model is the chat model's class name (llm.id[-1]); the output's
            # model_name, when the provider reported one, is the real model.
            class_name = to_str(
                attrs.get("gen_ai.request.model") or attrs.get("gen_ai.response.model")
            )
            parsed = parse_json(output)
            reported = to_str(parsed.get("model_name")) if isinstance(parsed, Mapping) else ""
            put(metadata, "model_name", reported or class_name)
            put(metadata, "model_class", class_name)
            put(metadata, "model_provider", attrs.get("gen_ai.system"))
        elif kind is StepKind.TOOL:
            call_id = tool_call_id_from_tool_message(output)
            parent = trace.parent(span)
            if not call_id and parent is not None:
                # a failed tool has no ToolMessage; its `tools` node input names the call
                call_id = _langchain_tool_call_id(
                    to_str(parent.attributes.get("cozeloop.input")),
                    span.name,
                    to_str(attrs.get("cozeloop.input")),
                )
            put(metadata, "tool_call_id", call_id)

        return SpanReading(self.name, kind, rule, span.name,
                           input=to_str(attrs.get("cozeloop.input")), output=output,
                           error=self._error(span), usage=usage, metadata=metadata,
                           framework=framework, warnings=tuple(warnings))

    @staticmethod
    def _error(span: Span) -> ErrorInfo | None:
        attrs = span.attributes
        exception = _first_exception(span)
        candidates = (
            to_str(attrs.get("error.message")),
            span.status_message,
            to_str(exception.get("exception.message")) if exception is not None else "",
            to_str(attrs.get("error.type")),
        )
        text = next((c for c in candidates if c.strip()), "")
        failed = span.status_code == STATUS_ERROR or bool(text) or exception is not None
        if not failed:
            return None
        message, rest = split_error(text)
        stack = to_str(exception.get("exception.stacktrace")) if exception is not None else ""
        declared = to_int(attrs.get("cozeloop.status_code"))
        return ErrorInfo(
            code=declared if declared else -1,
            message=message or "error",
            traceback=stack or rest,
        )

    @staticmethod
    def _usage(span: Span, warnings: list[str]) -> ModelUsage:
        attrs = span.attributes

        def count(*keys: str) -> int | None:
            return first_present_int(attrs, *keys, warnings=warnings, label="cozeloop_otel: ")

        latency_ms: float | None = None
        if "cozeloop.start_time_first_resp" in attrs:
            # @cozeloop/langchain: milliseconds from the model run's start to its first token.
            latency_ms = to_float(attrs["cozeloop.start_time_first_resp"])
            if latency_ms is None:
                warnings.append("cozeloop_otel: cozeloop.start_time_first_resp is not a number")
        elif "cozeloop.time_to_first_token" in attrs:
            # Coze Loop's own OTLP key: an absolute µs timestamp of the first token.
            first = to_int(attrs["cozeloop.time_to_first_token"])
            start_us = span.start_ns // 1000
            if first is not None and first >= start_us > 0:
                latency_ms = (first - start_us) / 1000
            else:
                warnings.append("cozeloop_otel: cozeloop.time_to_first_token is unusable")
        return ModelUsage(
            input_tokens=count("gen_ai.usage.input_tokens", "gen_ai.usage.prompt_tokens"),
            output_tokens=count("gen_ai.usage.output_tokens", "gen_ai.usage.completion_tokens"),
            reasoning_tokens=count("gen_ai.usage.reasoning.output_tokens"),
            cache_read_tokens=count(*CACHE_READ_KEYS),
            cache_write_tokens=count(*CACHE_WRITE_KEYS),
            latency_first_resp_ms=latency_ms,
        )


NATIVE: Final = CozeLoopNative()
OTEL: Final = CozeLoopOtel()

#: Native first. The registry tries the native convention before every other one (only native
#: spans have `span.cozeloop`), and the OTel one after OpenInference, LangSmith and Traceloop.
CONVENTIONS: tuple[Convention, ...] = (NATIVE, OTEL)
