"""OpenLLMetry / Traceloop spans (opentelemetry-instrumentation-langchain 0.62.x).

Detected by any `traceloop.*` attribute, or by the instrumentation scope
`opentelemetry.instrumentation.langchain`: the `invoke_agent <graph>` wrapper span and the
model span of some versions carry no `traceloop.*` key (docs/conventions.md §1.1 row 4).

- Kinds: `traceloop.span.kind` = workflow/task/agent/tool; model spans have none but
  `gen_ai.operation.name` chat/text_completion (older: `llm.request.type`).
- Duplicate roots (§1.4 pitfall 7): every `Pregel.stream` is wrapped in an `invoke_agent <graph>`
  span whose only child is the `<graph>.workflow` chain span of the same run. The wrapper is the
  graph (it is the run's entry point, and the root); the workflow span under it is dropped, and
  the wrapper borrows its input/output (the wrapper records none).
- `create_agent` spans (graph construction, a separate trace) and tasks are other.
- Tool content is the callback's `{input_str, tags, metadata, ...}` / `{output: <ToolMessage>}`
  envelope; the argument string and the ToolMessage content are taken out of it.
- Traceloop JS (@traceloop/instrumentation-langchain 0.27) records a tool's input as
  `{"args": ["<argument JSON>"]}` and its output as the bare ToolMessage (or the handoff's
  `Command`), and names the tool span after the tool's class (`DynamicStructuredTool`): the
  tool's name is the one on the ToolMessage it returned (for a handoff, on the tool message its
  Command adds). A failed tool returns none: its name and call id are those of the call with its
  arguments in the state the innermost chain run around it received (the model's request).
- Traceloop JS starts every span as a child of whatever span is active, ignoring LangChain's
  parent run: under the SDK's `withWorkflow` (`<name>.workflow`, the run's root) every span of
  the run is a direct child of that span; without it, every span is a trace of its own. So its
  chain runs (`workflow <class>`: graphs, nodes and runnables alike, named by class) give no
  structure and are not steps; the run's steps are its model and tool calls, in start order.
  The SDK never ends the workflow span of a run that raised (it ends it only when the wrapped
  promise resolves), so such a trace has no root span: the outermost chain run, the earliest,
  becomes the root, and carries the run's error.
- No reasoning tokens are recorded by the LangChain instrumentation (other traceloop packages use
  `gen_ai.usage.reasoning_tokens`, read when present). Successful spans stay UNSET; a failed task
  may only say `gen_ai.task.status=failure`.
"""

from __future__ import annotations

import json
import weakref
from typing import Any

from trajhub.normalizers.attrs import (
    copy_attrs,
    dig,
    get_int,
    get_str,
    parse_json,
    put,
    put_tool_call_id,
)
from trajhub.normalizers.coerce import to_str
from trajhub.normalizers.genai import MODEL_OPERATIONS, input_messages, model_name, model_usage
from trajhub.normalizers.langgraph import runs_graph_nodes, tool_call_id_from_node_input
from trajhub.normalizers.model import Span
from trajhub.normalizers.payloads import message_text, returned_error
from trajhub.normalizers.reading import ErrorInfo, SpanReading, StepKind, TraceView
from trajhub.normalizers.span_errors import one_line, span_error

SCOPES = ("opentelemetry.instrumentation.langchain", "opentelemetry.instrumentation.langgraph")
#: Traceloop JS's LangChain instrumentation (its spans' parents are the active span, not the run's)
JS_SCOPE = "@traceloop/instrumentation-langchain"
#: Traceloop's Node SDK (`withWorkflow` / `withTask` / ... spans)
SDK_SCOPE = "@traceloop/node-server-sdk"
#: what the SDK records as the input of a wrapped function called without arguments
_NO_ARGUMENTS: dict[str, Any] = {"args": [], "kwargs": {}}
_KIND = "traceloop.span.kind"
_OP = "gen_ai.operation.name"
_PROPS = "traceloop.association.properties."
#: metadata copied as is from the association property of the same name: the LangGraph task id
#: ("<node>:<id>", which tells parallel tasks of one node in one step apart), and the run's
#: session, user and thread
_COPIED = {key: _PROPS + key for key in (
    "langgraph_checkpoint_ns", "session_id", "user_id", "thread_id")}


def node_of(span: Span) -> str:
    return get_str(span.attributes, _PROPS + "langgraph_node") or ""


def _is_wrapper(span: Span) -> bool:
    """The `invoke_agent <graph>` span around Pregel.stream: op invoke_agent, no traceloop kind."""
    attrs = span.attributes
    return get_str(attrs, _OP) == "invoke_agent" and _KIND not in attrs


def _entity_input(span: Span) -> str:
    return get_str(span.attributes, "traceloop.entity.input", "gen_ai.task.input") or ""


