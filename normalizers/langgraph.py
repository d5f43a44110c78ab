"""LangGraph structure, shared by the OTel conventions that trace LangChain/LangGraph runs.

Names are unreliable (OpenInference calls any run with "agent" in its name AGENT; a compiled graph
may have any name), so a graph is recognised by structure: LangGraph stamps every run inside a
node with `metadata.langgraph_node = <node>`. A span whose direct children carry a node name
different from its own (or which has none itself) is the run that executes those nodes: a graph,
or a compiled subgraph running as a node of an outer graph.
"""

from __future__ import annotations

from collections.abc import Callable

from trajhub.normalizers.attrs import dig, parse_json
from trajhub.normalizers.model import Span
from trajhub.normalizers.reading import TraceView

#: the hooks LangChain v1's create_agent runs as nodes named `<middleware>.<hook>`, and the
#: wrappers it traces as `<middleware>.<wrapper>`
_MIDDLEWARE_HOOKS = frozenset({
    "before_agent", "before_model", "after_model", "after_agent",
    "wrap_model_call", "awrap_model_call", "wrap_tool_call", "awrap_tool_call",
})
#: create_agent's routing functions (its conditional edges)
_CREATE_AGENT_ROUTES = frozenset({"model_to_tools", "model_to_model", "tools_to_model"})


def is_create_agent_plumbing(name: str) -> bool:
    """A middleware hook or routing function of LangChain v1's create_agent, by its run name:
    part of the agent that runs it, never an agent of its own (docs/trajectory-rules.md §7)."""
    if name in _CREATE_AGENT_ROUTES:
        return True
    owner, _, hook = name.rpartition(".")
    return bool(owner) and hook in _MIDDLEWARE_HOOKS


#: reads the LangGraph node name a convention recorded on a span ("" when none)
NodeOf = Callable[[Span], str]


def runs_graph_nodes(span: Span, trace: TraceView, node_of: NodeOf) -> bool:
    """True when `span` is a LangGraph graph run (see module doc)."""
    own = node_of(span)
    for child in trace.children(span):
        node = node_of(child)
        if node and node != own:
            return True
    return False


def is_graph(span: Span, trace: TraceView, node_of: NodeOf) -> tuple[bool, str]:
    """(is a graph, why): structure first; the name `LangGraph` (what `create_react_agent` and an
    unnamed StateGraph are called) also counts, for a graph run that has not run a node yet."""
    if runs_graph_nodes(span, trace, node_of):
        return True, "children are LangGraph nodes"
    if span.name == "LangGraph":
        return True, "name is LangGraph"
    return False, ""


def tool_call_id_from_tool_message(output: str) -> str:
    """The id LangGraph's ToolNode put on the ToolMessage a tool returned: plain, in LangChain's
    `lc` constructor form (`kwargs`, as @cozeloop/langchain serialises it), or under `data`; each
    also as the last message of a returned `Command`'s update, and inside a callback's
    `{"output": ...}` envelope (OpenInference JS records a tool's output
    as `{"output": <ToolMessage in lc form>}`)."""
    value = parse_json(output)
    if isinstance(value, dict) and set(value) == {"output"}:
        value = value["output"]
    update = value.get("update") if isinstance(value, dict) else None
    if isinstance(update, dict) and isinstance(update.get("messages"), list) and update["messages"]:
        # a Command the tool returned (deepagents' write_todos and task): its update carries
        # the ToolMessage
        value = update["messages"][-1]
    for path in (("data", "tool_call_id"), ("tool_call_id",), ("kwargs", "tool_call_id")):
        found = dig(value, *path)
        if isinstance(found, str) and found:
            return found
    return ""


def tool_call_id_from_node_input(node_input: object, tool_name: str) -> str:
    """The id of the call to `tool_name` that a LangGraph `tools` node received.

    Prebuilt ToolNode v2 runs one node per call with input
    `{"__type": "tool_call_with_context", "tool_call": {name, args, id}}` (Traceloop wraps it in
    `{"inputs": ...}`). Otherwise the node got the graph state: the last message with
    `tool_calls` is the model's request, and a call of that name is ours when it is the only one
    (parallel calls of the same tool cannot be told apart by name)."""
    if isinstance(node_input, dict) and isinstance(node_input.get("inputs"), dict):
        node_input = node_input["inputs"]
    if not isinstance(node_input, dict):
        return ""
    call = node_input.get("tool_call")
    if isinstance(call, dict) and call.get("name") == tool_name:
        found = call.get("id")
        return found if isinstance(found, str) else ""
    messages = node_input.get("messages")
    if not isinstance(messages, list):
        return ""
    for message in reversed(messages):
        if not isinstance(message, dict):
            continue
        body = message.get("kwargs") or message.get("data") or message
        calls = body.get("tool_calls") if isinstance(body, dict) else None
        if isinstance(calls, list) and calls:
            ids = [c.get("id") for c in calls if isinstance(c, dict) and c.get("name") == tool_name]
            return ids[0] if len(ids) == 1 and isinstance(ids[0], str) else ""
    return ""
