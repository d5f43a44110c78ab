"""The LLM judges against scripted OpenAI-compatible judge servers: each server reads the prompt
it receives and refuses (HTTP 400, naming what is missing) one that does not carry what the judge
must see; verdicts are stored; a malformed verdict is an error entry, never a pass; per-evaluation
endpoint, model, temperature and key variable reach the right server, and the server's key never
goes to an endpoint an evaluation chose."""

from __future__ import annotations

import json
import re
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor

from tests.cli_runner import run_cli
from tests.fake_judge import FakeJudge
from tests.harness import ServerProcess, TestDatabase
from tests.test_datasets_support import ingest_all, wait_evaluation
from tests.test_evaluations_live import calculator
from trajhub.client import run_dataset

ROOT = Path(__file__).parent.parent


def verdict_for(body: dict[str, Any]) -> tuple[int, Any]:
    """The scripted judge: which judge is asking is read from the system prompt; what it must
    have been shown is checked in the user prompt."""
    system, user = body["messages"][0]["content"], body["messages"][-1]["content"]
    if "MALFORMED" in user:
        return 200, "The agent did fine overall, I'd say a pass."  # a chatty model
    if '"passed"' in system:  # llm_judge
        return 200, {"score": 0.8, "passed": True, "reason": "sensible tools"}
    if "grade the trajectory" in system:  # trajectory_judge
        calculator_run = "tool add(" in user
        needed = (["tool add("] if calculator_run
                  else ["tool get_weather(", "tool add(", "tool divide(", "ERROR:",
                        "<request>", "<agent final answer>", "<expected steps>"])
        missing = [text for text in needed if text not in user]
        if missing:
            return 400, f"prompt lacks {missing}"
        return 200, {"reasoning": "fetched what was asked, reported the error", "score": 0.9}
    if '"appropriate"' in system:  # tool_choice_judge
        numbers = [int(n) for n in re.findall(r"call (\d+): tool ", user)]
        declared = re.search(r"has (\d+) numbered tool call", user)
        if declared is None or numbers != list(range(1, int(declared.group(1)) + 1)):
            return 400, "prompt does not number the calls"
        names = re.findall(r"call \d+: tool (\w+)\(", user)
        return 200, {
            "calls": [{"call": n, "appropriate": name != "divide",
                       "reasoning": "dividing by zero serves nothing" if name == "divide"
                       else "asked for"} for n, name in zip(numbers, names, strict=True)],
            "missing_tools": [] if numbers else ["add"],
        }
    return 400, "unknown judge prompt"


@pytest.fixture(scope="module")
def judges() -> Iterator[tuple[FakeJudge, FakeJudge]]:
    """(the server-wide judge, another one an evaluation names)"""
    default, other = FakeJudge(verdict_for), FakeJudge(verdict_for)
    yield default, other
    default.close()
    other.close()


