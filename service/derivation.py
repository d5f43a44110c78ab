"""Spans → the rows a trace's derivation stores: its trace-list row and its trajectory.

Two places derive: the ingest workers, for the traces a request carries whole (they have just
decoded those spans), and the derivation worker, for every other trace that got spans (it reads
them back from `spans`). Both build the same rows here and store them with `store_results`, so
a trajectory does not depend on which of the two derived it.
"""

from __future__ import annotations

import contextlib
import logging
from collections import defaultdict
from collections.abc import Iterable, Iterator, Mapping, Sequence
from datetime import datetime, timedelta
from typing import Any

import orjson
from opentelemetry.proto.trace.v1.trace_pb2 import Span as OtlpSpan

from trajhub.evaluators.pricing import usage_cost, usage_sums
from trajhub.normalizers import NORMALIZER_VERSION, derive, root_ended
from trajhub.normalizers.item_fields import run_texts
from trajhub.normalizers.log_events import attach
from trajhub.normalizers.model import STATUS_ERROR, Span
from trajhub.normalizers.playback import model_usage
from trajhub.normalizers.run_context import RunContext, preview, run_context
from trajhub.normalizers.run_labels import run_labels
from trajhub.normalizers.trajectory import trajectory_to_dict
from trajhub.records import Record, write_values
from trajhub.records.traces import TraceSummary
from trajhub.records.trajectories import TrajectorySummary
from trajhub.service import stored_trajectory
from trajhub.service.heap import collector_paused, release_free_memory
from trajhub.service.prices import derived_prices
from trajhub.service.stored_logs import log_events
from trajhub.service.stored_spans import to_model
from trajhub.storage import derivation_store, trace_reads
from trajhub.storage.attribute_keys import trace_attribute_keys
from trajhub.storage.database import Connection, RowMapping, is_transient
from trajhub.storage.derivation_store import TraceWrite, TrajectoryWrite
from trajhub.storage.pgtext import pg_text, pg_texts
from trajhub.storage.span_writer import SpanWrite
from trajhub.storage.stored_documents import pack

log = logging.getLogger("trajhub.derivation")

TraceKey = tuple[str, str]  # (project, trace_id)
Result = tuple[TraceWrite, TrajectoryWrite]


def _pg(value: Any) -> Any:
    """A written value fit for PostgreSQL text (NUL replaced; the spans' raw bytes keep the
    original): text, lists of text and optional text by their value; others as they are."""
    if isinstance(value, str):
        return pg_text(value)
    if isinstance(value, (list, tuple)) and all(isinstance(v, str) for v in value):
        return pg_texts(value)
    return value


def _written(record: type[Record], summary: object | None, given: Mapping[str, Any]
             ) -> dict[str, Any]:
    """Every column the record's declaration has the derivation write, made fit for
    PostgreSQL: a field filled by the normalizer comes from its summary by the declared name,
    one filled here from `given`."""
    return {c: _pg(v) for c, v in write_values(record, summary, given).items()}


def trace_row(project: str, trace_id: str, rows: Sequence[RowMapping],
              last_received: datetime) -> TraceWrite:
    """The trace list's row, from the stored span columns (already fit for PostgreSQL), so a
    trace is listed even when its spans cannot be derived."""
    ids = {r["span_id"] for r in rows}
    roots = sorted((r for r in rows if r["parent_span_id"] not in ids),
                   key=lambda r: (r["start_ns"], r["end_ns"], r["span_id"]))
    root = roots[0] if roots else min(rows, key=lambda r: (r["start_ns"], r["span_id"]))
    return TraceWrite(project, trace_id, write_values(TraceSummary, None, {
        "root_span_id": root["span_id"], "root_name": root["name"],
        "service_name": root["service_name"], "start_ns": min(r["start_ns"] for r in rows),
        "end_ns": max(r["end_ns"] for r in rows), "span_count": len(rows),
        "error_count": sum(1 for r in rows if r["status_code"] == STATUS_ERROR),
        "last_received_at": last_received, "attribute_keys": trace_attribute_keys(rows)}))


def failed_trajectory(project: str, trace_id: str, settle_at: datetime, error: BaseException,
                      ended: bool = True, start_ns: int = 0,
                      context: RunContext | None = None) -> TrajectoryWrite:
    """The row recording that this trace's trajectory could not be derived, and why."""
    context = context or RunContext(None, None, None)
    return TrajectoryWrite(project, trace_id, settle_at, ended, None, None, [], _written(
        TrajectorySummary, None, {
            "normalizer_version": NORMALIZER_VERSION,
            "derivation_error": pg_text(f"{type(error).__name__}: {error}")[:2000],
            "start_ns": start_ns, "service": context.service,
            "session_id": context.session_id, "user_id": context.user_id}))