def _entity_output(span: Span) -> str:
    return get_str(span.attributes, "traceloop.entity.output", "gen_ai.task.output") or ""


def _tool_input(text: str) -> str:
    """The tool's argument string out of the callback envelope (Python-repr dict text)."""
    parsed = parse_json(text)
    value = dig(parsed, "input_str")
    if not isinstance(value, str):
        args = dig(parsed, "args")  # Traceloop JS: {"args": [<the argument string>]}
        value = args[0] if isinstance(args, list) and len(args) == 1 else None
    return value if isinstance(value, str) else text


def _tool_message(text: str) -> Any:
    """The ToolMessage kwargs of `{"output": <lc-serialised ToolMessage>}` (Python) or of the
    bare lc-serialised ToolMessage (JS), or None."""
    value = parse_json(text)
    output = dig(value, "output") if isinstance(value, dict) and "output" in value else value
    kwargs = dig(output, "kwargs")
    if isinstance(kwargs, dict) and dig(output, "id", -1) == "ToolMessage":
        return kwargs
    return None


#: what Traceloop JS names a tool span after: the class of a tool made with LangChain's `tool()`
_TOOL_CLASSES = frozenset({"DynamicStructuredTool", "DynamicTool", "StructuredTool", "Tool"})


def _command_tool_message(text: str) -> Any:
    """The kwargs of the last tool message of a `Command` a tool returned (a handoff in JS; in
    Python, inside the `{"output": ...}` envelope: deepagents' write_todos and task), or None."""
    value = parse_json(text)
    if isinstance(value, dict) and "output" in value and set(value) <= {"output", "kwargs"}:
        value = value["output"]
    messages = dig(value, "update", "messages")
    for message in reversed(messages if isinstance(messages, list) else []):
        kwargs = dig(message, "kwargs")
        if dig(message, "id", -1) == "ToolMessage" and isinstance(kwargs, dict):
            return kwargs
    return None


def _ai_messages(state: object) -> list[Any]:
    """The lc-serialised AI messages of a LangGraph state `{"messages": [...]}`, in order."""
    messages = dig(state, "messages")
    out = []
    for message in messages if isinstance(messages, list) else []:
        kwargs = dig(message, "kwargs")
        if dig(message, "id", -1) == "AIMessage" and isinstance(kwargs, dict):
            out.append(kwargs)
    return out


def _requested_call(span: Span, trace: TraceView, arguments: str) -> tuple[str, str]:
    """(name, call id) of the tool call a Traceloop JS tool span ran, from the state of the
    innermost chain run around it (the ToolNode's input: the model's request is its last AI
    message with tool calls), matched by arguments; ("", "") unless exactly one call matches."""
    wanted = parse_json(arguments)
    for chain in _js_chains_around(span, trace):
        for message in reversed(_ai_messages(parse_json(_entity_input(chain)))):
            calls = message.get("tool_calls")
            if not isinstance(calls, list) or not calls:
                continue
            matching = [c for c in calls if isinstance(c, dict) and c.get("args") == wanted]
            if len(matching) != 1:
                return "", ""
            return to_str(matching[0].get("name")), to_str(matching[0].get("id"))
    return "", ""


_AI_MESSAGES = frozenset({"AIMessage", "AIMessageChunk"})


#: trace view -> its Traceloop JS chain runs, latest start first (read once per trace, not once
#: per model or tool span); entries vanish with their view
_CHAINS: weakref.WeakKeyDictionary[TraceView, list[Span]] = weakref.WeakKeyDictionary()


def _js_chains_around(span: Span, trace: TraceView) -> list[Span]:
    """The Traceloop JS chain runs whose time spans `span`'s, innermost (latest) first: its
    runs, as far as a flat trace can tell."""
    chains = _CHAINS.get(trace)
    if chains is None:
        chains = sorted(
            (s for s in trace.all_spans()
             if s.scope_name == JS_SCOPE and get_str(s.attributes, _KIND) == "workflow"),
            key=lambda s: (s.start_ns, -s.end_ns),
            reverse=True,
        )
        _CHAINS[trace] = chains
    return [
        s for s in chains
        if s is not span and s.start_ns <= span.start_ns and s.end_ns >= span.end_ns
    ]


def _part_texts(messages: object, skip_role: str) -> list[str]:
    """The text of each OTel GenAI message (`gen_ai.input.messages` form) but `skip_role`'s."""
    out = []
    for message in messages if isinstance(messages, list) else []:
        parts = dig(message, "parts")
        if dig(message, "role") == skip_role or not isinstance(parts, list):
            continue
        out.append("".join(to_str(dig(p, "content")) for p in parts if dig(p, "type") == "text"))
    return out


