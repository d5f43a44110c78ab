"""Generic OTel GenAI semantic conventions (`gen_ai.*`), the last specific convention tried.

Detected by `gen_ai.operation.name` (docs/conventions.md §1.1 row 7); vendor conventions that
also set it with non-standard values (LangSmith, Traceloop) are detected before this one.

- Content: `gen_ai.input.messages` / `gen_ai.output.messages` (JSON string or structured value),
  `gen_ai.system_instructions`, tool `gen_ai.tool.call.arguments` / `.result`; the opt-in event
  `gen_ai.client.inference.operation.details`; the deprecated `gen_ai.prompt` / `gen_ai.completion`
  attributes and `gen_ai.{system,user,assistant,tool}.message` / `gen_ai.choice` events. Events
  are span events, or log records naming the span (normalizers/log_events.py); each of input,
  output and system instructions is the span's, else the details event's, else the per-message
  events', so content sent both ways (`SPAN_AND_EVENT`) is read once.
- Usage: `gen_ai.usage.{input,output}_tokens` (deprecated `prompt_tokens`/`completion_tokens`),
  `gen_ai.usage.reasoning.output_tokens`, `gen_ai.usage.cache_{read,creation}.input_tokens` and
  the other spellings of the cache counts (`CACHE_READ_KEYS`, `CACHE_WRITE_KEYS`).
- First-chunk latency `gen_ai.response.time_to_first_chunk` is in **seconds**; the trajectory
  wants milliseconds.

Operations (docs/conventions.md §1.5): `invoke_workflow` is a graph; `invoke_agent` an agent (a
CLIENT one is a remote agent, `metadata.remote_agent`); `execute_tool`, MCP `tools/call`,
`retrieval` and the memory record operations are tools (`metadata.operation` says which); a
`plan` span is agent-internal: its model call is a model step marked `metadata.phase = "plan"`;
`create_agent`, `embeddings` and the memory store lifecycle are not steps.
"""

from __future__ import annotations

from typing import Any

from trajhub.normalizers.attrs import (
    copy_attrs,
    dumps,
    get_float,
    get_int,
    get_str,
    parse_json,
    put,
    put_tool_call_id,
)
from trajhub.normalizers.langgraph import is_create_agent_plumbing
from trajhub.normalizers.model import Attributes, Span
from trajhub.normalizers.reading import ModelUsage, SpanReading, StepKind, TraceView
from trajhub.normalizers.span_errors import span_error

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
#: the memory record operations (the GenAI registry's `gen_ai.memory.client` span): tool steps.
#: The store lifecycle (`create_memory_store`, `delete_memory_store`) is set-up, not a step.
MEMORY_OPERATIONS = frozenset(
    {"create_memory", "search_memory", "update_memory", "upsert_memory", "delete_memory"}
)
#: operations that are a step of their own: a plan's model call stops looking above these
_STEP_OPERATIONS = frozenset(
    {"invoke_agent", "invoke_workflow", "execute_tool", "retrieval", *MODEL_OPERATIONS,
     *MEMORY_OPERATIONS}
)
MCP_METHOD_KEY = "mcp.method.name"
_MCP_TOOL_CALL = "tools/call"
#: OTLP span kinds (opentelemetry.proto.trace.v1.Span.SpanKind)
_KIND_SERVER = 2
_KIND_CLIENT = 3
#: how far up a model span looks for the plan span it belongs to
_MAX_PLAN_DEPTH = 16
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


#: the content attributes of a model call, which the details event repeats
_CONTENT_KEYS = ("gen_ai.input.messages", "gen_ai.output.messages", "gen_ai.system_instructions")
#: event attributes that say who sent the event, not what it says
_NOT_CONTENT = ("gen_ai.system", "event.name")


def _content(span: Span) -> Attributes:
    """The model call's content attributes: each from the span, else from its details event.
    With `SPAN_AND_EVENT` an instrumentation writes both: the span's win, so nothing is read
    twice; an event (from a log record, normalizers/log_events.py) fills what the span lacks."""
    attrs = span.attributes
    if all(key in attrs for key in _CONTENT_KEYS):
        return attrs
    details = next((e.attributes for e in span.events if e.name == _DETAILS_EVENT), None)
    if details is None:
        return attrs
    return {**{k: details[k] for k in _CONTENT_KEYS if k in details}, **attrs}


