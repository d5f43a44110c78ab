"""Monitoring's time series (`GET /api/v1/timeseries`, docs/monitoring.md): latency quantiles
from the rollups' buckets are within 5 % of the exact ones; bad input is a 400 that names the
problem; and a project's runs read back through REST, the client and the CLI with the figures
their trajectories hold, in minute, hour and day buckets, grouped and filtered."""

from __future__ import annotations

import math
import random
import time
import uuid

import httpx
import pytest
from fastapi import HTTPException

from tests.cli_runner import run_cli
from tests.harness import ServerProcess, final_trajectory
from tests.otlp_builders import new_span_id, new_trace_id, post_spans, span
from trajhub.client import TrajhubClient
from trajhub.records.timeseries import TimeSeriesQuery
from trajhub.service.api.timeseries import series_filter
from trajhub.storage.timeseries_reads import quantile

HOUR = 3_600_000_000_000


def _bucket(ms: int) -> int:
    return 0 if ms < 1 else 1 + math.floor(math.log(ms) / math.log(1.1))


@pytest.mark.unit
@pytest.mark.parametrize("seed", range(20))
def test_quantiles_from_the_buckets_are_within_five_percent(seed: int) -> None:
    rng = random.Random(seed)
    durations = sorted(int(rng.lognormvariate(7, 2)) + 1 for _ in range(rng.randint(1, 3000)))
    counts = [0] * (max(_bucket(d) for d in durations) + 1)
    for d in durations:
        counts[_bucket(d)] += 1
    for q in (0.5, 0.95, 0.99):
        exact = durations[max(1, math.ceil(q * len(durations))) - 1]
        estimate = quantile(counts, q)
        assert estimate is not None and abs(estimate - exact) <= 0.048 * exact, (q, exact)
    assert quantile([0, 0], 0.5) is None and quantile([3], 0.99) == 0.0


@pytest.mark.unit
@pytest.mark.parametrize(("params", "problem"), [
    ({"start": "2026-01-02T00:00:00Z", "end": "2026-01-01T00:00:00Z"},
     "must be later than start"),
    ({"start": "2026-01-01T00:00:00Z", "end": "2026-01-01T00:00:00Z"},
     "must be later than start"),
    ({"start": "2026-01-01T00:00:00Z", "end": "2026-02-01T00:00:00Z", "bucket": "minute"},
     "44,640 minute buckets; at most 10,000"),
    ({"start": "0", "end": str(2 * 10**18), "bucket": "hour"}, "at most 10,000"),
])
def test_a_bad_range_is_a_400_naming_it(params: dict[str, str], problem: str) -> None:
    with pytest.raises(HTTPException) as raised:
        series_filter("p", TimeSeriesQuery.model_validate(params))
    assert raised.value.status_code == 400 and problem in str(raised.value.detail)


@pytest.mark.unit
def test_the_range_is_rounded_out_to_whole_buckets() -> None:
    f = series_filter("p", TimeSeriesQuery.model_validate(
        {"start": "2026-01-01T10:30:00Z", "end": "2026-01-01T12:00:01Z", "model": "gpt-4o"}))
    assert (f.end_ns - f.start_ns) // HOUR == 3 and f.start_ns % HOUR == 0
    assert f.values == {"model": "gpt-4o"}


def _send_run(server: ServerProcess, project: str, start: int, agent: str, model: str,
              ms: int, error: bool = False, run_name: str | None = None) -> str:
    trace, root = new_trace_id(), new_span_id()
    post_spans(server.http, project, [
        span(trace, f"invoke_agent {agent}", span_id=root, start=start, duration=ms * 1_000_000,
             attributes={"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": agent,
                         **({"trajhub.run": run_name} if run_name else {})}),
        span(trace, "chat", parent=root, start=start + 1000, error=error,
             attributes={"gen_ai.operation.name": "chat", "gen_ai.request.model": model,
                         "gen_ai.usage.input_tokens": 100, "gen_ai.usage.output_tokens": 10}),
    ])
    return trace.hex()


def test_runs_read_back_by_bucket_group_and_filter(server: ServerProcess) -> None:
    project = "ts-" + uuid.uuid4().hex[:8]
    now = time.time_ns()
    hour = now - now % HOUR
    runs = [(hour + 60_000_000_000, "planner", "gpt-4o", 100, False, "nightly"),
            (hour + 61_000_000_000, "planner", "gpt-4o-mini", 2000, True),
            (hour + 180_000_000_000, "writer", "gpt-4o", 300, False),
            (hour - HOUR + 5_000_000_000, "writer", "gpt-4o", 50, False)]
    traces = [_send_run(server, project, *r) for r in runs]
    with httpx.Client() as c:
        for trace in traces:
            final_trajectory(c, server.http, project, trace)
        bad = c.get(f"{server.http}/api/v1/timeseries", params={
            "project": project, "start": "0", "end": "1", "group_by": "colour"})
        assert bad.status_code == 400 and "group_by" in bad.text, bad.text
    start, end = str(hour - HOUR), str(hour + HOUR)
    with TrajhubClient(server.http, project=project) as hub:
        hourly = hub.timeseries(start, end)
        [whole] = hourly.series
        assert whole.group is None
        assert [(p.runs, p.failed_runs) for p in whole.points] == [(1, 0), (3, 1)]
        latest = whole.points[1]
        assert latest.input_tokens == 300 and latest.output_tokens == 30
        assert latest.latency_p50_ms is not None and abs(latest.latency_p50_ms - 300) <= 15
        assert latest.latency_p99_ms is not None and abs(latest.latency_p99_ms - 2000) <= 96

        by_model = hub.timeseries(start, end, group_by="model")
        assert {s.group: sum(p.runs for p in s.points) for s in by_model.series} == {
            "gpt-4o": 3, "gpt-4o-mini": 1}
        minutes = hub.timeseries(start, end, bucket="minute", agent="PLANNER")
        [planner] = minutes.series
        assert [p.runs for p in planner.points] == [2]
        assert planner.points[0].time.endswith(":01:00Z")
        daily = hub.timeseries(start, end, bucket="day", model="gpt-4o-mini")
        assert sum(p.runs for s in daily.series for p in s.points) == 1
        by_run = hub.timeseries(start, end, group_by="run_name")
        assert {s.group: sum(p.runs for p in s.points) for s in by_run.series} == {
            "nightly": 1, None: 3}
        [nightly] = hub.timeseries(start, end, run_name="nightly").series
        assert [p.runs for p in nightly.points] == [1]

        hub.add_score(traces[0], "correctness", 1.0)
        hub.add_score(traces[2], "correctness", 0.5)
        [scored] = hub.timeseries(start, end).series
        [score] = scored.points[1].scores
        assert (score.name, score.count, score.sum, score.mean) == ("correctness", 2, 1.5, 0.75)

    done = run_cli("timeseries", "--url", server.http, "--project", project, "--start", start,
                   "--end", end, "--group-by", "agent")
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[0].split()[:3] == ["AGENT", "TIME", "RUNS"]
    assert sum(1 for line in done.stdout.splitlines() if line.startswith("planner")) == 1
