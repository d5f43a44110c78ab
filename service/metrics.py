"""Prometheus metrics, served at `/metrics` by `trajhub serve`.

Where each figure is counted, and why there: `trajhub serve` is one parent process with worker
processes (ingest workers, derivation workers). Rather than prometheus-client's multiprocess mode
(a directory of mmap files shared by every process, to be wiped at each start), everything is
counted in the parent, where the work's results come back:
- requests, latency and in-flight requests: by the parent's HTTP middleware and gRPC handler;
- spans accepted and rejected, the ingest queue, database errors of ingest: in `IngestPool`,
  when a worker's result (or error) returns;
- derivation time and the derivation workers' database errors: each derivation worker sends a
  small message per round through its own pipe, which the parent reads in its supervision loop;
- the derivation backlog (the change queue) and the age of its oldest entry: a query at scrape
  time, because the queue lives in PostgreSQL and several replicas share it; so are the online
  evaluation rules' queue and its oldest run's age;
- rule runs by outcome: by the rule worker, a task of the parent (service/workers/rules.py).
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime

import asyncpg
from prometheus_client import (
    CONTENT_TYPE_LATEST,
    REGISTRY,
    Counter,
    Gauge,
    Histogram,
    generate_latest,
)

from trajhub.storage.database import Connection, is_transient

TRANSPORTS = ("http", "grpc")

REQUESTS = Counter(
    "trajhub_requests", "Requests answered, by transport (http, grpc) and outcome "
    "(ok, client_error, unavailable, server_error)", ["transport", "outcome"])
REQUEST_SECONDS = Histogram(
    "trajhub_request_duration_seconds", "Time from a request's arrival to its answer",
    ["transport"],
    buckets=(0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30))
IN_FLIGHT = Gauge("trajhub_requests_in_flight", "Requests being handled now", ["transport"])
SPANS_ACCEPTED = Counter("trajhub_spans_accepted", "Spans stored, by ingest format",
                         ["format"])
SPANS_REJECTED = Counter("trajhub_spans_rejected",
                         "Spans rejected through OTLP partial success (or Coze Loop's msg), by "
                         "ingest format", ["format"])
LOG_RECORDS_ACCEPTED = Counter("trajhub_log_records_accepted",
                               "OTLP log records stored (a record sent again is counted again)")
LOG_RECORDS_REJECTED = Counter("trajhub_log_records_rejected",
                               "OTLP log records rejected through partial success")
METRIC_POINTS_DROPPED = Counter("trajhub_metric_points_dropped",
                                "OTLP metric data points received and dropped (trajhub keeps "
                                "no metrics; it answers so that an SDK exporting all three "
                                "signals to it logs no error)")
INGEST_QUEUE = Gauge("trajhub_ingest_queue",
                     "Ingest requests handed to the ingest workers and not yet answered")
INGEST_QUEUE_LIMIT = Gauge("trajhub_ingest_queue_limit",
                           "Ingest requests in progress beyond which new ones get 503 / "
                           "UNAVAILABLE (TRAJHUB_MAX_INFLIGHT_REQUESTS)")
INGEST_SATURATED = Counter("trajhub_ingest_saturated",
                           "Ingest requests turned away with 503 / UNAVAILABLE because the "
                           "ingest queue was full")
INGEST_DEFERRED = Counter("trajhub_ingest_deferred",
                          "Ingest requests whose whole traces were queued for the derivation "
                          "workers instead of derived at ingest, because ingest was saturated "
                          "(TRAJHUB_DERIVE_AT_INGEST=auto) or derivation at ingest is off")
DERIVATION_BACKLOG = Gauge("trajhub_derivation_backlog",
                           "Changed traces waiting for their trajectory to be derived")
DERIVATION_BACKLOG_AGE = Gauge("trajhub_derivation_backlog_oldest_seconds",
                               "Age of the oldest change waiting for derivation (0 when none)")
DERIVATION_SECONDS = Histogram(
    "trajhub_derivation_round_duration_seconds",
    "Time a derivation worker took to derive and store one round of changed traces",
    buckets=(0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30))
TRACES_DERIVED = Counter("trajhub_traces_derived", "Traces whose trajectory was (re)derived")
DATABASE_ERRORS = Counter("trajhub_database_errors",
                          "Operations that failed because the database was unreachable or "
                          "refused for a transient reason, by where (ingest, api, derivation, "
                          "rules, alerts)",
                          ["where"])
DATABASE_UP = Gauge("trajhub_database_up",
                    "1 when the last scrape could read the database, else 0")
DATABASE_SHORTAGES = Counter("trajhub_database_shortages",
                             "Failures that showed the database lacks something, by kind "
                             "(disk_full, out_of_memory, too_many_connections, ...)", ["kind"])
# online evaluation rules (service/workers/rules.py, docs/rules.md): counted by the rule
# worker, a task of the main process; the queue is read at scrape time
RULE_RUNS = Counter(
    "trajhub_rule_runs", "Online evaluation rule runs ended or put back, by outcome: scored, "
    "error (an error score: the evaluator failed or the judge's verdict was malformed), "
    "skipped (no longer matching, superseded by a newer revision, or gone), retried (the judge "
    "was unreachable: queued again after a backoff), postponed (the rule's judge-call cap), "
    "lost_claim (another worker took the run over)",
    ["outcome"])
RULE_RUN_SECONDS = Histogram(
    "trajhub_rule_run_duration_seconds", "Time one rule run took, a judge's answer included",
    buckets=(0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 5, 10, 30, 120))
RULE_QUEUE = Gauge("trajhub_rule_queue", "Rule runs queued (due now or later)")
RULE_QUEUE_AGE = Gauge("trajhub_rule_queue_oldest_seconds",
                       "Age of the oldest queued rule run (0 when none)")
RULE_OUTCOMES = ("scored", "error", "skipped", "retried", "postponed", "lost_claim")
# monitoring alerts (service/workers/alerts.py, docs/alerts.md): counted by the alert worker
ALERT_NOTIFICATIONS = Counter(
    "trajhub_alert_notifications", "Alert webhook notifications, by outcome: sent (a 2xx "
    "answer), retried (an attempt failed; sent again after a backoff), failed (given up after "
    "its last attempt), lost_claim (another server had taken it over)", ["outcome"])
ALERT_EVALUATIONS = Counter(
    "trajhub_alert_evaluations", "Alert rule evaluations, by outcome: unchanged, changed (a "
    "new state, notified), lost_claim (another server evaluated it), error", ["outcome"])


def outcome(status: int) -> str:
    """The outcome label of an HTTP status."""
    if status < 400:
        return "ok"
    if status == 503:
        return "unavailable"
    return "client_error" if status < 500 else "server_error"


def observe_request(transport: str, status: int, seconds: float) -> None:
    REQUESTS.labels(transport, outcome(status)).inc()
    REQUEST_SECONDS.labels(transport).observe(seconds)


def watch_ingest_queue(inflight: Callable[[], int], limit: int) -> None:
    INGEST_QUEUE.set_function(lambda: float(inflight()))
    INGEST_QUEUE_LIMIT.set(limit)


async def derivation_backlog(conn: Connection) -> tuple[int, float]:
    """The traces waiting for derivation and the age in seconds of the oldest change (0 when
    none), read now (and set in the gauges)."""
    row = await conn.fetchrow("SELECT count(*) AS n, min(received_at) AS oldest "
                              "FROM trace_changes")
    assert row is not None
    oldest = row["oldest"]
    age = 0.0 if oldest is None else max(0.0, (datetime.now(UTC) - oldest).total_seconds())
    DERIVATION_BACKLOG.set(row["n"])
    DERIVATION_BACKLOG_AGE.set(age)
    return int(row["n"]), age


async def exposition(db: asyncpg.Pool) -> tuple[bytes, str]:
    """The metrics text (and its content type), with the backlog read now; while the database
    cannot be read, the backlog as last read, and `trajhub_database_up` 0."""
    try:
        async with db.acquire(timeout=5) as conn:
            await derivation_backlog(conn)
            rules = await conn.fetchrow(
                "SELECT count(*) AS n, coalesce(extract(epoch FROM now() - "
                "min(enqueued_at)), 0) AS oldest FROM rule_runs")
    except Exception as exc:
        if not is_transient(exc):
            raise
        DATABASE_UP.set(0)
        return generate_latest(REGISTRY), CONTENT_TYPE_LATEST
    DATABASE_UP.set(1)
    assert rules is not None
    RULE_QUEUE.set(rules["n"])
    RULE_QUEUE_AGE.set(max(0.0, float(rules["oldest"])))
    return generate_latest(REGISTRY), CONTENT_TYPE_LATEST


# the labelled series exist (at 0) from the start, so a dashboard sees them before any traffic
for _transport in TRANSPORTS:
    IN_FLIGHT.labels(_transport)
    REQUEST_SECONDS.labels(_transport)
for _where in ("ingest", "api", "derivation", "rules", "alerts"):
    DATABASE_ERRORS.labels(_where)
DATABASE_SHORTAGES.labels("disk_full")
for _outcome in RULE_OUTCOMES:
    RULE_RUNS.labels(_outcome)
for _outcome in ("sent", "retried", "failed", "lost_claim"):
    ALERT_NOTIFICATIONS.labels(_outcome)
for _outcome in ("unchanged", "changed", "lost_claim", "error"):
    ALERT_EVALUATIONS.labels(_outcome)

__all__ = [
    "ALERT_EVALUATIONS",
    "ALERT_NOTIFICATIONS",
    "DATABASE_ERRORS",
    "DATABASE_SHORTAGES",
    "DATABASE_UP",
    "DERIVATION_SECONDS",
    "INGEST_DEFERRED",
    "INGEST_SATURATED",
    "IN_FLIGHT",
    "LOG_RECORDS_ACCEPTED",
    "LOG_RECORDS_REJECTED",
    "METRIC_POINTS_DROPPED",
    "RULE_RUNS",
    "RULE_RUN_SECONDS",
    "SPANS_ACCEPTED",
    "SPANS_REJECTED",
    "TRACES_DERIVED",
    "exposition",
    "observe_request",
    "outcome",
    "watch_ingest_queue",
]
