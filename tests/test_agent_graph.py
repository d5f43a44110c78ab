"""The agent graph's pure builder (evaluators/agent_graph.py) and its layout
(evaluators/graph_layout.py), on real captures of the four multi-agent shapes.

The expected nodes and edges are written from each capture's script (tests/capture/script.py and
the wiring in tests/capture/agents.py, the `Send` fan-out included) and
the rules of docs/agent-graph.md, never from trajhub's output: each case says how it follows.
Nodes are written `agent` for an agent node and `agent/label` for a step node; edges as
(source, target, kind, count, parallel count).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.eino_real_support import capture_files
from tests.normalize_support import REAL, load_traces
from trajhub.evaluators.agent_graph import aggregate, graph_of
from trajhub.evaluators.graph_layout import place
from trajhub.normalizers import derive
from trajhub.normalizers.trajectory import trajectory_to_json

SEND_FANOUT = REAL / "openinference" / "send_fanout.stategraph.stream"

Edge = tuple[str, str, str, int, int]


def document(folder: Path) -> dict[str, Any]:
    """The trajectory document of the one run in a capture folder."""
    traces = load_traces(sorted(folder.glob("http_*.bin")))
    roots = [derive(spans).trajectory for spans in traces.values()]
    # traceloop splits some runs over several traces; the captures used here are one trace
    assert len(roots) == 1, folder
    doc: dict[str, Any] = json.loads(trajectory_to_json(roots[0]))
    return doc


def capture(client: str, run: str) -> dict[str, Any]:
    return document(REAL / client / run)


def name(node: dict[str, Any]) -> str:
    return node["agent"] if node["kind"] == "agent" else f"{node['agent']}/{node['label']}"


def nodes_of(view: dict[str, Any]) -> dict[str, int]:
    return {name(n): n["visits"] for n in view["nodes"]}


def edges_of(view: dict[str, Any]) -> set[Edge]:
    names = {n["id"]: name(n) for n in view["nodes"]}
    return {(names[e["source"]], names[e["target"]], e["kind"], e["count"], e["parallel"])
            for e in view["edges"]}


def react_edges(agent: str, model_visits: int, tool_visits: int) -> set[Edge]:
    """A create_react_agent activation (LangGraph nodes `agent` and `tools`): entered at its
    model, each tool visit follows a model visit and is followed by one."""
    return {(agent, f"{agent}/agent", "enter", 1, 0),
            (f"{agent}/agent", f"{agent}/tools", "transition", tool_visits, 0),
            (f"{agent}/tools", f"{agent}/agent", "transition", model_visits - 1, 0)}


def test_supervisor_with_sub_agents() -> None:
    # agents.py _supervisor_subgraphs: the StateGraph `supervisor` runs its node `supervisor`
    # (one model call per turn of the script: route to weather_agent, route to math_agent,
    # answer), with the react sub-agents weather_agent and math_agent between; each sub-agent:
    # model (tool call), its tool, model (answer)
    view = place(graph_of(capture("openinference", "supervisor_subgraphs.stategraph.stream")))
    assert nodes_of(view) == {
        "supervisor": 1, "weather_agent": 1, "math_agent": 1, "supervisor/supervisor": 3,
        "weather_agent/agent": 2, "weather_agent/tools": 1, "math_agent/agent": 2,
        "math_agent/tools": 1}
    assert edges_of(view) == {
        ("supervisor", "supervisor/supervisor", "enter", 1, 0),
        ("supervisor/supervisor", "weather_agent", "transition", 1, 0),
        ("weather_agent", "supervisor/supervisor", "transition", 1, 0),
        ("supervisor/supervisor", "math_agent", "transition", 1, 0),
        ("math_agent", "supervisor/supervisor", "transition", 1, 0),
        *react_edges("weather_agent", 2, 1), *react_edges("math_agent", 2, 1)}
    assert len(view["nodes"]) == 8 and len(view["edges"]) == 11


def test_supervisor_hands_off_with_transfer_tools() -> None:
    # agents.py _supervisor_handoff (langgraph-supervisor): the graph supervisor_team runs the
    # react agent `supervisor` three times: transfer_to_weather_agent, transfer_to_math_agent,
    # answer; weather_agent and math_agent each once between (model, tool, model)
    view = place(graph_of(capture("openinference",
                                  "supervisor_handoff.langgraph_supervisor.stream")))
    assert nodes_of(view) == {
        "supervisor_team": 1, "supervisor": 3, "weather_agent": 1, "math_agent": 1,
        "supervisor/agent": 3, "supervisor/tools": 2, "weather_agent/agent": 2,
        "weather_agent/tools": 1, "math_agent/agent": 2, "math_agent/tools": 1}
    assert edges_of(view) == {
        ("supervisor_team", "supervisor", "enter", 1, 0),
        ("supervisor", "weather_agent", "handoff", 1, 0),
        ("weather_agent", "supervisor", "transition", 1, 0),
        ("supervisor", "math_agent", "handoff", 1, 0),
        ("math_agent", "supervisor", "transition", 1, 0),
        # three activations, each entered at its model; two of them called a transfer tool
        ("supervisor", "supervisor/agent", "enter", 3, 0),
        ("supervisor/agent", "supervisor/tools", "transition", 2, 0),
        *react_edges("weather_agent", 2, 1), *react_edges("math_agent", 2, 1)}


def test_supervisor_without_langgraph_node_metadata() -> None:
    # the same run under cozeloop (Python), which records no LangGraph node: step nodes are
    # `model` and each tool by name
    view = place(graph_of(capture("cozeloop_python",
                                  "supervisor_handoff.langgraph_supervisor.stream")))
    assert nodes_of(view) == {
        "supervisor_team": 1, "supervisor": 3, "weather_agent": 1, "math_agent": 1,
        "supervisor/model": 3, "supervisor/transfer_to_weather_agent": 1,
        "supervisor/transfer_to_math_agent": 1, "weather_agent/model": 2,
        "weather_agent/get_weather": 1, "math_agent/model": 2, "math_agent/add": 1}
    assert len(view["edges"]) == 14
    assert ("supervisor", "weather_agent", "handoff", 1, 0) in edges_of(view)
    assert ("supervisor/model", "supervisor/transfer_to_math_agent", "transition", 1, 0) \
        in edges_of(view)


def test_swarm_hand_off() -> None:
    # agents.py _swarm_handoff: weather_agent calls get_weather, then transfer_to_math_agent
    # (two model turns, two tool visits); math_agent calls add and answers
    view = place(graph_of(capture("openinference", "swarm_handoff.langgraph_swarm.stream")))
    assert nodes_of(view) == {
        "swarm": 1, "weather_agent": 1, "math_agent": 1, "weather_agent/agent": 2,
        "weather_agent/tools": 2, "math_agent/agent": 2, "math_agent/tools": 1}
    assert edges_of(view) == {
        ("swarm", "weather_agent", "enter", 1, 0),
        ("weather_agent", "math_agent", "handoff", 1, 0),
        ("weather_agent", "weather_agent/agent", "enter", 1, 0),
        ("weather_agent/agent", "weather_agent/tools", "transition", 2, 0),
        ("weather_agent/tools", "weather_agent/agent", "transition", 1, 0),
        *react_edges("math_agent", 2, 1)}


def test_agent_run_inside_a_tool() -> None:
    # agents.py _agent_in_tool: assistant calls ask_researcher, whose body runs the react agent
    # researcher (get_weather) to its answer; then assistant answers
    view = place(graph_of(capture("openinference", "agent_in_tool.prebuilt.stream")))
    assert nodes_of(view) == {
        "assistant": 1, "researcher": 1, "assistant/agent": 2, "assistant/tools": 1,
        "researcher/agent": 2, "researcher/tools": 1}
    assert edges_of(view) == {
        *react_edges("assistant", 2, 1),
        ("assistant/tools", "researcher", "tool", 1, 0),
        *react_edges("researcher", 2, 1)}


def test_parallel_sub_agents_fanned_out_with_send() -> None:
    # script.py send_fanout: `plan` (one model call), three `researcher` runs sent in one
    # super-step, each model → get_weather → model, then `summarize` (one model call)
    view = place(graph_of(document(SEND_FANOUT)))
    assert nodes_of(view) == {
        "research_team": 1, "researcher": 3, "research_team/plan": 1,
        "research_team/summarize": 1, "researcher/agent": 6, "researcher/tools": 3}
    assert edges_of(view) == {
        ("research_team", "research_team/plan", "enter", 1, 0),
        ("research_team/plan", "researcher", "transition", 3, 3),
        ("researcher", "research_team/summarize", "transition", 3, 3),
        ("researcher", "researcher/agent", "enter", 3, 0),
        ("researcher/agent", "researcher/tools", "transition", 3, 0),
        ("researcher/tools", "researcher/agent", "transition", 3, 0)}
    researcher = next(n for n in view["nodes"] if name(n) == "researcher")
    assert researcher["parallel"] == 3


def test_parallel_tool_calls_are_parallel_branches() -> None:
    # script.py parallel_tools: one model turn asks for three tools, run in one super-step
    view = place(graph_of(capture("openinference", "parallel_tools.prebuilt.stream")))
    assert nodes_of(view) == {"assistant": 1, "assistant/agent": 2, "assistant/tools": 3}
    assert edges_of(view) == {
        ("assistant", "assistant/agent", "enter", 1, 0),
        ("assistant/agent", "assistant/tools", "transition", 3, 3),
        ("assistant/tools", "assistant/agent", "transition", 3, 3)}


@pytest.mark.parametrize("path", ["cozeloop", "apmplus"])
def test_eino_parallel_tool_calls_without_super_steps(path: str) -> None:
    # tests/capture/eino/script.go react_tools (a real run): the Eino ReAct agent calls its
    # model, then get_weather and get_time in parallel, then its model, then book_flight (which
    # fails; the error goes back to the model), then its model. Eino records no LangGraph node,
    # so step nodes are `model` and the tools by name
    traces = load_traces(capture_files("react_tools", path))
    (spans,) = traces.values()
    view = place(graph_of(json.loads(trajectory_to_json(derive(spans).trajectory))))
    assert nodes_of(view) == {"ReActAgent": 1, "ReActAgent/model": 3,
                              "ReActAgent/get_time": 1, "ReActAgent/get_weather": 1,
                              "ReActAgent/book_flight": 1}
    assert edges_of(view) == {
        ("ReActAgent", "ReActAgent/model", "enter", 1, 0),
        ("ReActAgent/model", "ReActAgent/get_time", "transition", 1, 1),
        ("ReActAgent/model", "ReActAgent/get_weather", "transition", 1, 1),
        ("ReActAgent/get_time", "ReActAgent/model", "transition", 1, 1),
        ("ReActAgent/get_weather", "ReActAgent/model", "transition", 1, 1),
        ("ReActAgent/model", "ReActAgent/book_flight", "transition", 1, 0),
        ("ReActAgent/book_flight", "ReActAgent/model", "transition", 1, 0)}
    failed = {name(n): n["failed"] for n in view["nodes"]}
    assert failed["ReActAgent/book_flight"] == 1 and failed["ReActAgent/get_time"] == 0


def test_failed_nodes_are_counted() -> None:
    # script.py run_error: get_weather succeeds, book_flight raises and the run raises
    view = place(graph_of(capture("openinference", "run_error.prebuilt.stream")))
    failed = {name(n): n["failed"] for n in view["nodes"]}
    assert failed == {"assistant": 1, "assistant/agent": 0, "assistant/tools": 1}


def test_a_node_names_its_steps() -> None:
    doc = capture("openinference", "swarm_handoff.langgraph_swarm.stream")
    view = place(graph_of(doc))
    steps = {s["id"]: (a["name"], s) for a in doc["agent_steps"] for s in a["steps"]}
    tools = next(n for n in view["nodes"] if name(n) == "weather_agent/tools")
    assert sorted(steps[i][1]["name"] for i in tools["step_ids"]) == [
        "get_weather", "transfer_to_math_agent"]
    math = next(n for n in view["nodes"] if name(n) == "math_agent")
    # the activation's row in the swarm's steps, and its own model, tool and model steps
    assert [steps[i][1]["type"] for i in math["step_ids"]] == ["agent", "model", "tool", "model"]


def _step(step_id: str, kind: str, name: str, start: int, duration: int,
          failed: bool = False) -> dict[str, Any]:
    info: dict[str, Any] = {"started_at": str(start), "duration": str(duration)}
    if failed:
        info["error"] = {"code": -1, "msg": "boom"}
    return {"id": step_id, "parent_id": "root", "type": kind, "name": name, "input": "",
            "output": "", "basic_info": info, "metadata": {}}


def test_without_super_steps_overlapping_times_are_parallel() -> None:
    # a hand-written document: model, then two tools that overlap in time (100–150, 120–160),
    # then a tool that starts after both ended, then a model; no LangGraph metadata
    doc = {"id": "t", "root_step": {"id": "root", "name": "bot"}, "agent_steps": [{
        "id": "root", "parent_id": "", "name": "bot", "basic_info": {}, "steps": [
            _step("m1", "model", "gpt", 0, 90), _step("t1", "tool", "search", 100, 50),
            _step("t2", "tool", "search", 120, 40, failed=True),
            _step("t3", "tool", "fetch", 170, 10), _step("m2", "model", "gpt", 200, 50)]}]}
    view = place(graph_of(doc))
    assert nodes_of(view) == {"bot": 1, "bot/model": 2, "bot/search": 2, "bot/fetch": 1}
    assert edges_of(view) == {
        ("bot", "bot/model", "enter", 1, 0),
        ("bot/model", "bot/search", "transition", 2, 2),
        ("bot/search", "bot/fetch", "transition", 2, 2),
        ("bot/fetch", "bot/model", "transition", 1, 0)}
    search = next(n for n in view["nodes"] if name(n) == "bot/search")
    assert (search["failed"], search["parallel"]) == (1, 2)


def test_aggregate_adds_counts_and_counts_paths() -> None:
    swarm = capture("openinference", "swarm_handoff.langgraph_swarm.stream")
    tools = capture("openinference", "parallel_tools.prebuilt.stream")
    view = place(aggregate([swarm, swarm, tools]))
    assert view["runs"] == 3
    nodes = {name(n): (n["visits"], n["runs"], n["step_ids"]) for n in view["nodes"]}
    assert nodes["weather_agent/agent"] == (4, 2, [])  # 2 visits in each of 2 runs
    assert nodes["assistant/tools"] == (3, 1, [])
    handoff = next(e for e in view["edges"] if e["kind"] == "handoff")
    assert (handoff["count"], handoff["runs"]) == (2, 2)
    assert view["paths"] == [{"agents": ["swarm", "weather_agent", "math_agent"], "count": 2},
                             {"agents": ["assistant"], "count": 1}]
    assert view["distinct_paths"] == 2


def test_layout_places_every_node_apart_and_routes_edges_between_them() -> None:
    view = place(graph_of(capture("openinference",
                                  "supervisor_handoff.langgraph_supervisor.stream")))
    assert view["layout"].startswith("igraph ") and view["layout"].endswith(" Sugiyama")
    boxes = [(n["x"] - n["width"] / 2, n["y"] - n["height"] / 2, n["x"] + n["width"] / 2,
              n["y"] + n["height"] / 2) for n in view["nodes"]]
    for i, a in enumerate(boxes):
        assert a[0] >= 0 and a[2] <= view["width"] and a[1] >= 0 and a[3] <= view["height"]
        for b in boxes[i + 1:]:
            assert a[2] <= b[0] or b[2] <= a[0] or a[3] <= b[1] or b[3] <= a[1], (a, b)
    centres = {n["id"]: [n["x"], n["y"]] for n in view["nodes"]}
    for edge in view["edges"]:
        assert edge["points"][0] == centres[edge["source"]]
        assert edge["points"][-1] == centres[edge["target"]]
    # the run reads top to bottom: the team above the supervisor above its model node above
    # its tools node (the ReAct loop's way back, tools → agent, is the edge drawn upwards)
    y = {name(n): n["y"] for n in view["nodes"]}
    assert y["supervisor_team"] < y["supervisor"] < y["supervisor/agent"] \
        < y["supervisor/tools"]
    assert y["weather_agent/agent"] < y["weather_agent/tools"]
    for edge in view["edges"]:
        if edge["kind"] == "enter":
            assert centres[edge["target"]][1] > centres[edge["source"]][1], edge


@pytest.mark.parametrize("doc", [None, {}, {"agent_steps": "x"}, [], "text"])
def test_a_malformed_document_gives_an_empty_graph(doc: object) -> None:
    view = place(graph_of(doc))
    assert (view["nodes"], view["edges"], view["runs"]) == ([], [], 1)
