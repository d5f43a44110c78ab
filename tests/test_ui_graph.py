"""The agent graph in the web UI (docs/agent-graph.md): a trajectory's Graph tab draws its
agents and nodes from the server's layout for each multi-agent shape (supervisor with
sub-agents, supervisor and swarm hand-offs, an agent inside a tool, sub-agents fanned out with
`Send`), marks hand-offs, parallel branches and failed nodes, and a click on a node selects its
steps in the lanes and the step table; the graph of a filter shows the paths and how often.
Expected counts: tests/graph_support.py, from the capture scripts."""

from __future__ import annotations

import httpx
import pytest

from tests.graph_support import SHAPES, replay_folder
from tests.harness import ServerProcess, final_trajectory
from tests.normalize_support import REAL
from tests.ui_support import artifacts_dir, browser_page, require_browser


@pytest.fixture(autouse=True)
def _browser() -> None:
    require_browser()


def test_graph_tab_draws_every_shape(server: ServerProcess, project: str) -> None:
    from playwright.sync_api import expect

    ids = {shape: replay_folder(spec.folder, server.http, project)
           for shape, spec in SHAPES.items()}
    with httpx.Client() as client:
        for trace_id in ids.values():
            final_trajectory(client, server.http, project, trace_id)

    with browser_page(server.http, artifacts_dir("agent-graph")) as ui:
        page = ui.page
        for shape, trace_id in ids.items():
            spec = SHAPES[shape]
            ui.open(f"#/trajectories/{trace_id}?project={project}&tab=graph")
            graph = page.locator("svg#agent-graph")
            expect(graph.locator(".graph-node")).to_have_count(spec.nodes)
            expect(graph.locator(".graph-edge")).to_have_count(spec.edges)
            expect(graph.locator(".graph-node.node-agent")).to_have_count(spec.agents)
            expect(graph.locator(".graph-edge.edge-handoff")).to_have_count(spec.handoffs)
            expect(graph.locator(".graph-edge.edge-tool")).to_have_count(spec.tool_edges)
            expect(graph.locator(".graph-edge.parallel")).to_have_count(spec.parallel_edges)
            ui.shot(f"graph-{shape}")
        ui.assert_clean()


def test_send_fan_out_marks_parallel_branches_and_a_click_selects_steps(
        server: ServerProcess, project: str) -> None:
    from playwright.sync_api import expect

    trace_id = replay_folder(SHAPES["send"].folder, server.http, project)
    with httpx.Client() as client:
        final_trajectory(client, server.http, project, trace_id)
    with browser_page(server.http, artifacts_dir("agent-graph-send")) as ui:
        page = ui.page
        ui.open(f"#/trajectories/{trace_id}?project={project}")
        page.locator("#tab-graph").click()
        graph = page.locator("svg#agent-graph")
        # plan → researcher and researcher → summarize: 3 times each, all 3 in parallel
        parallel = graph.locator(".graph-edge.parallel")
        expect(parallel).to_have_count(2)
        for i in range(2):
            expect(parallel.nth(i)).to_have_attribute("data-count", "3")
            expect(parallel.nth(i).locator(".edge-label")).to_have_text("×3 ∥")
        researcher = graph.locator('.graph-node.node-agent[data-agent="researcher"]')
        expect(researcher).to_have_class("graph-node node-agent parallel")
        # the researchers' `tools` node: its 3 get_weather calls
        tools = graph.locator('.graph-node.node-step[data-agent="researcher"][data-label="tools"]')
        tools.click()
        rows = page.locator("#step-table tr.in-node")
        expect(rows).to_have_count(3)
        for i in range(3):
            expect(rows.nth(i)).to_contain_text("get_weather")
        expect(page.locator(".timeline .bar.in-node")).to_have_count(3)
        expect(page.locator("#graph-selection")).to_contain_text("3 steps selected")
        expect(page.locator("#step-detail")).to_contain_text("get_weather")
        # keyboard: Enter on the plan node selects its one model step
        plan = graph.locator('.graph-node[data-label="plan"]')
        plan.focus()
        page.keyboard.press("Enter")
        expect(page.locator("#step-table tr.in-node")).to_have_count(1)
        ui.shot("send-selected")
        # the same agent's runs as one graph: here the one run, drawn the same
        page.locator("#agent-runs-graph").click()
        expect(page.locator("#graph-summary")).to_contain_text("1 run ·")
        expect(page.locator("svg#agent-graph .graph-node")).to_have_count(SHAPES["send"].nodes)
        expect(page.locator("svg#agent-graph .graph-edge")).to_have_count(SHAPES["send"].edges)
        expect(page.locator("#path-table tbody tr")).to_contain_text(
            "research_team → researcher → researcher → researcher")
        ui.assert_clean()


