"""The operations of the current OTel GenAI conventions map to steps (docs/conventions.md §1.5).

Every span here is built by hand the way the GenAI semantic conventions describe it (the agent
spans, the MCP and A2A conventions, the retrieval and memory client spans): operation names,
span names, span kinds and attributes as the spec text gives them, with the spec's own example
values where it has some. Expected values come from the spec and docs/conventions.md §1.5, not
from trajhub's output.
"""

from __future__ import annotations

import json
from dataclasses import replace

import pytest

from tests.normalize_spans import span as _span
from trajhub.normalizers import derive
from trajhub.normalizers.model import STATUS_ERROR, AttributeValue, Span
from trajhub.normalizers.trajectory import AgentStep, Step, Trajectory

INTERNAL, SERVER, CLIENT = 1, 2, 3
OP = "gen_ai.operation.name"


def span(
    span_id: str,
    parent: str,
    name: str,
    start_ms: float,
    end_ms: float,
    attrs: dict[str, AttributeValue],
    *,
    kind: int = INTERNAL,
    service: str = "app",
    status: int = 0,
) -> Span:
    built = _span(span_id, parent, name, start_ms, end_ms, attrs, status=status)
    return replace(built, kind=kind, resource={"service.name": service})


def agent(span_id: str, parent: str, name: str, start: float, end: float, *,
          kind: int = INTERNAL, **extra: AttributeValue) -> Span:
    return span(span_id, parent, f"invoke_agent {name}", start, end,
                {OP: "invoke_agent", "gen_ai.agent.name": name,
                 "gen_ai.provider.name": "openai", **extra}, kind=kind)


def chat(span_id: str, parent: str, start: float, end: float, tokens: tuple[int, int] = (10, 5),
         **extra: AttributeValue) -> Span:
    return span(span_id, parent, "chat gpt-4", start, end,
                {OP: "chat", "gen_ai.provider.name": "openai", "gen_ai.request.model": "gpt-4",
                 "gen_ai.usage.input_tokens": tokens[0], "gen_ai.usage.output_tokens": tokens[1],
                 **extra}, kind=CLIENT)


def entry(trajectory: Trajectory, name: str) -> AgentStep:
    found = [a for a in trajectory.agent_steps if a.name == name]
    assert len(found) == 1, [a.name for a in trajectory.agent_steps]
    return found[0]


def shape(trajectory: Trajectory) -> list[tuple[str, list[tuple[str, str]]]]:
    return [(a.name, [(s.type, s.name) for s in a.steps]) for a in trajectory.agent_steps]


def only_step(trajectory: Trajectory, step_type: str) -> Step:
    steps = [s for a in trajectory.agent_steps for s in a.steps if s.type == step_type]
    assert len(steps) == 1, steps
    return steps[0]


# -- invoke_workflow, invoke_agent ---------------------------------------------------------------


def test_invoke_workflow_is_a_graph_grouping_its_agents() -> None:
    """`invoke_workflow {gen_ai.workflow.name}` (INTERNAL) groups several agent invocations."""
    root = span("a0", "", "POST /support", 0, 100, {"http.request.method": "POST"}, kind=SERVER)
    workflow = span("w1", "a0", "invoke_workflow customer_support_pipeline", 1, 99,
                    {OP: "invoke_workflow", "gen_ai.workflow.name": "customer_support_pipeline"})
    triage = agent("t1", "w1", "Triage", 2, 40)
    writer = agent("r1", "w1", "Fiction Writer", 41, 98)
    calls = [chat("c1", "t1", 3, 39), chat("c2", "r1", 42, 97)]
    trajectory = derive([root, workflow, triage, writer, *calls]).trajectory
    assert shape(trajectory) == [
        ("customer_support_pipeline", [("agent", "Triage"), ("agent", "Fiction Writer")]),
        ("Triage", [("model", "chat gpt-4")]),
        ("Fiction Writer", [("model", "chat gpt-4")]),
    ]
    # the workflow is a graph step where its parent lists it: here the root owns no calls, so
    # the root is no entry; nest it under an agent to see its type
    outer = agent("o1", "", "Concierge", 0, 100)
    nested = replace(workflow, parent_span_id="o1")
    trajectory = derive([outer, nested, triage, writer, *calls]).trajectory
    assert [(s.type, s.name) for s in entry(trajectory, "Concierge").steps] == [
        ("graph", "customer_support_pipeline")
    ]


