"""The agent graph over REST (docs/agent-graph.md): one trajectory's graph and the graph of the
runs a filter selects, on real captures replayed into a live server; bad input is a 4xx naming
the problem. Expected counts: tests/graph_support.py (from the capture scripts)."""

from __future__ import annotations

from collections import Counter

import httpx
import pytest

from tests.graph_support import SHAPES, replay_folder
from tests.harness import ServerProcess, final_trajectories
from trajhub.client import TrajhubClient


@pytest.fixture
def replayed(server: ServerProcess, project: str) -> dict[str, str]:
    """Every shape, once, into a fresh project; shape → trace id (final)."""
    ids = {shape: replay_folder(spec.folder, server.http, project)
           for shape, spec in SHAPES.items()}
    final_trajectories(server.http, project, ids.values())
    return ids


def test_each_shape_has_its_graph(server: ServerProcess, project: str,
                                  replayed: dict[str, str]) -> None:
    with httpx.Client(base_url=server.http, params={"project": project}) as c:
        for shape, trace_id in replayed.items():
            spec = SHAPES[shape]
            r = c.get(f"/api/v1/trajectories/{trace_id}/graph")
            assert r.status_code == 200, r.text
            graph = r.json()
            kinds = Counter(e["kind"] for e in graph["edges"])
            assert (len(graph["nodes"]), len(graph["edges"])) == (spec.nodes, spec.edges), shape
            assert sum(n["kind"] == "agent" for n in graph["nodes"]) == spec.agents, shape
            assert (kinds["handoff"], kinds["tool"]) == (spec.handoffs, spec.tool_edges), shape
            assert sum(e["parallel"] > 0 for e in graph["edges"]) == spec.parallel_edges, shape
            assert graph["runs"] == 1 and graph["layout"].startswith("igraph ")
            # every node's steps are steps of this trajectory
            doc = c.get(f"/api/v1/trajectories/{trace_id}").json()
            ids = {s["id"] for a in doc["agent_steps"] for s in a["steps"]}
            assert all(set(n["step_ids"]) <= ids and n["step_ids"] for n in graph["nodes"]
                       if n["kind"] == "step"), shape


def test_the_graph_of_a_filter_adds_up_its_runs(server: ServerProcess, project: str,
                                                 replayed: dict[str, str]) -> None:
    with httpx.Client(base_url=server.http, params={"project": project}) as c:
        # the agent filter of the trajectory list: the runs with a weather_agent are
        # supervisor, supervisor_handoff and swarm
        r = c.get("/api/v1/graph", params={"agent": "weather_agent", "limit": 500})
        assert r.status_code == 200, r.text
        graph = r.json()
        assert graph["runs"] == 3
        weather = next(n for n in graph["nodes"]
                       if n["kind"] == "agent" and n["agent"] == "weather_agent")
        assert (weather["visits"], weather["runs"], weather["step_ids"]) == (3, 3, [])
        handoffs = [e for e in graph["edges"] if e["kind"] == "handoff"]
        assert sum(e["count"] for e in handoffs) == 3  # 2 (supervisor) + 1 (swarm)
        assert sorted((p["agents"], p["count"]) for p in graph["paths"]) == sorted([
            (["supervisor", "weather_agent", "math_agent"], 1),
            (["supervisor_team", "supervisor", "weather_agent", "supervisor", "math_agent",
              "supervisor"], 1),
            (["swarm", "weather_agent", "math_agent"], 1)])
        # the limit takes the newest runs: one run, the newest with a weather_agent
        one = c.get("/api/v1/graph", params={"agent": "weather_agent", "limit": 1}).json()
        assert one["runs"] == 1
        # no filter: every run
        assert c.get("/api/v1/graph").json()["runs"] == len(SHAPES)
        none = c.get("/api/v1/graph", params={"agent": "nobody"}).json()
        assert (none["runs"], none["nodes"], none["edges"], none["paths"]) == (0, [], [], [])
    # the Python client reads the same two routes
    with TrajhubClient(server.http, project=project, timeout=30) as client:
        assert client.agent_graph(agent="weather_agent", limit=500).runs == 3
        swarm = client.trajectory_graph(replayed["swarm"])
        assert (len(swarm.nodes), len(swarm.edges)) == (SHAPES["swarm"].nodes,
                                                        SHAPES["swarm"].edges)
        with pytest.raises(TypeError, match="unknown filter"):
            client.agent_graph(agnet="weather_agent")


def test_bad_input_is_a_4xx_naming_the_problem(server: ServerProcess, project: str) -> None:
    with httpx.Client(base_url=server.http, params={"project": project}) as c:
        r = c.get(f"/api/v1/trajectories/{'ab' * 16}/graph")
        assert r.status_code == 404 and "no trajectory" in r.json()["detail"]
        r = c.get("/api/v1/trajectories/not-hex/graph")
        assert r.status_code in (400, 422) and "trace_id" in r.text
        for params, named in (({"limit": 0}, "limit"), ({"limit": 1001}, "limit"),
                              ({"limit": "many"}, "limit"), ({"start": "soon"}, "start"),
                              ({"has_error": "maybe"}, "has_error"),
                              ({"status": "done"}, "status")):
            r = c.get("/api/v1/graph", params=params)
            assert 400 <= r.status_code < 500, (params, r.status_code)
            assert named in r.text, (params, r.text)
