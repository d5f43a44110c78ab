"""Run your agent over a dataset and evaluate the runs: seed 001's loop (dataset → agent
→ collect → evaluate; docs/evaluators.md) with OpenTelemetry doing the collecting, so no event
bus of your own.

    from trajhub.client import run_dataset

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
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from trajhub.service.client.api import ApiError, TrajhubClient, TrajhubError
from trajhub.service.client.models import Evaluation, EvaluationResult

if TYPE_CHECKING:
    from opentelemetry.trace import TracerProvider

ITEM_ATTRIBUTE = "trajhub.dataset_item_id"
RUN_ATTRIBUTE = "trajhub.run"


class RunError(TrajhubError):
    """The loop could not complete (spans not flushed, a timeout); the message says where."""


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
    evaluation: Evaluation | None = None
    results: list[EvaluationResult] = field(default_factory=list)


def run_dataset(
    base_url: str,
    dataset: str,
    agent_fn: Callable[[Any], Any],
    run_name: str,
    evaluators: Sequence[str | Mapping[str, Any]],
    tracer_provider: TracerProvider | None = None,
    project: str | None = None,
    timeout: float = 120,
    api_key: str | None = None,
) -> DatasetRun:
    """Call `agent_fn(item_input)` once per item of `dataset`, traced as run `run_name`, then
    evaluate the runs with `evaluators` (names or {"name", "config"}). An exception from the
    agent is recorded on its span and in the result; the loop goes on with the next item.
    Server errors raise `ApiError` / `ServerUnreachable`, the loop's own `RunError`.

    `api_key` is sent to the REST API (a `read` key suffices); the spans go through your own
    exporter, which sends its key itself (e.g. with
    `OTEL_EXPORTER_OTLP_HEADERS=authorization=Bearer%20<key>` of an `ingest` key, or one
    `admin` key for both).

    Needs the OpenTelemetry API (`opentelemetry-api`, which your instrumentation brings; the
    client alone installs without it: `trajhub-client[otel]`)."""
    # imported here so that the rest of the client works without OpenTelemetry installed
    from opentelemetry import trace
    from opentelemetry.trace import Status, StatusCode

    provider = tracer_provider or trace.get_tracer_provider()
    tracer = provider.get_tracer("trajhub.agent_runner")
    out = DatasetRun(run_name)
    with TrajhubClient(base_url, project=project, api_key=api_key, timeout=30) as client:
        for item in list(client.iter_items(dataset)):
            with tracer.start_as_current_span(
                    f"dataset item {item.id}",
                    attributes={ITEM_ATTRIBUTE: item.id, RUN_ATTRIBUTE: run_name},
            ) as span:
                record = ItemRun(item.id, format(span.get_span_context().trace_id, "032x"))
                try:
                    record.output = agent_fn(item.input)
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
        started = client.create_evaluation(dataset, evaluators, target="live", run=run_name)
        out.evaluation = client.wait_evaluation(
            started.id, timeout=max(0.0, deadline - time.monotonic()), poll=0.2)
        out.results = list(client.iter_results(started.id))
    return out


def _wait_final(client: TrajhubClient, trace_id: str, deadline: float) -> None:
    while True:
        try:
            if client.get_trajectory(trace_id).final:
                return
            state = "open"
        except ApiError as exc:
            if exc.status != 404:
                raise
            state = "not there"
        if time.monotonic() > deadline:
            raise RunError(f"the trajectory of trace {trace_id} is not final ({state}); were "
                           "its spans exported to this server?")
        time.sleep(0.2)
