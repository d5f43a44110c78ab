"""Regression reports over live runs: two runs of a dataset (run_dataset, an agent in OTel
GenAI conventions exported by the OTel SDK), each evaluated, compared by run name and by
evaluation id."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import httpx
import pytest
from opentelemetry.sdk.trace import TracerProvider

from tests.harness import ServerProcess
from tests.test_replay_api import trajhub_cli
from trajhub.service.client.runner import DatasetRun, run_dataset

# gpt-4o-mini list price (openai.com/api/pricing): $0.15 / 1M input, $0.60 / 1M output tokens
IN_USD, OUT_USD = 0.15e-6, 0.60e-6


def calculator(provider: TracerProvider, second_thoughts: bool) -> Callable[[str], int]:
    """`calc_agent`: a model call (12 in / 4 out tokens), then `add`. With second thoughts it
    asks the model again and repeats the call for "2+3" — two extra steps, 16 extra tokens."""
    tracer = provider.get_tracer("calc")

    def chat() -> None:
        with tracer.start_as_current_span("chat gpt-4o-mini", attributes={
                "gen_ai.operation.name": "chat", "gen_ai.request.model": "gpt-4o-mini",
                "gen_ai.usage.input_tokens": 12, "gen_ai.usage.output_tokens": 4}):
            pass

    def add(a: int, b: int) -> int:
        with tracer.start_as_current_span("execute_tool add", attributes={
                "gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "add",
                "gen_ai.tool.call.arguments": json.dumps({"a": a, "b": b}),
                "gen_ai.tool.call.result": str(a + b)}):
            return a + b

    def agent(question: str) -> int:
        with tracer.start_as_current_span("invoke_agent calc_agent", attributes={
                "gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "calc_agent"}):
            a, b = (int(x) for x in question.split("+"))
            chat()
            result = add(a, b)
            if second_thoughts and question == "2+3":
                chat()
                result = add(a, b)
            return result

    return agent


def two_runs(server: ServerProcess, project: str, provider: TracerProvider
             ) -> tuple[list[str], DatasetRun, DatasetRun]:
    """The set `sums` ("2+3", "4+5": its item ids) run as `v1` by the calculator, then as `v2`
    with second thoughts, each evaluated by `efficiency` (at most 2 steps)."""
    api = f"{server.http}/api/v1"
    with httpx.Client(headers={"trajhub-project": project}, timeout=30) as c:
        assert c.post(f"{api}/datasets", json={"name": "sums"}).status_code == 201
        ids = [c.post(f"{api}/datasets/sums/items", json={"input": q}).json()["id"]
               for q in ("2+3", "4+5")]
    evaluators: list[str | dict[str, Any]] = [{"name": "efficiency", "config": {"max_steps": 2}}]
    v1 = run_dataset(server.http, "sums", calculator(provider, False), "v1", evaluators,
                     tracer_provider=provider, project=project)
    v2 = run_dataset(server.http, "sums", calculator(provider, True), "v2", evaluators,
                     tracer_provider=provider, project=project)
    return ids, v1, v2


def test_regression_report_by_run_name_and_by_evaluation(
        server: ServerProcess, project: str, provider: TracerProvider) -> None:
    ids, v1, v2 = two_runs(server, project, provider)
    api = f"{server.http}/api/v1"
    with httpx.Client(headers={"trajhub-project": project}, timeout=30) as c:
        by_name = c.post(f"{api}/regressions", json={
            "dataset": "sums", "baseline": {"run": "v1"}, "candidate": {"run": "v2"}})
        assert by_name.status_code == 200, by_name.text
        by_evaluation = c.post(f"{api}/regressions", json={
            "baseline": {"evaluation": v1.evaluation.id},
            "candidate": {"evaluation": v2.evaluation.id}})
        assert by_evaluation.status_code == 200, by_evaluation.text
        bad = c.post(f"{api}/regressions", json={"baseline": {"run": "v1"},
                                                 "candidate": {"run": "v2"}})
        assert bad.status_code == 422 and "dataset" in bad.text
        both = c.post(f"{api}/regressions", json={
            "dataset": "sums", "baseline": {"run": "v1", "evaluation": 1},
            "candidate": {"run": "v2"}})
        assert both.status_code == 422 and "exactly one" in both.text
        missing = c.post(f"{api}/regressions", json={
            "baseline": {"evaluation": 999999}, "candidate": {"evaluation": 999999}})
        assert missing.status_code == 404

    for report in (by_name.json(), by_evaluation.json()):
        assert report["dataset"] == "sums"
        assert report["baseline"]["evaluation"] == v1.evaluation.id
        assert report["candidate"]["evaluation"] == v2.evaluation.id
        items = {i["item_id"]: i for i in report["items"]}
        assert list(items) == ids
        longer, same = items[ids[0]], items[ids[1]]
        assert longer["baseline_trace_id"] == v1.items[0].trace_id
        assert longer["candidate_trace_id"] == v2.items[0].trace_id
        assert longer["deltas"]["path_length"] == 2 and longer["deltas"]["tool_calls"] == 1
        assert longer["deltas"]["tokens"] == 16 and longer["deltas"]["retries"] == 0
        assert longer["deltas"]["cost_usd"] == pytest.approx(12 * IN_USD + 4 * OUT_USD)
        assert longer["baseline"]["cost_usd"] == pytest.approx(12 * IN_USD + 4 * OUT_USD)
        # model, add — then the candidate asks the model again
        assert longer["first_divergence"]["position"] == 2
        assert longer["first_divergence"]["op"] == "inserted"
        assert longer["first_divergence"]["b"]["type"] == "model"
        assert longer["quality"]["efficiency"]["baseline_passed"] is True
        assert longer["quality"]["efficiency"]["candidate_passed"] is False
        assert same["first_divergence"] is None and same["distance"] == 0
        assert same["deltas"]["path_length"] == 0 and same["deltas"]["cost_usd"] == 0
        assert same["quality"]["efficiency"]["score_delta"] == 0
        verdicts = {v["metric"]: v for v in report["verdicts"]}
        assert (verdicts["path_length"]["verdict"], verdicts["path_length"]["worse"],
                verdicts["path_length"]["same"]) == ("worse", 1, 1)
        assert verdicts["cost_usd"]["verdict"] == "worse"
        assert verdicts["failed_steps"] == {"metric": "failed_steps", "verdict": "same",
                                            "better": 0, "same": 2, "worse": 0, "missing": 0}
        assert verdicts["efficiency.passed"]["verdict"] == "worse"
        assert verdicts["efficiency.passed"]["worse"] == 1

    table = trajhub_cli("regress", "v1", "v2", "--dataset", "sums", "--url", server.http,
                        "--project", project)
    rows = {line.split()[0]: line.split() for line in table.splitlines() if line.strip()}
    assert rows["path_length"][1:] == ["worse", "0", "1", "1", "0"]
    assert rows[ids[0]][1:5] == ["+2", "+1", "+0", "+16"]
    assert "#2 inserted" in " ".join(rows[ids[0]])
    assert rows[ids[1]][-1] == "-"