def _event_content(span: Span) -> tuple[str, str]:
    """Input/output from the older per-message events (`gen_ai.user.message`, …,
    `gen_ai.choice`): their content is in their attributes, or in a log record's body, which
    becomes attributes (normalizers/log_events.py)."""
    inputs: list[dict[str, Any]] = []
    outputs: list[Any] = []
    for event in span.events:
        role = _MESSAGE_EVENTS.get(event.name)
        if role is None and event.name != "gen_ai.choice":
            continue
        body = {k: v for k, v in event.attributes.items() if not k.startswith(_NOT_CONTENT)}
        if role is not None:
            inputs.append({"role": role, **body})
        else:
            outputs.append(body)
    # the choices as a chat completion holds them, which the payload reading knows
    # (normalizers/payloads.py, `model_output`: the first choice's message)
    return (dumps(inputs) if inputs else "", dumps({"choices": outputs}) if outputs else "")


def _server_address(attrs: Attributes) -> str:
    """`server.address`, with `:server.port` when recorded; "" when absent."""
    address = get_str(attrs, "server.address") or ""
    port = get_str(attrs, "server.port")
    return f"{address}:{port}" if address and port else address


def _service_name(span: Span) -> str:
    return get_str(span.resource, "service.name") or ""


def _is_mcp_tool_call(span: Span) -> bool:
    return get_str(span.attributes, MCP_METHOD_KEY) == _MCP_TOOL_CALL


def _mcp_metadata(span: Span, trace: TraceView) -> dict[str, str]:
    """What an MCP `tools/call` span says about the server that ran the tool (docs/conventions.md
    §1.5): `mcp_server` is the MCP server's own name (the `service.name` of its SERVER span, a
    child of the client span when the server is traced too, or of this span when it is the
    server's), else the address the client called."""
    attrs = span.attributes
    metadata: dict[str, str] = {"mcp_method": _MCP_TOOL_CALL}
    address = _server_address(attrs)
    if address:
        metadata["server_address"] = address
    server = ""
    if span.kind == _KIND_SERVER:
        server = _service_name(span)
    else:
        for child in trace.children(span):
            if child.kind == _KIND_SERVER and _is_mcp_tool_call(child):
                server = _service_name(child)
                break
    if server or address:
        metadata["mcp_server"] = server or address
    copy_attrs(metadata, attrs, {"mcp_session_id": "mcp.session.id",
                                 "mcp_protocol_version": "mcp.protocol.version"})
    return metadata


def _mcp_server_side_of_client(span: Span, trace: TraceView) -> bool:
    """An MCP SERVER span under the client span of the same call: the call is the client's
    step, the server span is its far end (counting both would count one call twice)."""
    parent = trace.parent(span)
    return (
        span.kind == _KIND_SERVER
        and parent is not None
        and parent.kind != _KIND_SERVER
        and _is_mcp_tool_call(parent)
    )


def _in_plan(span: Span, trace: TraceView) -> Span | None:
    """The `plan` span a model call runs inside (the GenAI agent spans: "the LLM call that
    generates the plan SHOULD be a child of the plan span"), looking up through spans that are
    not steps of their own; None when it is not part of a plan."""
    current = trace.parent(span)
    for _ in range(_MAX_PLAN_DEPTH):
        if current is None:
            return None
        operation = get_str(current.attributes, OPERATION_KEY)
        if operation == "plan":
            return current
        if operation in _STEP_OPERATIONS:
            return None
        current = trace.parent(current)
    return None


def _has_model_call_below(span: Span, trace: TraceView) -> bool:
    stack = list(trace.children(span))
    seen = 0
    while stack and seen < 10_000:
        child = stack.pop()
        seen += 1
        if get_str(child.attributes, OPERATION_KEY) in MODEL_OPERATIONS:
            return True
        stack.extend(trace.children(child))
    return False


def _wraps_one_agent(span: Span, trace: TraceView) -> bool:
    """An `invoke_agent` span whose one and only child is another `invoke_agent` span, and that
    records no usage of its own: a wrapper around that agent, not an agent. langgraph-supervisor
    runs each member through a `call_agent` function node, which opentelemetry-instrumentation-
    genai-langchain reports as `invoke_agent call_agent` around the member's own `invoke_agent`
    (docs/conventions.md §1.5); counted as an agent, every member would run twice, nested."""
    children = trace.children(span)
    return (
        len(children) == 1
        and get_str(children[0].attributes, OPERATION_KEY) == "invoke_agent"
        and not _records_usage(span.attributes)
    )