@pytest.fixture(scope="module")
def judged_server(database: TestDatabase, judges: tuple[FakeJudge, FakeJudge],
                  tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    proc = ServerProcess.start(database.url, Path(tmp_path_factory.mktemp("judged")),
                               extra_env={"TRAJHUB_JUDGE_URL": judges[0].url,
                                          "TRAJHUB_JUDGE_MODEL": "judge-model",
                                          "TRAJHUB_JUDGE_API_KEY": "sk-test",
                                          "TRAJHUB_JUDGE_KEY_OTHER": "sk-other"})
    yield proc
    proc.stop()


@pytest.fixture(scope="module")
def judged_set(judged_server: ServerProcess) -> Iterator[tuple[httpx.Client, str, str, str]]:
    """(client, project, set name, id of the item made MALFORMED): two LangGraph react runs,
    expectations pre-filled from them; the OpenInference one records LangGraph node metadata,
    the Coze Loop one (made MALFORMED for the judges) does not."""
    ingested = ingest_all(judged_server, "t-judge-" + uuid.uuid4().hex[:8])
    api = httpx.Client(base_url=judged_server.http + "/api/v1",
                       headers={"trajhub-project": ingested.project}, timeout=30)
    name = "judged"
    api.post("/datasets", json={"name": name})
    (with_nodes,) = ingested.traces["openinference/react.prebuilt.invoke"]
    (without,) = ingested.traces["cozeloop_python/react.prebuilt.invoke"]
    r = api.post(f"/datasets/{name}/fill", json={"trace_ids": [with_nodes, without]})
    assert r.status_code == 200 and r.json()["added"] == 2, r.text
    items = api.get(f"/datasets/{name}/items").json()["items"]
    bad = next(item for item in items if item["source_trace_id"] == without)
    api.patch(f"/datasets/{name}/items/{bad['id']}", json={"input": "MALFORMED please"})
    yield api, ingested.project, name, bad["id"]
    api.close()


@pytest.fixture
def fresh_judges(judges: tuple[FakeJudge, FakeJudge]) -> tuple[FakeJudge, FakeJudge]:
    """`judges` with no request recorded yet (the module's earlier tests called them too)."""
    for judge in judges:
        judge.requests.clear()
    return judges


def evaluate(api: httpx.Client, server: ServerProcess, project: str, name: str,
             evaluators: list[Any]) -> tuple[dict[str, Any], dict[tuple[str, str], Any]]:
    r = api.post("/evaluations", json={"dataset": name, "evaluators": evaluators})
    assert r.status_code == 202, r.text
    run = wait_evaluation(api, server.http, project, r.json()["id"])
    assert run["status"] == "done"
    page = api.get(f"/evaluations/{run['id']}/results").json()
    return run, {(r["item_id"], r["evaluator"]): r for r in page["items"]}


def test_llm_judge_verdicts_and_a_malformed_answer(
        judged_server: ServerProcess, fresh_judges: tuple[FakeJudge, FakeJudge],
        judged_set: tuple[httpx.Client, str, str, str]) -> None:
    api, project, name, bad = judged_set
    default, _ = fresh_judges
    run, results = evaluate(api, judged_server, project, name,
                            [{"name": "llm_judge", "config": {"rubric": "Be strict."}}])
    (agg,) = run["aggregates"]
    assert (agg["passed"], agg["failed"], agg["errors"]) == (1, 0, 1)
    assert agg["pass_rate"] == 0.5 and agg["mean_score"] == pytest.approx(0.8)
    good = next(item for item, _ in results if item != bad)
    assert results[(good, "llm_judge")]["passed"] is True
    assert results[(good, "llm_judge")]["reason"]["text"] == "sensible tools"
    assert results[(good, "llm_judge")]["reason"]["model"] == "judge-model"
    assert results[(bad, "llm_judge")]["passed"] is None
    assert "not JSON" in results[(bad, "llm_judge")]["error"]

    assert len(default.requests) == 2
    headers, body = default.requests[0]
    assert headers["authorization"] == "Bearer sk-test"
    assert body["model"] == "judge-model" and body["temperature"] == 0
    assert "Be strict." in body["messages"][0]["content"]
    prompt = " ".join(json.dumps(req["messages"][-1]["content"]) for _, req in default.requests)
    # the prompt carries the trajectory's tool calls and the item's expectations
    assert "get_weather" in prompt and "divide" in prompt and "tool_order" in prompt


def test_trajectory_and_tool_choice_judges_with_per_evaluation_settings(
        judged_server: ServerProcess, fresh_judges: tuple[FakeJudge, FakeJudge],
        judged_set: tuple[httpx.Client, str, str, str]) -> None:
    api, project, name, bad = judged_set
    default, other = fresh_judges
    tool_choice = {"endpoint": other.url, "model": "other-model", "temperature": 0.5,
                   "api_key_env": "TRAJHUB_JUDGE_KEY_OTHER"}
    run, results = evaluate(api, judged_server, project, name, [
        "trajectory_judge", {"name": "tool_choice_judge", "config": tool_choice}])
    good = next(item for item, _ in results if item != bad)

    judged = results[(good, "trajectory_judge")]
    assert judged["error"] is None, judged["error"]  # the judge accepted the prompt
    assert judged["score"] == 0.9 and judged["passed"] is True
    assert judged["reason"]["reasoning"] == "fetched what was asked, reported the error"
    assert judged["reason"]["with_reference"] is True  # the pre-filled expected steps
    choice = results[(good, "tool_choice_judge")]
    assert choice["error"] is None, choice["error"]
    # get_weather, add, divide: the scripted judge finds divide(1, 0) inappropriate
    assert choice["score"] == pytest.approx(2 / 3) and choice["passed"] is False
    assert [c["appropriate"] for c in choice["reason"]["calls"]] == [True, True, False]
    assert choice["reason"]["model"] == "other-model"
    for evaluator in ("trajectory_judge", "tool_choice_judge"):
        assert results[(bad, evaluator)]["passed"] is None
        assert "not JSON" in results[(bad, evaluator)]["error"]

    # each judge went to its own endpoint, with its own model, temperature and key
    assert {body["model"] for _, body in default.requests} == {"judge-model"}
    assert {h["authorization"] for h, _ in default.requests} == {"Bearer sk-test"}
    assert len(other.requests) == 2
    assert {(b["model"], b["temperature"]) for _, b in other.requests} == {("other-model", 0.5)}
    assert {h["authorization"] for h, _ in other.requests} == {"Bearer sk-other"}
    # the stored evaluation names the variable, never the key
    stored = json.dumps(api.get(f"/evaluations/{run['id']}").json())
    assert "TRAJHUB_JUDGE_KEY_OTHER" in stored and "sk-other" not in stored

    # another endpoint without a key variable gets no key: the server's stays with its own URL
    other.requests.clear()
    evaluate(api, judged_server, project, name,
             [{"name": "tool_choice_judge", "config": {"endpoint": other.url}}])
    assert other.requests and all("authorization" not in h for h, _ in other.requests)


def test_bad_judge_configs_are_400(judged_set: tuple[httpx.Client, str, str, str]) -> None:
    api, _, name, _ = judged_set

    def post(evaluator: str, config: dict[str, Any]) -> httpx.Response:
        return api.post("/evaluations", json={"dataset": name, "evaluators": [
            {"name": evaluator, "config": config}]})

    for evaluator, config, message in [
        ("trajectory_judge", {"api_key": "sk-live"}, "raw 'api_key' is not accepted"),
        ("tool_choice_judge", {"api_key_env": "TRAJHUB_JUDGE_KEY_NONE"},
         "no environment variable TRAJHUB_JUDGE_KEY_NONE"),
        ("tool_choice_judge", {"api_key_env": "TRAJHUB_DATABASE_URL"}, "TRAJHUB_JUDGE_KEY_"),
        ("trajectory_judge", {"threshold": 2}, "'threshold'"),
        ("trajectory_judge", {"endpoint": "ftp://judge"}, "'endpoint'"),
        ("llm_judge", {"temp": 1}, "unknown option 'temp'"),
    ]:
        r = post(evaluator, config)
        assert r.status_code == 400 and message in r.json()["detail"], (config, r.text)


def test_cli_runs_the_new_evaluators(judged_server: ServerProcess,
                                     judged_set: tuple[httpx.Client, str, str, str]) -> None:
    _, project, name, _ = judged_set
    done = run_cli("eval", name, "--url", judged_server.http, "--project", project,
                   "-e", 'tool_choice_judge={"threshold": 0.5}', "-e", "graph_trajectory_match",
                   "-e", 'trajectory_judge={"reference": "none"}', keep_trajhub_env=True)
    rows = {line.split()[0]: line.split()[1:] for line in done.stdout.splitlines()
            if line.split()}
    # pass rate, mean score, passed, failed, errors; one item per set is MALFORMED for judges
    assert rows["tool_choice_judge"][2:] == ["1", "0", "1"], done.stdout
    assert rows["trajectory_judge"][2:] == ["1", "0", "1"], done.stdout
    # the pre-filled graph runs match their own run; the Coze Loop run records no node
    # metadata, so there is nothing to expect or match: an error, not a failure
    assert rows["graph_trajectory_match"] == ["50.0%", "1.00", "1", "0", "1"], done.stdout
    assert "no expected graph runs" in done.stdout


def test_run_dataset_with_the_judges(judged_server: ServerProcess) -> None:
    project = "t-judge-live-" + uuid.uuid4().hex[:8]
    provider = TracerProvider()
    provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter(
        endpoint=f"{judged_server.http}/v1/traces", headers={"trajhub-project": project})))
    api = httpx.Client(base_url=judged_server.http + "/api/v1",
                       headers={"trajhub-project": project}, timeout=30)
    name = "calc-judged"
    api.post("/datasets", json={"name": name})
    for question in ("2+3", "boom"):
        assert api.post(f"/datasets/{name}/items", json={"input": question}).status_code == 201
    try:
        run = run_dataset(judged_server.http, name, calculator(provider), run_name="v1",
                          evaluators=["trajectory_judge", "tool_choice_judge"],
                          tracer_provider=provider, project=project, timeout=60)
    finally:
        provider.shutdown()
        api.close()
    results = {(r.evaluator, r.score) for r in run.results if r.error is None}
    # 2+3: add was appropriate (1.0), judged 0.9; boom: no call, the judge names add as
    # missing (0.0), judged 0.9
    assert results == {("trajectory_judge", 0.9), ("tool_choice_judge", 1.0),
                       ("tool_choice_judge", 0.0)}, run.results
