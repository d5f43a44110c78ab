"""Run your agent over an evaluation set and evaluate the runs: seed 001's loop (dataset → agent
→ collect → evaluate) with OpenTelemetry doing the collecting, so no event bus of your own.

    from trajhub.service.client.runner import run_dataset

    def agent(item_input):            # your agent, instrumented as usual (OpenInference,
        return graph.invoke(...)       # OpenLLMetry, gen_ai spans, ...)

    summary = run_dataset("http://127.0.0.1:4318", "weather-set", agent, run_name="v2",
                          evaluators=["expected_agents_tools", "tool_call_accuracy"],
                          tracer_provider=provider, project="my-project")

For each item, the helper opens a span carrying `trajhub.dataset_item_id` and `trajhub.run`
around the call; your instrumentation's spans nest under it, so it is the trace's root, which
is where the server's `live` target looks. It then flushes the provider, waits until every
run's trajectory is final, starts the evaluation and waits for its results.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import httpx
from opentelemetry import trace
from opentelemetry.trace import Status, StatusCode, TracerProvider

ITEM_ATTRIBUTE = "trajhub.dataset_item_id"
RUN_ATTRIBUTE = "trajhub.run"


class RunError(Exception):
    """The loop could not complete (server error, timeout); the message says where."""


@dataclass
class ItemRun:
    item_id: str
    trace_id: str
    output: Any = None
    error: str | None = None


@dataclass
class DatasetRun:
    """What `run_dataset` did: one entry per item, and the finished evaluation."""

    run_name: str
    items: list[ItemRun] = field(default_factory=list)
    evaluation: dict[str, Any] = field(default_factory=dict)
    results: list[dict[str, Any]] = field(default_factory=list)


def run_dataset(
    base_url: str,
    dataset: str,
    agent_fn: Callable[[Any], Any],
    run_name: str,
    evaluators: Sequence[str | dict[str, Any]],
    tracer_provider: TracerProvider | None = None,
    project: str | None = None,
    timeout: float = 120,
) -> DatasetRun:
    """Call `agent_fn(item_input)` once per item of `dataset`, traced as run `run_name`, then
    evaluate the runs with `evaluators` (names or {"name", "config"}). An exception from the
    agent is recorded on its span and in the result; the loop goes on with the next item."""
    provider = tracer_provider or trace.get_tracer_provider()
    tracer = provider.get_tracer("trajhub.agent_runner")
    headers = {"trajhub-project": project} if project else {}
    out = DatasetRun(run_name)
    with httpx.Client(base_url=base_url.rstrip("/") + "/api/v1", headers=headers,
                      timeout=30) as client:
        for item in _items(client, dataset):
            with tracer.start_as_current_span(
                    f"dataset item {item['id']}",
                    attributes={ITEM_ATTRIBUTE: item["id"], RUN_ATTRIBUTE: run_name},
            ) as span:
                record = ItemRun(item["id"], format(span.get_span_context().trace_id, "032x"))
                try:
                    record.output = agent_fn(item["input"])
                except Exception as exc:  # the run failed; that is a result, not the end
                    record.error = f"{type(exc).__name__}: {exc}"
                    span.record_exception(exc)
                    span.set_status(Status(StatusCode.ERROR, record.error))
            out.items.append(record)
        flush = getattr(provider, "force_flush", None)
        if flush is not None and not flush():
            raise RunError("the tracer provider did not flush its spans")
        deadline = time.monotonic() + timeout
        for record in out.items:
            _wait_final(client, record.trace_id, deadline)
        started = _check(client.post("/evaluations", json={
            "dataset": dataset, "target": "live", "run": run_name,
            "evaluators": list(evaluators)}))
        out.evaluation = _wait_done(client, started["id"], deadline)
        out.results = _results(client, started["id"])
    return out


def _check(response: httpx.Response) -> Any:
    if response.status_code >= 400:
        raise RunError(f"{response.request.method} {response.request.url.path}: HTTP "
                       f"{response.status_code}: {response.text}")
    return response.json()


def _items(client: httpx.Client, dataset: str) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = []
    cursor: str | None = None
    while True:
        page = _check(client.get(f"/datasets/{dataset}/items",
                                 params={"limit": 1000, **({"cursor": cursor} if cursor else {})}))
        items += page["items"]
        cursor = page["next_cursor"]
        if not cursor:
            return items


def _wait_final(client: httpx.Client, trace_id: str, deadline: float) -> None:
    while True:
        r = client.get(f"/trajectories/{trace_id}")
        if r.status_code == 200 and r.headers.get("x-trajectory-status") == "final":
            return
        if time.monotonic() > deadline:
            raise RunError(f"the trajectory of trace {trace_id} is not final (HTTP "
                           f"{r.status_code}); were its spans exported to this server?")
        time.sleep(0.2)


def _wait_done(client: httpx.Client, evaluation: int, deadline: float) -> dict[str, Any]:
    while True:
        run: dict[str, Any] = _check(client.get(f"/evaluations/{evaluation}"))
        if run["status"] != "running":
            return run
        if time.monotonic() > deadline:
            raise RunError(f"evaluation {evaluation} is still running")
        time.sleep(0.2)


def _results(client: httpx.Client, evaluation: int) -> list[dict[str, Any]]:
    results: list[dict[str, Any]] = []
    cursor: str | None = None
    while True:
        page = _check(client.get(f"/evaluations/{evaluation}/results",
                                 params={"limit": 5000, **({"cursor": cursor} if cursor else {})}))
        results += page["items"]
        cursor = page["next_cursor"]
        if not cursor:
            return results