def _records_usage(attrs: Attributes) -> bool:
    return get_int(attrs, "gen_ai.usage.input_tokens", "gen_ai.usage.output_tokens") is not None


def _object_text(fields: dict[str, Any]) -> str:
    """The present fields as one JSON object (a tool step's input is its arguments object)."""
    present = {k: v for k, v in fields.items() if v not in (None, "")}
    return dumps(present) if present else ""


def _structured_text(attrs: Attributes, key: str) -> str:
    value = _json_value(attrs, key)
    if value is None:
        return ""
    return value if isinstance(value, str) else dumps(value)


def _retrieval(attrs: Attributes) -> tuple[str, str, str, dict[str, str]]:
    """A `retrieval` span (GenAI `gen_ai.retrieval.client`): name, input, output, metadata."""
    source = get_str(attrs, "gen_ai.data_source.id") or ""
    input_text = _object_text({
        "query": get_str(attrs, "gen_ai.retrieval.query.text"),
        "top_k": get_int(attrs, "gen_ai.request.top_k"),
    })
    output_text = _structured_text(attrs, "gen_ai.retrieval.documents")
    metadata = {"operation": "retrieval"}
    if source:
        metadata["data_source_id"] = source
    # the span name the registry gives it: `{gen_ai.operation.name} {gen_ai.data_source.id}`
    return (f"retrieval {source}" if source else "retrieval"), input_text, output_text, metadata


def _memory(operation: str, attrs: Attributes) -> tuple[str, str, str, dict[str, str]]:
    """A memory record operation (GenAI `gen_ai.memory.client`): name, input, output, metadata.
    Records are what `search_memory` returns and what the other operations write."""
    records = _json_value(attrs, "gen_ai.memory.records")
    query = get_str(attrs, "gen_ai.memory.query.text")
    record_id = get_str(attrs, "gen_ai.memory.record.id")
    writes = operation != "search_memory"
    input_text = _object_text({
        "query": query,
        "record_id": record_id,
        "records": records if writes else None,
    })
    output_text = ""
    if not writes and records is not None:
        output_text = records if isinstance(records, str) else dumps(records)
    metadata = {"operation": operation}
    copy_attrs(metadata, attrs, {"memory_store_id": "gen_ai.memory.store.id",
                                 "memory_record_id": "gen_ai.memory.record.id",
                                 "memory_record_count": "gen_ai.memory.record.count"})
    # the span name the registry gives it: `{gen_ai.operation.name}`
    return operation, input_text, output_text, metadata