def test_invoke_agent_internal_is_an_agent_named_by_gen_ai_agent_name() -> None:
    root = agent("a1", "", "Math Tutor", 0, 50,
                 **{"gen_ai.agent.id": "asst_5j66UpCpwteGg4YSxUnt7lPY"})
    trajectory = derive([root, chat("c1", "a1", 1, 49)]).trajectory
    tutor = entry(trajectory, "Math Tutor")
    assert tutor.metadata["agent_id"] == "asst_5j66UpCpwteGg4YSxUnt7lPY"
    assert "remote_agent" not in tutor.metadata
    assert [(s.type, s.name) for s in tutor.steps] == [("model", "chat gpt-4")]


def test_an_invoke_agent_that_only_wraps_one_agent_is_not_an_agent_of_its_own() -> None:
    """§1.5: langgraph-supervisor's `call_agent` node function, which the official LangChain
    instrumentation reports as `invoke_agent call_agent` around each member's own span."""
    spans = [
        span("w", "", "invoke_workflow team", 0, 100,
             {OP: "invoke_workflow", "gen_ai.workflow.name": "team"}),
        agent("s", "w", "supervisor", 1, 20), chat("c1", "s", 2, 19),
        agent("wrap", "w", "call_agent", 21, 60),
        agent("m", "wrap", "math_agent", 22, 59), chat("c2", "m", 23, 58),
    ]
    trajectory = derive(spans).trajectory
    assert [a.name for a in trajectory.agent_steps] == ["team", "supervisor", "math_agent"]
    math = entry(trajectory, "math_agent")
    assert math.parent_id == "w" and [s.type for s in math.steps] == ["model"]
    # an agent that calls one sub-agent and its own model is an agent; so is one that records
    # usage of its own
    with_model = [*spans[:5], chat("c0", "wrap", 21.5, 21.9)]
    assert "call_agent" in [a.name for a in derive(with_model).trajectory.agent_steps]
    counted = replace(spans[3], attributes={**spans[3].attributes,
                                            "gen_ai.usage.input_tokens": 7})
    assert "call_agent" in [
        a.name for a in derive([*spans[:3], counted, *spans[4:]]).trajectory.agent_steps]


def test_a_remote_a2a_agent_is_an_agent_whose_inner_steps_are_missing() -> None:
    """The A2A trace example "Agent invocation": `invoke_agent weather-agent` (CLIENT) →
    `SendMessage` (A2A client) → `POST /message:send` (HTTP client); the remote agent's own steps
    run in another service."""
    root = agent("a1", "", "travel-agent", 0, 100)
    plan_call = chat("c1", "a1", 1, 20)
    remote = agent("r1", "a1", "weather-agent", 21, 80, kind=CLIENT,
                   **{"server.address": "weather.example.com", "server.port": 443,
                      "gen_ai.conversation.id": "conv_5j66UpCpwteGg4YSxUnt7lPY",
                      "gen_ai.usage.input_tokens": 300, "gen_ai.usage.output_tokens": 40})
    send = span("s1", "r1", "SendMessage", 22, 79,
                {"a2a.method.name": "SendMessage", "a2a.task.id": "task-5f2a7c7d9f8e4d2a",
                 "server.address": "weather.example.com", "server.port": 443}, kind=CLIENT)
    http = span("h1", "s1", "POST /message:send", 23, 78,
                {"http.request.method": "POST", "server.address": "weather.example.com"},
                kind=CLIENT)
    answer = chat("c2", "a1", 81, 99)
    trajectory = derive([root, plan_call, remote, send, http, answer]).trajectory
    assert shape(trajectory) == [
        ("travel-agent", [("model", "chat gpt-4"), ("agent", "weather-agent"),
                          ("model", "chat gpt-4")]),
        ("weather-agent", []),
    ]
    weather = entry(trajectory, "weather-agent")
    assert weather.metadata["remote_agent"] == "true"
    assert weather.metadata["inner_steps"] == "missing"
    assert weather.metadata["server_address"] == "weather.example.com:443"
    assert weather.metadata["remote_protocol"] == "a2a"
    assert weather.metadata["session_id"] == "conv_5j66UpCpwteGg4YSxUnt7lPY"
    # the remote agent's usage report is kept, not added to the run's model tokens (10 + 10)
    assert (weather.metadata["remote_input_tokens"], weather.metadata["remote_output_tokens"]) \
        == ("300", "40")
    assert trajectory.root_step.metrics_info.input_tokens == 20
    # the nested agent step carries the same marks
    nested = next(s for s in entry(trajectory, "travel-agent").steps if s.type == "agent")
    assert nested.metadata["inner_steps"] == "missing"


