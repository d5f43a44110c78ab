"""Monitoring's time series as the REST API answers it (`GET /api/v1/timeseries`), read from the
rollups kept as runs become final (docs/monitoring.md)."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field

from trajhub.records.examples import example_config
from trajhub.records.query_types import Text, TimeText

Bucket = Literal["minute", "hour", "day"]
GroupBy = Literal["run_name", "model", "agent", "release", "prompt_version"]
#: the filters, each a rollup label (the trajectory list's other filters are not)
FILTERS = ("run_name", "agent", "model", "release", "prompt_version")
#: the width of each bucket in nanoseconds (a day is a UTC day)
BUCKET_NS: dict[str, int] = {"minute": 60_000_000_000, "hour": 3_600_000_000_000,
                             "day": 86_400_000_000_000}
#: the most buckets one answer may span
MAX_POINTS = 10_000
#: the quantiles each point gives, within 5 % (docs/monitoring.md)
QUANTILES = {"p50": 0.5, "p95": 0.95, "p99": 0.99}


class TimeSeriesQuery(BaseModel):
    """The query parameters of `GET /api/v1/timeseries`."""

    model_config = ConfigDict(extra="ignore", frozen=True)

    start: TimeText = Field(description="the range's start (RFC 3339 or Unix ns), rounded "
                            "down to its bucket")
    end: TimeText = Field(description="the range's end (RFC 3339 or Unix ns), exclusive, "
                          "rounded up to its bucket; later than `start`")
    bucket: Bucket = Field("hour", description="each point's width: `minute`, `hour` or "
                           f"`day` (UTC); at most {MAX_POINTS:,} buckets in the range")
    group_by: GroupBy | None = Field(None, description="one series per value of this label; "
                                     "a run of several models or agents counts in each of "
                                     "theirs. Without it: one series of every run")
    run_name: Text | None = Field(None, description="runs of this run name (their "
                                  "`trajhub.run` attribute)")
    agent: Text | None = Field(None, description="runs with an agent (or graph) step of this "
                               "name (case-insensitive)")
    model: Text | None = Field(None, description="runs that called this model "
                               "(case-insensitive)")
    release: Text | None = Field(None, description="runs of this release (the resource's "
                                 "service.version)")
    prompt_version: Text | None = Field(None, description="runs of this prompt version")


class TimeSeriesScore(BaseModel):
    name: Annotated[str, Field(description="the score's name")]
    count: int = Field(description="the numeric values of this score on the bucket's runs")
    sum: float = Field(description="their sum")
    mean: float | None = Field(description="sum / count; null when count is 0")


_POINT = {"time": "2026-11-22T10:00:00Z", "runs": 12, "failed_runs": 1,
          "latency_p50_ms": 2103.4, "latency_p95_ms": 5210.0, "latency_p99_ms": 8120.9,
          "input_tokens": 15600, "output_tokens": 2280, "cache_read_tokens": 0,
          "cache_write_tokens": 0, "reasoning_tokens": 0, "cost_usd": 0.0037,
          "scores": [{"name": "correctness", "count": 3, "sum": 2.5, "mean": 0.8333}]}


class TimeSeriesPoint(BaseModel):
    model_config = example_config(_POINT)

    time: str = Field(description="RFC 3339: the bucket's start")
    runs: int = Field(description="runs that started in the bucket and are final")
    failed_runs: int = Field(description="those of them with an error (`has_error`)")
    latency_p50_ms: float | None = Field(description="the runs' median duration in "
                                         "fractional milliseconds, within 5 %; null without "
                                         "runs")
    latency_p95_ms: float | None = Field(description="their 95th percentile in fractional "
                                         "milliseconds, within 5 %")
    latency_p99_ms: float | None = Field(description="their 99th percentile in fractional "
                                         "milliseconds, within 5 %")
    input_tokens: int
    output_tokens: int
    cache_read_tokens: int
    cache_write_tokens: int
    reasoning_tokens: int
    cost_usd: float = Field(description="the runs' model calls priced when each run was "
                            "derived (the trajectory list prices when read)")
    scores: list[TimeSeriesScore] = Field(description="per score name, by name")


class TimeSeriesGroup(BaseModel):
    group: str | None = Field(description="the `group_by` label's value; null for the runs "
                              "without one, and for the one series when not grouped")
    points: list[TimeSeriesPoint] = Field(description="the buckets holding runs, oldest first (a "
                                    "bucket without runs has no point)")


class TimeSeries(BaseModel):
    model_config = example_config({
        "bucket": "hour", "start_time": "2026-11-22T10:00:00Z",
        "end_time": "2026-11-22T12:00:00Z", "group_by": "model",
        "series": [{"group": "gpt-4o-mini", "points": [_POINT]}]})

    bucket: Bucket
    start_time: str = Field(description="RFC 3339: the range's start, rounded down")
    end_time: str = Field(description="RFC 3339: the range's end, rounded up")
    group_by: GroupBy | None
    series: list[TimeSeriesGroup] = Field(description="by group, the runs without one last")