def _returned_message(value: Any) -> Any:
    """The one message a chain run returned: the message itself, a node's update
    `{"messages": [message]}`, or that update inside the `Command` LangChain.js's `createAgent`
    model node returns, recorded as `{"output": [Command]}`."""
    output = dig(value, "output")
    if isinstance(output, list) and len(output) == 1 and dig(output[0], "lg_name") == "Command":
        value = dig(output[0], "update")
    messages = dig(value, "messages")
    if isinstance(messages, list) and len(messages) == 1:
        value = messages[0]
    return value


def _answer(span: Span, trace: TraceView) -> str:
    """The lc-serialised AI message a Traceloop JS model span answered (it records only the
    answer's text, not its tool calls): the output of the innermost chain run around it that
    got the model's messages (its system prompt aside) and returned one AI message with the
    model's text (the agent's model call: the message, or a node update of it); "" if none."""
    answers = _part_texts(parse_json(get_str(span.attributes, "gen_ai.output.messages")), "")
    if len(answers) != 1:
        return ""
    text = answers[0]
    asked = _part_texts(parse_json(get_str(span.attributes, "gen_ai.input.messages")), "system")
    for chain in _js_chains_around(span, trace):
        state = dig(parse_json(_entity_input(chain)), "messages")
        got = [
            to_str(dig(m, "kwargs", "content"))
            for m in (state if isinstance(state, list) else [])
            if dig(m, "id", -1) != "SystemMessage"
        ]
        value = _returned_message(parse_json(_entity_output(chain)))
        kwargs = dig(value, "kwargs")
        if (
            got == asked
            and isinstance(kwargs, dict)
            and dig(value, "id", -1) in _AI_MESSAGES
            and to_str(kwargs.get("content")) == text
        ):
            return json.dumps(value, ensure_ascii=False)
    return ""


def _outermost_js_run(span: Span, trace: TraceView) -> Span | None:
    """The one Traceloop JS chain run under an SDK entity span that spans all its other
    children (the graph run it wraps), or None (no such run, or several runs side by side)."""
    children = trace.children(span)
    chains = [
        c for c in children
        if c.scope_name == JS_SCOPE and get_str(c.attributes, _KIND) == "workflow"
    ]
    if not chains:
        return None
    outer = min(chains, key=lambda c: (c.start_ns, -c.end_ns))
    inside = all(outer.start_ns <= c.start_ns and c.end_ns <= outer.end_ns for c in children)
    return outer if inside else None