def test_a_remote_agent_service_without_children_is_remote_with_missing_steps() -> None:
    """`invoke_agent` CLIENT as for OpenAI Assistants or AWS Bedrock Agents: a single span."""
    root = agent("a1", "", "Fiction Writer", 0, 10, kind=CLIENT,
                 **{"gen_ai.provider.name": "aws.bedrock"})
    trajectory = derive([root]).trajectory
    writer = entry(trajectory, "Fiction Writer")
    assert (writer.metadata["remote_agent"], writer.metadata["inner_steps"]) == ("true", "missing")
    assert "remote_protocol" not in writer.metadata and "server_address" not in writer.metadata


def test_a_client_agent_with_its_steps_inside_and_no_address_is_in_process() -> None:
    """Earlier GenAI conventions made every `invoke_agent` CLIENT: one with its own model
    and tool calls inside and nothing naming a remote service ran in process."""
    root = agent("a1", "", "Math Tutor", 0, 50, kind=CLIENT)
    tool = span("t1", "a1", "execute_tool add", 20, 30,
                {OP: "execute_tool", "gen_ai.tool.name": "add", "gen_ai.tool.call.id": "call_1"})
    trajectory = derive([root, chat("c1", "a1", 1, 19), tool]).trajectory
    tutor = entry(trajectory, "Math Tutor")
    assert "remote_agent" not in tutor.metadata and "inner_steps" not in tutor.metadata
    assert [(s.type, s.name) for s in tutor.steps] == [("model", "chat gpt-4"), ("tool", "add")]


# -- execute_tool and MCP ------------------------------------------------------------------------


def test_execute_tool_is_a_tool_with_its_name_id_and_structured_arguments() -> None:
    root = agent("a1", "", "weather-forecast-agent", 0, 50)
    tool = span("t1", "a1", "execute_tool get_weather", 10, 20,
                {OP: "execute_tool", "gen_ai.tool.name": "get_weather",
                 "gen_ai.tool.call.id": "call_VSPygqKTWdrhaFErNvMV18Yl",
                 "gen_ai.tool.type": "function",
                 "gen_ai.tool.call.arguments": {"location": "Paris"},
                 "gen_ai.tool.call.result": "rainy, 57°F"})
    step = only_step(derive([root, tool]).trajectory, "tool")
    assert (step.name, step.tool_call_id) == ("get_weather", "call_VSPygqKTWdrhaFErNvMV18Yl")
    assert json.loads(step.input) == {"location": "Paris"}
    assert step.output == "rainy, 57°F"
    assert "mcp_server" not in step.metadata


def _mcp_tool_call(status: int = 0, error: str = "") -> list[Span]:
    """The MCP conventions, "Stdio transport / Tool call": the agent, a model call, the MCP
    client span s3, the MCP server span s4 under it, and a second model call; attribute values
    from its tables."""
    mcp: dict[str, AttributeValue] = {
        OP: "execute_tool",
        "gen_ai.tool.name": "get-weather",
        "gen_ai.tool.call.arguments": {"location": "San Francisco?", "date": "2025-10-01"},
        "gen_ai.tool.call.result": {"temperature_range": {"high": 75, "low": 60}},
        "jsonrpc.request.id": "3",
        "mcp.method.name": "tools/call",
        "mcp.session.id": "8267461134f24305af708e66b8eda71a",
        "mcp.protocol.version": "2025-06-18",
        "network.transport": "pipe",
    }
    if error:
        mcp["error.type"] = error
    s1 = agent("a1", "", "weather-forecast-agent", 0, 100)
    s2 = chat("c1", "a1", 1, 20)
    s3 = span("s3", "a1", "tools/call get-weather", 21, 60, mcp, kind=CLIENT, status=status)
    s4 = span("s4", "s3", "tools/call get-weather", 22, 59, mcp, kind=SERVER,
              service="weather-mcp-server", status=status)
    s5 = chat("c2", "a1", 61, 99)
    return [s1, s2, s3, s4, s5]


