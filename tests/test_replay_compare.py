"""Run-to-run comparison of live runs of the scripted LangGraph agent, traced by the LangSmith SDK
in OTel mode through the OTel SDK's OTLP/HTTP exporter (tests/replay_agent.py): a pair of runs
that diverge at a known step, and a hybrid replay — a different scripted model re-run over the
recorded tools of an ingested trace — re-ingested and compared end to end.

Expected values come from the scripts in tests/replay_agent.py."""

from __future__ import annotations

import httpx

from tests.harness import ServerProcess, get_json
from tests.test_replay_api import canonical_hash, events, ingest_capture, run_agent


def compare(server: ServerProcess, project: str, a: str, b: str) -> dict:
    with httpx.Client() as c:
        return get_json(c, f"{server.http}/api/v1/trajectories/compare", project=project,
                        a=a, b=b)


def test_runs_diverging_at_a_known_step(server: ServerProcess, project: str) -> None:
    a = run_agent(server, project, "react")["trace_id"]
    b = run_agent(server, project, "no_divide")["trace_id"]
    report = compare(server, project, a, b)
    # react: model, [get_weather, add], model, divide, model
    # no_divide: model, [get_weather, add], model (the answer): it never calls divide
    first = report["first_divergence"]
    assert first["position"] == 4
    assert first["op"] == "deleted" and first["a"]["name"] == "divide" and first["b"] is None
    assert [p["op"] for p in report["alignment"]] == ["same"] * 4 + ["deleted"] * 2
    assert report["distance"] == 2
    assert report["counts"] == {"same": 4, "changed": 0, "inserted": 0, "deleted": 2}
    d = report["deltas"]
    assert (d["path_length"], d["tool_calls"], d["model_steps"], d["failed_steps"],
            d["retries"]) == (-2, -1, -1, -1, 0)
    assert d["input_tokens"] == (120 + 180) - (120 + 180 + 230)
    assert d["output_tokens"] == (30 + 16) - (30 + 18 + 25)
    assert report["a"]["metrics"]["tool_calls"] == 3 and report["b"]["metrics"]["tool_calls"] == 2
    assert report["a"]["cost"]["unpriced_models"] == ["fake-gpt-4o-mini"]
    assert d["cost_usd"] is None  # neither run has a price
    same = compare(server, project, a, a)
    assert same["first_divergence"] is None and same["distance"] == 0
    assert {v for k, v in same["deltas"].items() if k != "cost_usd"} == {0}


def test_hybrid_replay_over_recorded_tools_is_ingested_and_compared(
        server: ServerProcess, project: str) -> None:
    recorded = ingest_capture(server, project, "langsmith/react.prebuilt.stream")
    rerun = run_agent(server, project, "replay_v2", tools_from=recorded)
    # replay_v2 asks get_weather(Paris) and add(2, 3) — recorded — then add(10, 5) — not
    assert rerun["answered"] == 2
    assert [(u["tool_name"], u["arguments"]) for u in rerun["unanswered"]] == [
        ("add", {"a": 10, "b": 5})]
    assert rerun["unanswered"][0]["arguments_hash"] == canonical_hash({"a": 10, "b": 5})
    new = rerun["trace_id"]
    with httpx.Client() as c:
        _, evs = events(c, server, project, new)
        contract = get_json(c, f"{server.http}/api/v1/trajectories/{new}/contract",
                            project=project)
    tools = [e for e in evs if e["type"] == "tool"]
    assert sorted(e["name"] for e in tools[:2]) == ["add", "get_weather"]
    assert [e["error"] is None for e in tools[:2]] == [True, True]
    # the unanswered call failed in the new run instead of reaching the real tool (10 + 5)
    assert tools[2]["name"] == "add" and "no recorded call" in tools[2]["error"]["msg"]
    assert [v["value"] for v in contract["model_names"]["values"]] == ["fake-gpt-4o-mini-v2"]

    report = compare(server, project, recorded, new)
    first = report["first_divergence"]
    assert first["position"] == 4 and first["op"] == "changed"
    assert (first["a"]["name"], first["b"]["name"]) == ("divide", "add")
    assert [p["op"] for p in report["alignment"]] == ["same"] * 4 + ["changed", "same"]
    d = report["deltas"]
    assert (d["path_length"], d["tool_calls"], d["failed_steps"]) == (0, 0, 0)
    assert d["input_tokens"] == (100 + 150 + 200) - (120 + 180 + 230)
    assert d["output_tokens"] == (20 + 15 + 22) - (30 + 18 + 25)