class GenAI:
    name = "genai"

    def detect(self, span: Span) -> bool:
        # MCP spans set `gen_ai.operation.name` only for tool calls, and only as "Recommended":
        # an MCP `tools/call` span without it is still a tool call
        return OPERATION_KEY in span.attributes or MCP_METHOD_KEY in span.attributes

    def _kind(self, span: Span, operation: str, trace: TraceView) -> tuple[StepKind, str]:
        """The step kind and the rule that decided it (docs/conventions.md §1.5)."""
        attrs = span.attributes
        rule = f"{OPERATION_KEY}={operation}" if operation else ""
        if MCP_METHOD_KEY in attrs:
            method = get_str(attrs, MCP_METHOD_KEY) or ""
            mcp_rule = f"{MCP_METHOD_KEY}={method}" + (f", {rule}" if rule else "")
            if method != _MCP_TOOL_CALL:
                return StepKind.OTHER, f"{mcp_rule}: an MCP exchange that is not a tool call"
            if _mcp_server_side_of_client(span, trace):
                return StepKind.OTHER, f"{mcp_rule}: the server side of its client's tool call"
            return StepKind.TOOL, mcp_rule
        if operation in MODEL_OPERATIONS:
            return StepKind.MODEL, rule
        if operation in ("execute_tool", "retrieval") or operation in MEMORY_OPERATIONS:
            return StepKind.TOOL, rule
        if operation == "invoke_agent":
            agent = get_str(attrs, "gen_ai.agent.name") or span.name.removeprefix("invoke_agent ")
            if is_create_agent_plumbing(agent):
                return StepKind.OTHER, (f"{rule}: a create_agent middleware hook or routing "
                                        "function, part of its agent")
            if _wraps_one_agent(span, trace):
                return StepKind.OTHER, (f"{rule}: a wrapper whose only child is the agent it "
                                        "invokes, not an activation of its own")
            return StepKind.AGENT, rule
        if operation == "invoke_workflow":
            return StepKind.GRAPH, rule
        if operation == "plan":
            if _records_usage(attrs) and not _has_model_call_below(span, trace):
                return StepKind.MODEL, f"{rule}: a plan that records its own model usage"
            return StepKind.OTHER, f"{rule}: agent-internal; its model call is marked phase=plan"
        return StepKind.OTHER, rule

    def read(self, span: Span, trace: TraceView) -> SpanReading:
        attrs = span.attributes
        operation = get_str(attrs, OPERATION_KEY) or ""
        kind, rule = self._kind(span, operation, trace)

        warnings: list[str] = []
        metadata: dict[str, str] = {"span_type": operation or get_str(attrs, MCP_METHOD_KEY) or ""}
        name = span.name
        usage = None
        if kind is StepKind.TOOL and operation == "retrieval":
            name, input_text, output_text, extra = _retrieval(attrs)
            metadata.update(extra)
        elif kind is StepKind.TOOL and operation in MEMORY_OPERATIONS:
            name, input_text, output_text, extra = _memory(operation, attrs)
            metadata.update(extra)
        elif kind is StepKind.TOOL:
            input_text = get_str(attrs, "gen_ai.tool.call.arguments") or ""
            output_text = get_str(attrs, "gen_ai.tool.call.result") or ""
            name = (
                get_str(attrs, "gen_ai.tool.name")
                or span.name.removeprefix("execute_tool ").removeprefix(f"{_MCP_TOOL_CALL} ")
            )
            if _is_mcp_tool_call(span):
                metadata.update(_mcp_metadata(span, trace))
            put_tool_call_id(metadata, warnings, get_str(attrs, "gen_ai.tool.call.id"))
        else:
            content = _content(span)
            input_text = input_messages(content) or get_str(attrs, "gen_ai.prompt") or ""
            output_text = output_messages(content) or get_str(attrs, "gen_ai.completion") or ""
            if not input_text or not output_text:
                event_input, event_output = _event_content(span)
                input_text, output_text = input_text or event_input, output_text or event_output
        if kind is StepKind.MODEL:
            usage = model_usage(attrs)
            put(metadata, "model_name", model_name(attrs))
            plan = span if operation == "plan" else _in_plan(span, trace)
            if plan is not None:
                metadata["phase"] = "plan"
                metadata["plan_span_id"] = plan.span_id
        if kind is StepKind.AGENT:
            name = get_str(attrs, "gen_ai.agent.name") or span.name
            if span.kind == _KIND_CLIENT:
                # "Describes GenAI agent invocation over a remote service" (the GenAI agent
                # spans); whether its inner steps are missing is decided over the kept tree
                # (normalizers/multiagent.py)
                metadata["remote_agent"] = "true"
                put(metadata, "server_address", _server_address(attrs))
                if any(MCP_METHOD_KEY not in c.attributes and "a2a.method.name" in c.attributes
                       for c in trace.children(span)):
                    metadata["remote_protocol"] = "a2a"
                # the remote agent's own usage report: its model calls are not in this trace, so
                # the count is kept where a reader sees it, not added to the run's totals
                for key, attr in (("remote_input_tokens", "gen_ai.usage.input_tokens"),
                                  ("remote_output_tokens", "gen_ai.usage.output_tokens")):
                    put(metadata, key, get_int(attrs, attr))
        elif kind is StepKind.GRAPH:
            name = get_str(attrs, "gen_ai.workflow.name") or span.name
        provider = get_str(attrs, "gen_ai.provider.name", "gen_ai.system")
        if provider and kind is StepKind.MODEL:
            metadata["model_provider"] = provider
        copy_attrs(metadata, attrs, {"session_id": "gen_ai.conversation.id",
                                     "agent_id": "gen_ai.agent.id"})
        return SpanReading(self.name, kind, rule, name, input=input_text, output=output_text,
                           error=span_error(span), usage=usage, metadata=metadata,
                           warnings=tuple(warnings))


GENAI = GenAI()