def test_an_mcp_tool_call_is_one_tool_step_keeping_the_mcp_server_name() -> None:
    derivation = derive(_mcp_tool_call())
    trajectory = derivation.trajectory
    # the client span and the server span describe ONE call: one tool step
    assert shape(trajectory) == [
        ("weather-forecast-agent", [("model", "chat gpt-4"), ("tool", "get-weather"),
                                    ("model", "chat gpt-4")]),
    ]
    step = only_step(trajectory, "tool")
    assert step.id == "s3"
    assert step.metadata["mcp_server"] == "weather-mcp-server"
    assert step.metadata["mcp_method"] == "tools/call"
    assert step.metadata["mcp_session_id"] == "8267461134f24305af708e66b8eda71a"
    assert json.loads(step.input) == {"location": "San Francisco?", "date": "2025-10-01"}
    assert json.loads(step.output) == {"temperature_range": {"high": 75, "low": 60}}
    kept = {e.span_id: e.kept for e in derivation.explanation}
    assert kept["s4"] is False


def test_a_failed_mcp_tool_call_is_a_failed_tool_step() -> None:
    """A CallToolResult with `isError` true: `error.type` = `tool_error`, status ERROR."""
    trajectory = derive(_mcp_tool_call(status=STATUS_ERROR, error="tool_error")).trajectory
    step = only_step(trajectory, "tool")
    assert step.failed
    assert trajectory.root_step.metrics_info.tool_errors == {"-1": ["s3"]}


def test_an_mcp_client_span_without_operation_name_is_a_tool_named_by_server_address() -> None:
    """`gen_ai.operation.name` is only Recommended on MCP spans; the MCP server is then known by
    the address the client called (Streamable HTTP)."""
    root = agent("a1", "", "weather-forecast-agent", 0, 100)
    call = span("m1", "a1", "tools/call get-weather", 10, 50,
                {"mcp.method.name": "tools/call", "gen_ai.tool.name": "get-weather",
                 "server.address": "mcp.example.com", "server.port": 443,
                 "network.transport": "tcp", "network.protocol.name": "http"}, kind=CLIENT)
    init = span("i1", "a1", "initialize", 1, 5,
                {"mcp.method.name": "initialize", "mcp.protocol.version": "2025-06-18"},
                kind=CLIENT)
    listing = span("l1", "a1", "tools/list", 6, 9, {"mcp.method.name": "tools/list"},
                   kind=CLIENT)
    trajectory = derive([root, call, init, listing]).trajectory
    assert shape(trajectory) == [("weather-forecast-agent", [("tool", "get-weather")])]
    step = only_step(trajectory, "tool")
    assert step.metadata["mcp_server"] == "mcp.example.com:443"
    assert step.metadata["server_address"] == "mcp.example.com:443"


def test_an_mcp_server_span_alone_is_the_tool_and_names_its_server() -> None:
    """The MCP server's own trace (its client untraced): the SERVER span is the call."""
    server = span("s4", "", "tools/call get-weather", 0, 10,
                  {OP: "execute_tool", "mcp.method.name": "tools/call",
                   "gen_ai.tool.name": "get-weather"}, kind=SERVER, service="weather-mcp-server")
    root = agent("a1", "", "weather-forecast-agent", 0, 20)
    trajectory = derive([root, replace(server, parent_span_id="a1")]).trajectory
    assert only_step(trajectory, "tool").metadata["mcp_server"] == "weather-mcp-server"


# -- plan ----------------------------------------------------------------------------------------


def test_a_plans_model_call_is_a_model_step_of_the_agent_marked_phase_plan() -> None:
    """"The LLM call that generates the plan SHOULD be a child of the plan span, and the tool or
    task spans produced from the plan are typically sibling operations under the same
    `invoke_agent` span." The plan span itself is not a step."""
    root = agent("a1", "", "Math Tutor", 0, 100)
    plan = span("p1", "a1", "plan Math Tutor", 1, 30,
                {OP: "plan", "gen_ai.agent.name": "Math Tutor"})
    planner = chat("c1", "p1", 2, 29, tokens=(50, 20))
    tool = span("t1", "a1", "execute_tool add", 31, 40,
                {OP: "execute_tool", "gen_ai.tool.name": "add", "gen_ai.tool.call.id": "call_1"})
    answer = chat("c2", "a1", 41, 99, tokens=(70, 10))
    derivation = derive([root, plan, planner, tool, answer])
    trajectory = derivation.trajectory
    assert shape(trajectory) == [
        ("Math Tutor", [("model", "chat gpt-4"), ("tool", "add"), ("model", "chat gpt-4")]),
    ]
    first, _, last = entry(trajectory, "Math Tutor").steps
    assert (first.metadata["phase"], first.metadata["plan_span_id"]) == ("plan", "p1")
    assert first.parent_id == "a1"
    assert "phase" not in last.metadata
    assert (trajectory.root_step.metrics_info.input_tokens,
            trajectory.root_step.metrics_info.output_tokens) == (120, 30)
    assert {e.span_id: e.kept for e in derivation.explanation}["p1"] is False


