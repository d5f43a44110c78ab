"""The live target through `run_dataset` (service/client/runner.py): a trivial agent traced
with the OTel SDK, exported over OTLP/HTTP to the test server, its runs found by
`trajhub.dataset_item_id` / `trajhub.run` on the root span, then evaluated."""

from __future__ import annotations

import json
import uuid
from typing import Any

import httpx
from opentelemetry.sdk.trace import TracerProvider

from tests.harness import ServerProcess, wait_for
from trajhub.client import run_dataset


def calculator(provider: TracerProvider) -> Any:
    """An agent `calc_agent` in OTel GenAI conventions: one model call, then the tool `add`
    on the two numbers of "a+b"; "boom" raises before any tool runs."""
    tracer = provider.get_tracer("calc")

    def agent(question: str) -> int:
        with tracer.start_as_current_span("invoke_agent calc_agent", attributes={
                "gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "calc_agent"}):
            with tracer.start_as_current_span("chat fake-model", attributes={
                    "gen_ai.operation.name": "chat", "gen_ai.request.model": "fake-model",
                    "gen_ai.usage.input_tokens": 12, "gen_ai.usage.output_tokens": 4}):
                if question == "boom":
                    raise RuntimeError("model unavailable")
            a, b = (int(x) for x in question.split("+"))
            with tracer.start_as_current_span("execute_tool add", attributes={
                    "gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "add",
                    "gen_ai.tool.call.arguments": json.dumps({"a": a, "b": b}),
                    "gen_ai.tool.call.result": str(a + b)}):
                return a + b

    return agent


def expecting_add(a: int, b: int) -> dict[str, Any]:
    return {"agents": ["calc_agent"], "tools": {"calc_agent": ["add"]}, "tool_order": ["add"],
            "trajectory": [{"type": "tool", "name": "add", "args": {"a": a, "b": b}}]}


def test_run_dataset_evaluates_the_live_runs(server: ServerProcess, project: str,
                                             provider: TracerProvider) -> None:
    api = httpx.Client(base_url=server.http + "/api/v1", headers={"trajhub-project": project})
    name = "calc-" + uuid.uuid4().hex[:6]
    api.post("/datasets", json={"name": name})
    ids = {}
    for question, expectations in (("2+3", expecting_add(2, 3)),
                                   ("4+4", expecting_add(4, 5)),  # wrong on purpose
                                   ("boom", expecting_add(1, 1))):
        r = api.post(f"/datasets/{name}/items",
                     json={"input": question, "expectations": expectations})
        assert r.status_code == 201, r.text
        ids[question] = r.json()["id"]

    run = run_dataset(server.http, name, calculator(provider), run_name="v1",
                      evaluators=["expected_agents_tools", "trajectory_match"],
                      tracer_provider=provider, project=project, timeout=30)

    assert [(i.item_id, i.output) for i in run.items] == [
        (ids["2+3"], 5), (ids["4+4"], 8), (ids["boom"], None)]
    assert run.items[2].error == "RuntimeError: model unavailable"
    assert run.evaluation is not None
    assert run.evaluation.status == "done" and run.evaluation.target == "live"
    results = {(r.item_id, r.evaluator): r for r in run.results}
    for evaluator in ("expected_agents_tools", "trajectory_match"):
        assert results[(ids["2+3"], evaluator)].passed is True
        assert results[(ids["boom"], evaluator)].passed is False  # add never ran
    assert results[(ids["4+4"], "expected_agents_tools")].passed is True
    assert results[(ids["4+4"], "trajectory_match")].passed is False  # add(4, 4), not (4, 5)
    # each result points at the trace of its own run
    assert {r.trace_id for r in run.results} == {i.trace_id for i in run.items}
    root = api.get(f"/traces/{run.items[0].trace_id}", params={"view": "flat"}).json()
    attributes = [s.get("attributes", {}) for s in root["spans"]
                  if not s.get("parent_span_id")]
    assert attributes and attributes[0]["trajhub.run"] == "v1"
    assert attributes[0]["trajhub.dataset_item_id"] == ids["2+3"]

    # the same set under another run name that never ran: error entries, not a crash
    r = api.post("/evaluations", json={"dataset": name, "target": "live", "run": "v2",
                                       "evaluators": ["expected_agents_tools"]})
    done = wait_for(lambda: (lambda j: j if j["status"] != "running" else None)(
        api.get(f"/evaluations/{r.json()['id']}").json()), 20, what="evaluation")
    assert done["status"] == "done"
    assert done["aggregates"][0]["errors"] == 3
    api.close()