def trajectory_row(project: str, trace_id: str, spans: list[Span], settle_at: datetime
                   ) -> TrajectoryWrite:
    """The derived trajectory, its text made fit for PostgreSQL (NUL replaced; the spans'
    raw bytes keep the original). The summary columns are the normalizer's summary, as
    trajhub.records.trajectories declares them. `spans` is emptied once derived: what is
    stored needs no more of them, and a large trace's are tens of MiB (docs/large-traces.md)."""
    context = run_context(spans)
    labels = run_labels(spans)
    ended = root_ended(spans)
    try:
        d = derive(spans)
    except Exception as exc:
        log.warning("trace %s/%s: derivation failed: %r", project, trace_id, exc)
        return failed_trajectory(project, trace_id, settle_at, exc, ended,
                                 min(s.start_ns for s in spans), context)
    spans.clear()
    s = d.summary
    user_text, answer = run_texts(s.root_input, s.root_output)
    explanation = orjson.dumps(d.explanation).decode()  # orjson serializes dataclasses natively
    usage = model_usage(d.trajectory)
    cost = usage_cost(derived_prices(), usage)
    values = _written(TrajectorySummary, s, {
        "normalizer_version": NORMALIZER_VERSION, "derivation_error": None,
        "model_usage": orjson.dumps(usage).decode(),
        "usage_sums": orjson.dumps(usage_sums(usage)).decode(),
        # monitoring's rollups (storage/rollups.py)
        "run_name": labels.run_name, "release": labels.release,
        "prompt_version": labels.prompt_version,
        "cache_read_tokens": cost.cached_input_tokens,
        "cache_write_tokens": cost.cache_write_tokens,
        "reasoning_tokens": cost.reasoning_tokens, "derived_usd": cost.usd,
        "service": context.service, "session_id": context.session_id,
        "user_id": context.user_id,
        # what a person reads: the user's text and the answer, not the message JSON
        "input_preview": preview(user_text or ""), "output_preview": preview(answer or "")})
    # orjson's bytes are compressed as they are, not through `pack(pg_text(…))`: JSON text
    # holds no NUL (orjson writes U+0000 as the escape \u0000, as JSON requires of control
    # characters), so pg_text would change nothing, at the cost of two more copies
    document, chunks = stored_trajectory.pack(trajectory_to_dict(d.trajectory), d.trajectory)
    return TrajectoryWrite(
        project=project, trace_id=trace_id, settle_at=settle_at, root_ended=ended,
        document=document, explanation=pack(pg_text(explanation)),
        warnings=pg_texts(d.warnings), chunks=chunks, values=values)


def _drained(rows: list[RowMapping]) -> Iterator[RowMapping]:
    """`rows` in order, each let go by the list as it is taken (the list ends empty)."""
    rows.reverse()
    while rows:
        yield rows.pop()


def derive_trace(project: str, trace_id: str, rows: list[RowMapping],
                 envelopes: Mapping[int, bytes], last_received: datetime, settle: timedelta,
                 parsed: Mapping[tuple[str, str, str], OtlpSpan] | None = None,
                 logs: Sequence[bytes] = ()) -> Result:
    """Both rows of one trace from its span rows; never raises for bad spans (the trajectory
    records why it could not be derived). `parsed`: OTLP spans already decoded, by key.
    `logs`: the stored bodies of the trace's log records that name a span, which become those
    spans' events (normalizers/log_events.py). `rows` is emptied as its spans are read: each
    row is let go once it is a span model, so a large trace's rows and models are not all held
    at once (docs/large-traces.md)."""
    summary = trace_row(project, trace_id, rows, last_received)
    settle_at = last_received + settle
    try:
        spans = to_model(_drained(rows), envelopes, parsed)
        if logs:
            spans = attach(spans, log_events(logs))
    except Exception as exc:  # spans that do not read back: recorded, not fatal
        log.warning("trace %s/%s: spans unreadable: %r", project, trace_id, exc)
        return summary, failed_trajectory(project, trace_id, settle_at, exc,
                                          start_ns=summary.start_ns)
    return summary, trajectory_row(project, trace_id, spans, settle_at)


