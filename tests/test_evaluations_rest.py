"""Evaluations end to end: real-client captures ingested, trajectories final, a set filled by
query, expectations written from the ground truth of tests/fixtures/README.md, then evaluated over
REST and through `trajhub eval`."""

from __future__ import annotations

import subprocess
import uuid
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.cli_runner import run_cli
from tests.harness import ServerProcess
from tests.test_datasets_support import Ingested, project_fixtures, wait_evaluation

ingested, api = project_fixtures()

ROOT = Path(__file__).parent.parent

#: fixtures/README.md, scenario `react` of the prebuilt graph `LangGraph`: one agent; tools
#: get_weather and add in parallel (either order), then divide(1, 0).
GROUND_TRUTH = {
    "agents": ["LangGraph"],
    "tools": {"LangGraph": ["get_weather", "add", "divide"]},
    "tool_order": ["get_weather", "divide"],
    "trajectory": [
        # OpenInference records get_weather's input as the bare "Paris": no args matcher on it
        {"type": "tool", "name": "get_weather"},
        {"type": "tool", "name": "add", "args": {"a": 2, "b": 3}},
        {"type": "tool", "name": "divide", "args": {"a": 1, "b": 0}},
    ],
}
#: a wrong expectation: a tool the run never called, and divide by 2 instead of 0
WRONG = {
    "agents": ["LangGraph"],
    "tools": {"LangGraph": ["get_weather", "add", "divide", "multiply"]},
    "tool_order": ["get_weather", "divide"],
    "trajectory": [
        {"type": "tool", "name": "get_weather"},
        {"type": "tool", "name": "add", "args": {"a": 2, "b": 3}},
        {"type": "tool", "name": "divide", "args": {"a": 1, "b": 2}},
    ],
}
EVALUATORS = ["expected_agents_tools", "tool_call_accuracy", "trajectory_match"]


@pytest.fixture
def react_set(api: httpx.Client) -> tuple[str, str]:
    """A set of the three LangGraph react runs, expectations from the ground truth, one of them
    made wrong; returns (set name, id of the wrong item)."""
    name = "react-" + uuid.uuid4().hex[:8]
    assert api.post("/datasets", json={"name": name}).status_code == 201
    r = api.post(f"/datasets/{name}/fill",
                 json={"query": {"agent": "LangGraph", "failed_model_steps": False}})
    assert r.json()["added"] == 3
    items = api.get(f"/datasets/{name}/items").json()["items"]
    for item in items:
        r = api.patch(f"/datasets/{name}/items/{item['id']}", json={"expectations": GROUND_TRUTH})
        assert r.status_code == 200, r.text
    wrong = items[1]["id"]
    api.patch(f"/datasets/{name}/items/{wrong}", json={"expectations": WRONG})
    return name, wrong