def test_a_plan_that_records_its_own_model_usage_is_a_model_step() -> None:
    root = agent("a1", "", "Math Tutor", 0, 100)
    plan = span("p1", "a1", "plan Math Tutor", 1, 30,
                {OP: "plan", "gen_ai.agent.name": "Math Tutor", "gen_ai.request.model": "gpt-4",
                 "gen_ai.usage.input_tokens": 40, "gen_ai.usage.output_tokens": 12})
    trajectory = derive([root, plan]).trajectory
    step = only_step(trajectory, "model")
    assert (step.id, step.metadata["phase"], step.model) == ("p1", "plan", "gpt-4")
    assert step.model_info is not None
    assert (step.model_info.input_tokens, step.model_info.output_tokens) == (40, 12)


# -- retrieval and memory ------------------------------------------------------------------------


def test_retrieval_is_a_tool_step_with_its_operation_and_data_source() -> None:
    documents = [{"id": "doc-1", "score": 0.92, "content": "Refunds within 30 days."}]
    root = agent("a1", "", "support-agent", 0, 100)
    retrieval = span("r1", "a1", "retrieval H7STPQYOND", 10, 20,
                     {OP: "retrieval", "gen_ai.data_source.id": "H7STPQYOND",
                      "gen_ai.retrieval.query.text": "refund policy", "gen_ai.request.top_k": 3,
                      "gen_ai.retrieval.documents": json.dumps(documents)}, kind=CLIENT)
    step = only_step(derive([root, retrieval]).trajectory, "tool")
    assert step.name == "retrieval H7STPQYOND"
    assert step.metadata["operation"] == "retrieval"
    assert step.metadata["data_source_id"] == "H7STPQYOND"
    assert json.loads(step.input) == {"query": "refund policy", "top_k": 3}
    assert json.loads(step.output) == documents


@pytest.mark.parametrize(
    "operation",
    ["create_memory", "search_memory", "update_memory", "upsert_memory", "delete_memory"],
)
def test_each_memory_record_operation_is_a_tool_step_with_its_kind(operation: str) -> None:
    records = [{"id": "mem-1", "content": "prefers window seats"}]
    attrs: dict[str, AttributeValue] = {
        OP: operation, "gen_ai.memory.store.id": "store1", "gen_ai.memory.record.count": 1,
        "gen_ai.memory.records": json.dumps(records),
    }
    if operation == "search_memory":
        attrs["gen_ai.memory.query.text"] = "seat preference"
    if operation in ("update_memory", "delete_memory"):
        attrs["gen_ai.memory.record.id"] = "mem-1"
    root = agent("a1", "", "travel-agent", 0, 100)
    memory = span("m1", "a1", operation, 10, 20, attrs, kind=CLIENT)
    step = only_step(derive([root, memory]).trajectory, "tool")
    assert step.name == operation  # the registry's span name: `{gen_ai.operation.name}`
    assert step.metadata["operation"] == operation
    assert step.metadata["memory_store_id"] == "store1"
    assert step.metadata["memory_record_count"] == "1"
    if operation == "search_memory":
        # the records are what the search found
        assert json.loads(step.input) == {"query": "seat preference"}
        assert json.loads(step.output) == records
    else:
        # the records are what the operation writes (or removes)
        arguments = json.loads(step.input)
        assert arguments["records"] == records
        if operation in ("update_memory", "delete_memory"):
            assert arguments["record_id"] == "mem-1"


# -- operations that are not steps ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("operation", "name"),
    [("create_agent", "create_agent Math Tutor"), ("create_memory_store", "create_memory_store"),
     ("delete_memory_store", "delete_memory_store"), ("embeddings", "embeddings text-embedding-3")],
)
def test_set_up_operations_are_not_steps(operation: str, name: str) -> None:
    root = agent("a1", "", "Math Tutor", 0, 100)
    other = span("x1", "a1", name, 1, 5, {OP: operation, "gen_ai.agent.name": "Math Tutor"},
                 kind=CLIENT)
    derivation = derive([root, other, chat("c1", "a1", 6, 99)])
    assert shape(derivation.trajectory) == [("Math Tutor", [("model", "chat gpt-4")])]
    explained = {e.span_id: (e.kind, e.kept) for e in derivation.explanation}
    assert explained["x1"] == ("other", False)