class Traceloop:
    name = "traceloop"

    def detect(self, span: Span) -> bool:
        if span.scope_name in SCOPES:
            return True
        return any(key.startswith("traceloop.") for key in span.attributes)

    def read(self, span: Span, trace: TraceView) -> SpanReading:
        attrs = span.attributes
        tl_kind = (get_str(attrs, _KIND) or "").lower()
        operation = get_str(attrs, _OP) or ""
        request_type = get_str(attrs, "llm.request.type") or ""
        parent = trace.parent(span)
        warnings: list[str] = []
        metadata: dict[str, str] = {"span_type": tl_kind or operation or request_type}

        kind = StepKind.OTHER
        js_chain = span.scope_name == JS_SCOPE and tl_kind == "workflow"
        if js_chain:
            rule = (f"{_KIND}=workflow from Traceloop JS: a chain run hung under the active span, "
                    "not under its parent run (no structure)")
        elif tl_kind == "tool" or operation == "execute_tool":
            kind, rule = StepKind.TOOL, f"{_KIND}=tool" if tl_kind else f"{_OP}=execute_tool"
        elif operation in MODEL_OPERATIONS or request_type in ("chat", "completion"):
            kind = StepKind.MODEL
            rule = f"{_OP}={operation}" if operation else f"llm.request.type={request_type}"
        elif tl_kind == "agent":
            kind, rule = StepKind.AGENT, f"{_KIND}=agent"
        elif tl_kind == "workflow":
            if parent is not None and _is_wrapper(parent):
                rule = f"{_KIND}=workflow under its invoke_agent wrapper (same graph run)"
            else:
                kind, rule = StepKind.GRAPH, f"{_KIND}=workflow"
        elif _is_wrapper(span):
            if any(get_str(c.attributes, _KIND) == "workflow" for c in trace.children(span)):
                kind, rule = StepKind.GRAPH, f"{_OP}=invoke_agent wrapper of a graph run"
            else:
                # a nested graph's wrapper is empty: its run is the task span beside it
                rule = f"{_OP}=invoke_agent wrapper without its workflow (a nested graph)"
        elif tl_kind == "task" and runs_graph_nodes(span, trace, node_of):
            kind, rule = StepKind.GRAPH, f"{_KIND}=task whose children are LangGraph nodes"
        else:
            rule = f"{_KIND}={tl_kind}" if tl_kind else f"{_OP}={operation}"

        name = span.name
        input_text = _entity_input(span)
        output_text = _entity_output(span)
        usage = None
        returned_failure: str | None = None
        if kind is StepKind.MODEL:
            # `<ModelClass>.chat`: the step is the model class, as in every other convention
            name = span.name.removesuffix(".chat").removesuffix(".completion") or span.name
            input_text = input_messages(attrs) or get_str(attrs, "gen_ai.prompt") or input_text
            output_text = (
                get_str(attrs, "gen_ai.output.messages", "gen_ai.completion") or output_text
            )
            if span.scope_name == JS_SCOPE:
                output_text = _answer(span, trace) or output_text
            usage = model_usage(attrs)
            put(metadata, "model_name", model_name(attrs))
            put(metadata, "model_provider", get_str(
                attrs, _PROPS + "ls_provider", "gen_ai.provider.name", "gen_ai.system"))
        elif kind is StepKind.TOOL:
            name = get_str(
                attrs, "gen_ai.tool.name", "traceloop.entity.name"
            ) or span.name.removeprefix("execute_tool ")
            raw_in = get_str(attrs, "gen_ai.tool.call.arguments") or input_text
            raw_out = get_str(attrs, "gen_ai.tool.call.result") or output_text
            input_text = _tool_input(raw_in)
            message = _tool_message(raw_out)
            returned = message if message is not None else _command_tool_message(raw_out)
            requested = ("", "")
            if span.scope_name == JS_SCOPE and returned is None:
                requested = _requested_call(span, trace, input_text)
            if name in _TOOL_CLASSES:
                named = to_str(returned.get("name")) if returned is not None else requested[0]
                name = named or name
            output_text = message_text(message) if message is not None else raw_out
            returned_failure = returned_error(raw_out)
            call_id = get_str(attrs, "gen_ai.tool.call.id") or (
                to_str(returned.get("tool_call_id")) if returned is not None else requested[1]
            )
            if not call_id and parent is not None:
                # a failed tool returns no ToolMessage; its `tools` task input has the call
                call_id = tool_call_id_from_node_input(parse_json(_entity_input(parent)), name)
            put_tool_call_id(metadata, warnings, call_id)
        elif span.scope_name == SDK_SCOPE and kind is StepKind.GRAPH:
            # `withWorkflow(config, () => graph.invoke(...))`: the SDK records the wrapped
            # function's arguments (none) and its resolved value in a serialisation of its own;
            # the graph run it wraps has the run's input and output
            outer = _outermost_js_run(span, trace)
            if outer is not None and parse_json(input_text) == _NO_ARGUMENTS:
                input_text = _entity_input(outer) or input_text
                output_text = _entity_output(outer) or output_text
        elif _is_wrapper(span) and kind is StepKind.GRAPH:
            name = get_str(attrs, "gen_ai.agent.name") or span.name.removeprefix("invoke_agent ")
            # the wrapper records no content; its workflow child has the run's input/output
            for child in trace.children(span):
                if get_str(child.attributes, _KIND) == "workflow":
                    input_text = input_text or _entity_input(child)
                    output_text = output_text or _entity_output(child)
                    break
        elif kind is StepKind.GRAPH and tl_kind == "task":
            name = get_str(attrs, "gen_ai.task.name", "traceloop.entity.name") or span.name
        elif kind is StepKind.GRAPH or js_chain:
            name = get_str(attrs, "traceloop.workflow.name", "traceloop.entity.name") or span.name

        error = span_error(span)
        if error is None and get_str(attrs, "gen_ai.task.status") == "failure":
            error = ErrorInfo(code=-1, message="task failed")
        if error is None and returned_failure is not None:
            # the tool's error was returned to the model, not raised (trajectory-rules §4)
            error = ErrorInfo(code=-1, message=one_line(returned_failure))

        put(metadata, "langgraph_node", attrs.get(_PROPS + "langgraph_node"))
        put(metadata, "langgraph_step", get_int(attrs, _PROPS + "langgraph_step"))
        copy_attrs(metadata, attrs, _COPIED)
        if "thread_id" not in metadata:
            put(metadata, "thread_id", attrs.get("gen_ai.conversation.id"))

        in_langgraph = (
            "langgraph_node" in metadata
            or get_str(attrs, _PROPS + "ls_integration") == "langgraph"
            or get_str(attrs, "gen_ai.provider.name") == "langgraph"
        )
        framework = "langgraph" if in_langgraph else "langchain"
        return SpanReading(self.name, kind, rule, name, input=input_text, output=output_text,
                           error=error, usage=usage, metadata=metadata, framework=framework,
                           warnings=tuple(warnings))


TRACELOOP = Traceloop()
