"""A monitoring alert rule (a row of `GET /api/v1/alerts`, of the `alert_rules` table, and of
`trajhub alerts list`) and one change of its state (`GET /api/v1/alerts/{id}/events`), declared
once (`trajhub.records`).

A rule compares an aggregate of the project's final runs over a window (`METRICS`) with a
warning and an alert threshold, every few seconds; each change of its state is an event, sent
once to the rule's webhook (docs/alerts.md).
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import Field

from trajhub.records import Cli, Example, Record, Stored, json_column
from trajhub.records.times import Created, Updated

#: what a rule may measure over its window, and what each means
METRICS = {
    "error_rate": "the share of runs that failed, 0 to 1",
    "p95_latency_ms": "the 95th percentile of the runs' durations, in ms",
    "cost_usd": "the runs' cost summed, in USD (a window of 3600 s: the cost per hour)",
    "runs": "the number of runs",
    "score_mean": "the mean of the runs' numeric scores named `score_name`",
}
#: the filters a rule may have: what the rollups' contributions hold per run
FILTERS = {
    "run_name": "the run name (its `trajhub.run` attribute), exactly",
    "agent": "one of the run's agents, exactly",
    "model": "one of the run's models, exactly",
    "release": "the run's release (its resource's service.version), exactly",
}
#: a rule's states: resolved (nothing breached; where a rule starts), warning, firing
STATES = ("resolved", "warning", "firing")
NAME_MAX = 100

Metric = Literal["error_rate", "p95_latency_ms", "cost_usd", "runs", "score_mean"]
State = Literal["resolved", "warning", "firing"]


class AlertRule(Record):
    """A monitoring alert rule: an aggregate of the project's final runs over a window, its
    warning and alert thresholds, and the webhook told of each change of its state."""

    id: Annotated[int, Stored(written_by="database"), Cli("ID", right=True), Example(4)] = Field(
        default=0, description="the rule's id")
    name: Annotated[str, Cli("NAME"), Example("errors-prod")] = Field(
        default="", description="the rule's name, unique in its project")
    metric: Annotated[str, Cli("METRIC"), Example("error_rate")] = Field(
        default="", description="what it measures: " + "; ".join(
            f"`{k}` {v}" for k, v in METRICS.items()))
    score_name: Annotated[str | None, Example(None)] = Field(
        default=None, description="for `score_mean`: the score's name; null otherwise")
    condition: Annotated[str, Cli("IF"), Example("above")] = Field(
        default="above", description="`above`: a value over a threshold breaches it; `below`: "
        "a value under it")
    warning_threshold: Annotated[float | None, Cli("WARN", "value", right=True),
                                 Example(0.05)] = Field(
        default=None, description="the state is `warning` past this (null: no warning)")
    alert_threshold: Annotated[float, Cli("ALERT", "value", right=True), Example(0.1)] = Field(
        default=0.0, description="the state is `firing` past this")
    window_seconds: Annotated[int, Cli("WINDOW", right=True), Example(900)] = Field(
        default=0, description="the window measured: the runs that started in the last this "
        "many seconds")
    filter: Annotated[
        dict[str, Any],
        json_column("filter"),
        Cli("FILTER", "clip"),
        Example({"agent": "planner"}),
    ] = Field(default_factory=dict, description="only the runs with these: " + "; ".join(
        f"`{k}` {v}" for k, v in FILTERS.items()) + "; {} for all")
    webhook_url: Annotated[str, Example("https://hooks.example.com/trajhub")] = Field(
        default="", description="where each change of state is POSTed (docs/alerts.md)")
    enabled: Annotated[bool, Example(True)] = Field(
        default=True, description="off: not evaluated")
    muted: Annotated[bool, Cli("MUTED", "yes"), Example(False)] = Field(
        default=False, description="muted: not evaluated, so nothing is sent, until unmuted "
        "(its state stays as it was)")
    state: Annotated[str, Cli("STATE"), Example("firing")] = Field(
        default="resolved", description="`resolved` (nothing breached; where a rule starts), "
        "`warning` or `firing`")
    last_value: Annotated[float | None, Cli("VALUE", "value", right=True), Example(0.25)] = Field(
        default=None, description="the value at the last evaluation (null: nothing to measure "
        "in the window, or not evaluated yet)")
    evaluated_time: Annotated[
        str | None,
        Stored(column="evaluated_ns", written_by="database", convert="time", stored_type=int),
        Example("2026-11-22T10:00:00Z"),
    ] = Field(default=None, description="RFC 3339: the last evaluation (null: none yet)")
    created_time: Created = Field(default="", description="RFC 3339: when it was created")
    updated_time: Updated = Field(default="", description="RFC 3339: when it was last changed")


class AlertEvent(Record):
    """One change of an alert rule's state, and the delivery of its webhook notification."""

    id: Annotated[int, Stored(written_by="database"), Cli("ID", right=True), Example(12)] = Field(
        default=0, description="the event's id")
    rule_id: Annotated[int, Stored(written_by="key"), Example(4)] = Field(
        default=0, description="the rule")
    delivery_id: Annotated[
        str,
        Stored(select="delivery_id::text", written_by="database"),
        Example("5f0c6a52-8d1e-4d5c-9a38-3f2b8f9f3c11"),
    ] = Field(default="", description="the notification's id, the same on every attempt (its "
              "`X-Trajhub-Delivery` header): the receiver's key to drop a repeat")
    state: Annotated[str, Cli("STATE"), Example("firing")] = Field(
        default="", description="the new state")
    previous_state: Annotated[str, Cli("FROM"), Example("resolved")] = Field(
        default="", description="the state before")
    value: Annotated[float | None, Cli("VALUE", "value", right=True), Example(0.25)] = Field(
        default=None, description="the value that changed it (null: nothing to measure)")
    threshold: Annotated[float | None, Example(0.1)] = Field(
        default=None, description="the threshold passed (null when resolved)")
    window_start_time: Annotated[
        str, Stored(column="window_start_ns", convert="time", stored_type=int),
        Example("2026-11-22T09:45:00Z"),
    ] = Field(default="", description="RFC 3339: the window measured, from")
    window_end_time: Annotated[
        str, Stored(column="window_end_ns", convert="time", stored_type=int),
        Example("2026-11-22T10:00:00Z"),
    ] = Field(default="", description="RFC 3339: the window measured, to")
    created_time: Annotated[Created, Cli("WHEN", "when")] = Field(
        default="", description="RFC 3339: when the state changed")
    delivery: Annotated[
        Literal["pending", "delivered", "failed"], Cli("DELIVERY"), Example("delivered"),
    ] = Field(default="pending", description="the notification: `pending` (being sent or "
              "retried), `delivered` (a 2xx answer), `failed` (no 2xx in its attempts)")
    attempts: Annotated[int, Cli("TRIES", right=True), Example(1)] = Field(
        default=0, description="attempts that failed so far")
    last_error: Annotated[str | None, Example(None)] = Field(
        default=None, description="the last failed attempt's reason")
    delivered_time: Annotated[
        str | None,
        Stored(column="delivered_ns", written_by="database", convert="time", stored_type=int),
        Example("2026-11-22T10:00:01Z"),
    ] = Field(default=None, description="RFC 3339: when the receiver answered 2xx")