def whole_traces(rows: Iterable[SpanWrite]) -> dict[TraceKey, list[SpanWrite]]:
    """The traces whose spans form one complete tree among `rows`: exactly one root (no
    parent) and every other span's parent present. OTel SDKs export a span when it ends, so a
    request holding a whole tree usually holds the whole trace; a span that arrives later for
    one of them is queued and the trace derived again."""
    by_trace: dict[TraceKey, list[SpanWrite]] = defaultdict(list)
    for row in rows:
        by_trace[(row.project, row.trace_id)].append(row)
    whole: dict[TraceKey, list[SpanWrite]] = {}
    for key, spans in by_trace.items():
        ids = {s.span_id for s in spans}
        roots = [s for s in spans if not s.parent_span_id]
        if len(roots) == 1 and all(s.parent_span_id in ids for s in spans if s is not roots[0]):
            whole[key] = spans
    return whole


async def store_results(conn: Connection, results: Sequence[Result]) -> None:
    """Store every result at once (inside the caller's transaction); when the database refuses
    the batch for a reason that is not transient, store trace by trace, and record a trace the
    database refuses as failed. Transient faults propagate: the caller's round is retried."""
    try:
        async with conn.transaction():  # a savepoint
            await derivation_store.store(conn, [r[0] for r in results], [r[1] for r in results])
        return
    except Exception as exc:
        if is_transient(exc):
            raise
    for summary, trajectory in results:
        project, trace_id = summary.project, summary.trace_id
        try:
            async with conn.transaction():
                await derivation_store.store(conn, [summary], [trajectory])
            continue
        except Exception as exc:
            if is_transient(exc):
                raise
            log.error("trace %s/%s: the database refused its results: %r",
                      project, trace_id, exc)
            failure = failed_trajectory(project, trace_id, trajectory.settle_at, exc,
                                        start_ns=summary.start_ns)
        try:
            async with conn.transaction():
                await derivation_store.store(conn, [], [failure])
        except Exception as exc:
            if is_transient(exc):
                raise
            log.error("trace %s/%s: cannot record the failure either, skipped: %r",
                      project, trace_id, exc)


#: a round that reads this many spans or more derives with the cyclic garbage collector paused
#: and gives its freed memory back (service/heap.py)
LARGE_ROUND_SPANS = 10_000


#: a large trace (this many spans or more) whose spans are still arriving, the latest less
#: than QUIET_SECONDS ago, is derived once they pause, unless its trajectory is older than
#: FRESH_SECONDS (docs/large-traces.md §2): deriving it takes seconds, and a derivation begun
#: while its spans arrive is stale when it ends, yet the one with the last spans waits for it
LARGE_TRACE_SPANS = 1000
QUIET_SECONDS = 0.5
FRESH_SECONDS = 10.0


async def derive_round(conn: Connection, settle: timedelta, batch: int) -> int:
    """Derive up to `batch` queued traces from their stored spans, in one transaction on
    `conn`; returns how many were derived. The derivation workers' round, also run by idle
    ingest workers after a burst (service/ingest/pool.py, `drain`)."""
    async with conn.transaction():
        claimed = await derivation_store.claim_changes(conn, batch)
        if not claimed:
            return 0
        later = await derivation_store.still_arriving(conn, claimed, QUIET_SECONDS,
                                                      FRESH_SECONDS, LARGE_TRACE_SPANS)
        if later:
            await derivation_store.requeue(
                conn, [c for c in claimed if (c.project, c.trace_id) in later])
            claimed = [c for c in claimed if (c.project, c.trace_id) not in later]
            if not claimed:
                return 0
        rows = await derivation_store.load_spans(conn, claimed)
        logs: dict[tuple[str, str], list[bytes]] = defaultdict(list)
        for r in await derivation_store.load_logs(conn, claimed):
            logs[(r["project"], r["trace_id"])].append(r["body"])
        large = len(rows) >= LARGE_ROUND_SPANS
        envelopes = await trace_reads.resources(
            conn, sorted({r["resource_id"] for r in rows if r["resource_id"] is not None}))
        by_trace: dict[tuple[str, str], list[RowMapping]] = defaultdict(list)
        for r in rows:
            by_trace[(r["project"], r["trace_id"])].append(r)
        del rows  # each trace's rows go as it is derived (derive_trace)
        with collector_paused() if large else contextlib.nullcontext():
            results = [derive_trace(c.project, c.trace_id, trace_rows, envelopes,
                                    c.last_received_at, settle,
                                    logs=logs.pop((c.project, c.trace_id), ()))
                       for c in claimed
                       if (trace_rows := by_trace.pop((c.project, c.trace_id), None))]
        if large:
            # what deriving freed (span models, the trajectory, its JSON) goes back before
            # the statements' buffers are built, and what storing freed after
            release_free_memory()
        await store_results(conn, results)
        del results
    if large:
        release_free_memory()
    return len(claimed)