def test_failed_nodes_are_red(server: ServerProcess, project: str) -> None:
    from playwright.sync_api import expect

    # script.py run_error: book_flight raises in the `tools` node and the run raises
    trace_id = replay_folder(REAL / "openinference" / "run_error.prebuilt.stream", server.http,
                             project)
    with httpx.Client() as client:
        final_trajectory(client, server.http, project, trace_id)
    with browser_page(server.http, artifacts_dir("agent-graph-failed")) as ui:
        ui.open(f"#/trajectories/{trace_id}?project={project}&tab=graph")
        graph = ui.page.locator("svg#agent-graph")
        expect(graph.locator(".graph-node")).to_have_count(3)
        failed = graph.locator(".graph-node.failed")
        expect(failed).to_have_count(2)  # the agent `assistant` and its `tools` node
        expect(graph.locator('.graph-node.failed[data-label="tools"] rect')).to_have_css(
            "stroke", "rgb(198, 40, 40)")
        expect(graph.locator('.graph-node[data-label="agent"]')).not_to_have_class("failed")
        ui.assert_clean()


def test_graph_of_a_filter_shows_paths_and_how_often(server: ServerProcess,
                                                      project: str) -> None:
    from playwright.sync_api import expect

    # four runs; the filter agent=math_agent selects the swarm and the two supervisor runs
    ids = [replay_folder(SHAPES[s].folder, server.http, project)
           for s in ("swarm", "supervisor", "supervisor_handoff", "agent_in_tool")]
    with httpx.Client() as client:
        for trace_id in ids:
            final_trajectory(client, server.http, project, trace_id)
    with browser_page(server.http, artifacts_dir("agent-graph-aggregate")) as ui:
        page = ui.page
        ui.open(f"#/trajectories?project={project}&agent=math_agent")
        page.locator("#graph-link").click()
        expect(page.locator("#graph-summary")).to_contain_text("3 runs")
        graph = page.locator("svg#agent-graph")
        # the union of the three runs' graphs: agents swarm, supervisor_team, supervisor,
        # weather_agent, math_agent; supervisor/supervisor, supervisor/agent, supervisor/tools,
        # and agent + tools of weather_agent and of math_agent (shared by the three runs)
        expect(graph.locator(".graph-node")).to_have_count(12)
        # the swarm's 8 edges; the supervisor graph adds its 5 around supervisor/supervisor,
        # langgraph-supervisor its 5 between the agents and supervisor's enter and
        # agent → tools (the sub-agents' own edges are the swarm's): 8 + 5 + 7
        expect(graph.locator(".graph-edge")).to_have_count(20)
        expect(graph.locator(".graph-edge.edge-handoff")).to_have_count(3)
        math = graph.locator('.graph-node.node-agent[data-agent="math_agent"]')
        expect(math).to_have_attribute("data-visits", "3")
        rows = page.locator("#path-table tbody tr")
        expect(rows).to_have_count(3)
        expect(page.locator("#path-table")).to_contain_text("swarm → weather_agent → math_agent")
        ui.shot("aggregate")
        ui.assert_clean()