def by_evaluator(run: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {a["evaluator"]: a for a in run["aggregates"]}


def test_snapshot_evaluation_over_rest(api: httpx.Client, server: ServerProcess,
                                       ingested: Ingested, react_set: tuple[str, str]) -> None:
    name, wrong = react_set
    r = api.post("/evaluations", json={
        "dataset": name, "target": "snapshot",
        "evaluators": ["expected_agents_tools", "tool_call_accuracy",
                       {"name": "trajectory_match", "config": {"mode": "strict"}}]})
    assert r.status_code == 202, r.text
    started = r.json()
    assert started["status"] in ("running", "done") and started["item_count"] == 3

    run = wait_evaluation(api, server.http, ingested.project, started["id"])
    assert run["status"] == "done" and run["done_items"] == 3
    agg = by_evaluator(run)
    assert set(agg) == set(EVALUATORS)
    # the wrong item misses `multiply`: agents right, tools wrong -> score (1 + 0) / 2
    assert agg["expected_agents_tools"]["passed"] == 2
    assert agg["expected_agents_tools"]["pass_rate"] == pytest.approx(2 / 3)
    assert agg["expected_agents_tools"]["mean_score"] == pytest.approx((1 + 1 + 0.5) / 3)
    # get_weather precedes divide in every run
    assert agg["tool_call_accuracy"]["pass_rate"] == 1.0
    assert agg["tool_call_accuracy"]["mean_score"] == 1.0
    # divide(1, 0) was called, not divide(1, 2)
    assert agg["trajectory_match"]["passed"] == 2 and agg["trajectory_match"]["failed"] == 1
    assert run["items"] == {"total": 3, "evaluated": 3, "passed": 2, "failed": 1, "errors": 0}

    results = api.get(f"/evaluations/{run['id']}/results").json()["items"]
    assert len(results) == 9
    failed = api.get(f"/evaluations/{run['id']}/results", params={"failed": "true"}).json()
    assert {(f["item_id"], f["evaluator"]) for f in failed["items"]} == {
        (wrong, "expected_agents_tools"), (wrong, "trajectory_match")}
    agents_tools = next(f for f in failed["items"] if f["evaluator"] == "expected_agents_tools")
    assert "multiply" in agents_tools["explanation"]
    assert agents_tools["score"] == 0.5 and agents_tools["passed"] is False
    assert agents_tools["trace_id"] in ingested.trace_ids(
        ("openinference/react.prebuilt.invoke", "cozeloop_python/react.prebuilt.invoke",
         "cozeloop_js/react.prebuilt.stream"))

    page = api.get(f"/evaluations/{run['id']}/results", params={"limit": 4}).json()
    rest = api.get(f"/evaluations/{run['id']}/results",
                   params={"limit": 100, "cursor": page["next_cursor"]}).json()
    assert page["items"] + rest["items"] == results

    listed = api.get("/evaluations", params={"dataset": name}).json()["items"]
    assert [e["id"] for e in listed] == [run["id"]]


def test_matchers_named_in_json_over_rest_and_the_cli(
        api: httpx.Client, server: ServerProcess, ingested: Ingested,
        react_set: tuple[str, str]) -> None:
    # The wrong item expects divide(1, 2); the runs called divide(1, 0). Comparing only the key
    # path `a` (a matcher the Python API takes as a list) lets it pass.
    name, wrong = react_set
    config = {"mode": "strict", "args_match_overrides": {"divide": ["a"]}}
    r = api.post("/evaluations", json={"dataset": name, "evaluators": [
        {"name": "trajectory_match", "config": config}]})
    run = wait_evaluation(api, server.http, ingested.project, r.json()["id"])
    assert by_evaluator(run)["trajectory_match"]["passed"] == 3
    api.patch(f"/datasets/{name}/items/{wrong}", json={"expectations": {
        **WRONG, "trajectory": [{**step, "args_match": ["a"]} if step["name"] == "divide"
                                else step for step in WRONG["trajectory"]]}})
    done = run_cli("eval", name, "--url", server.http, "--project", ingested.project, "-e",
                   'trajectory_match={"args_match": ["b"]}', keep_trajhub_env=True)
    # the step's own key paths win over the default ones: all three pass
    assert done.returncode == 0, done.stdout + done.stderr
    assert "100.0%" in done.stdout


def test_items_without_a_trajectory_are_error_entries(
        api: httpx.Client, server: ServerProcess, ingested: Ingested) -> None:
    name = "manual-" + uuid.uuid4().hex[:8]
    api.post("/datasets", json={"name": name})
    api.post(f"/datasets/{name}/items", json={"input": "hi", "expectations": GROUND_TRUTH})
    for target, body in (("snapshot", {}), ("live", {"run": "never-ran"})):
        r = api.post("/evaluations", json={"dataset": name, "target": target,
                                           "evaluators": ["expected_agents_tools"], **body})
        assert r.status_code == 202, r.text
        run = wait_evaluation(api, server.http, ingested.project, r.json()["id"])
        assert run["status"] == "done"
        (agg,) = run["aggregates"]
        assert agg["errors"] == 1 and agg["passed"] == 0 and agg["pass_rate"] == 0
        assert agg["mean_score"] is None
        (result,) = api.get(f"/evaluations/{run['id']}/results").json()["items"]
        assert result["passed"] is None and result["score"] is None
        expected = "no trajectory snapshot" if target == "snapshot" \
            else "no trajectory for run 'never-ran'"
        assert expected in result["error"]


def test_bad_evaluation_requests(api: httpx.Client, react_set: tuple[str, str]) -> None:
    name, _ = react_set

    def post(**body: Any) -> httpx.Response:
        return api.post("/evaluations", json={"dataset": name, **body})

    r = post(evaluators=["trajectory_matcher"])
    assert r.status_code == 400 and "unknown evaluator 'trajectory_matcher'" in r.text
    r = post(evaluators=[{"name": "trajectory_match", "config": {"mode": "fuzzy"}}])
    assert r.status_code == 400 and "mode" in r.json()["detail"]
    r = post(evaluators=[{"name": "trajectory_match", "config": {"modes": "strict"}}])
    assert r.status_code == 400 and "unknown option 'modes'" in r.json()["detail"]
    r = post(evaluators=[{"name": "trajectory_match",
                          "config": {"args_match_overrides": {"get_weather": []}}}])
    assert r.status_code == 400
    assert "args_match_overrides.get_weather" in r.json()["detail"]
    assert "empty list" in r.json()["detail"]
    r = post(evaluators=["llm_judge"])
    assert r.status_code == 400 and "not configured" in r.json()["detail"]
    # the schema says at least one (minItems): a body that breaks it is a 422 naming the field
    r = post(evaluators=[])
    assert r.status_code == 422 and "evaluators" in r.text
    r = post(evaluators=["expected_agents_tools"], target="live")
    assert r.status_code == 422 and "run" in r.json()["detail"]
    absent = api.post("/evaluations", json={"dataset": "absent",
                                            "evaluators": ["expected_agents_tools"]})
    assert absent.status_code == 404
    assert api.get("/evaluations/999999999").status_code == 404
    assert api.get("/evaluations/999999999/results").status_code == 404


def test_cli_eval_prints_the_table_and_the_failures(
        server: ServerProcess, ingested: Ingested, react_set: tuple[str, str]) -> None:
    name, wrong = react_set
    args = ["eval", name, "--url", server.http,
            "--project", ingested.project, "-e", "expected_agents_tools",
            "-e", "tool_call_accuracy", "-e", 'trajectory_match={"mode": "strict"}']
    done = run_cli(*args, keep_trajhub_env=True)
    assert done.returncode == 1, done.stderr  # an item failed
    out = done.stdout
    rows = {line.split()[0]: line.split()[1:] for line in out.splitlines()
            if line.split() and line.split()[0] in EVALUATORS}
    # pass rate, mean score, passed, failed, errors
    assert rows["expected_agents_tools"] == ["66.7%", "0.83", "2", "1", "0"]
    assert rows["tool_call_accuracy"] == ["100.0%", "1.00", "3", "0", "0"]
    assert rows["trajectory_match"][0] == "66.7%"
    assert f"item {wrong}" in out
    assert "❌ expected_agents_tools: failed" in out and "multiply" in out
    assert "❌ trajectory_match: failed" in out

    bad = run_cli(*args[:-6], "-e", "nope", keep_trajhub_env=True)
    assert bad.returncode == 2 and "unknown evaluator 'nope'" in bad.stderr


def test_cli_dataset_commands(server: ServerProcess, ingested: Ingested, tmp_path: Path) -> None:
    def cli(*argv: str) -> subprocess.CompletedProcess[str]:
        return run_cli(*argv, "--url", server.http, "--project", ingested.project,
                       keep_trajhub_env=True)

    name = "cli-" + uuid.uuid4().hex[:8]
    assert cli("dataset", "create", name).returncode == 0
    assert cli("dataset", "create", name).returncode == 2
    filled = cli("dataset", "fill", name, "-q", "agent=LangGraph",
                 "-q", "failed_model_steps=false")
    assert filled.returncode == 0 and "added 3 item(s)" in filled.stdout
    refill = cli("dataset", "fill", name, "-q", "agent=LangGraph",
                 "-q", "failed_model_steps=false")
    assert "added 0 item(s); skipped 3" in refill.stdout
    assert f"{name}" in cli("dataset", "list").stdout
    out = tmp_path / "set.jsonl"
    exported = cli("dataset", "export", name, "-o", str(out))
    assert exported.returncode == 0, exported.stderr
    assert len(out.read_bytes().splitlines()) == 3
    copy = name + "-copy"
    imported = cli("dataset", "import", copy, str(out), "--create")
    assert imported.returncode == 0 and "imported 3 item(s)" in imported.stdout
    shown = cli("dataset", "show", copy)
    assert shown.stdout.count("agents LangGraph") == 3
    assert cli("dataset", "rename", copy, copy + "2").returncode == 0
    assert cli("dataset", "delete", copy + "2").returncode == 0
    assert cli("dataset", "show", copy + "2").returncode == 2
