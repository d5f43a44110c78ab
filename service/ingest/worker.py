"""The ingest worker processes: decode, validate and commit one request each call.

Decoding OTLP and converting spans to rows is CPU-bound Python; one asyncio process tops out
well below what PostgreSQL can take, and holds its event loop while it converts (bench/README.md,
"Decoding and storing spans"), so the receivers hand raw bodies to a pool of these processes,
each with its own PostgreSQL connection. A call returns only after the commit, so the
receiver acknowledges only what is durable.

Most requests carry whole traces (an SDK exports a trace's spans together once they end), and
a worker has just decoded them: it derives those traces' trajectories in the same transaction
as their spans, instead of queueing them for the derivation worker to read back, decode and
derive a moment later (service/derivation.py). So derivation scales with the ingest workers
and a trajectory is there when its spans are acknowledged.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
from collections.abc import Coroutine
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any, NamedTuple, TypeVar

import asyncpg

from trajhub.service import derivation, logs
from trajhub.service.dictionaries import DictionaryKeeper
from trajhub.service.errors import BadRequest, IngestError, Unavailable, ingest_error
from trajhub.service.ingest import log_decode
from trajhub.service.ingest.decode import Batch, cozeloop_batch, decompress, otlp_batch, parse_otlp
from trajhub.service.lifeline import die_with_parent
from trajhub.service.projects import InvalidProject, validate_project
from trajhub.service.workers.derivation import BATCH, FILL_WORDS_BATCH, MAX_OPEN_SECONDS
from trajhub.storage import (
    compression,
    compression_dictionaries,
    database,
    derivation_store,
    log_writer,
    search_words,
    span_writer,
)

log = logging.getLogger("trajhub.ingest")

_T = TypeVar("_T")

KIND_OTLP_PROTOBUF = "protobuf"
KIND_OTLP_JSON = "json"
KIND_COZELOOP = "cozeloop"
#: the kinds of the logs and metrics signals (service/ingest/log_decode.py)
OTHER_KINDS = log_decode.LOG_KINDS | log_decode.METRIC_KINDS


@dataclass(frozen=True)
class IngestJob:
    kind: str  # KIND_*
    body: bytes
    content_encoding: str  # "" when already decoded (gRPC)
    project: str | None
    max_bytes: int
    #: derive the traces the request carries whole before committing; False queues them for
    #: the derivation workers (the pool decides, pool.DerivePolicy)
    derive: bool = True


@dataclass(frozen=True)
class IngestResult:
    accepted: int
    rejected: int
    error_message: str
    derived: int = 0  # traces whose trajectory this request stored


class _Worker:
    def __init__(self, database_url: str, settle_seconds: float) -> None:
        self.database_url = database_url
        self.settle = timedelta(seconds=settle_seconds)
        self.loop = asyncio.new_event_loop()
        self.conn: asyncpg.Connection | None = None
        self.known_resources: set[int] = set()
        self.dictionary = DictionaryKeeper(train=True)

    async def _connection(self) -> asyncpg.Connection:
        if self.conn is None or self.conn.is_closed():
            self.conn = await database.connect(self.database_url)
            await span_writer.prepare(self.conn)
        return self.conn

    def _derive(self, batch: Batch, derive: bool
                ) -> dict[derivation.TraceKey, derivation.Result]:
        """The rows of every trace the request carries whole (CPU only, before the
        transaction, so its locks are held briefly); none when `derive` is False."""
        results: dict[derivation.TraceKey, derivation.Result] = {}
        if not derive:
            return results
        received = datetime.now(UTC)
        for key, rows in derivation.whole_traces(batch.rows.values()).items():
            try:
                results[key] = derivation.derive_trace(
                    *key, [r._asdict() for r in rows], batch.resources, received,
                    self.settle, batch.parsed)
            except Exception as exc:  # a bug; the derivation worker derives it instead
                log.exception("trace %s/%s: deriving at ingest failed: %r", *key, exc)
        return results

    async def _write(self, batch: Batch, derived: dict[derivation.TraceKey, derivation.Result]
                     ) -> int:
        new_resources = {
            rid: body for rid, body in batch.resources.items() if rid not in self.known_resources
        }
        conn = await self._connection()
        traces = {(project, trace_id) for project, trace_id, _ in batch.rows}
        stored: list[derivation.TraceKey] = []
        async with conn.transaction():
            if await span_writer.write_spans(conn, batch.rows.values(), new_resources):
                if derived:
                    stored = await derivation_store.claim_whole(
                        conn, {key: r[0].values["span_count"] for key, r in derived.items()})
                    await derivation.store_results(conn, [derived[key] for key in stored])
                await span_writer.queue_changes(conn, traces.difference(stored))
        self.known_resources.update(new_resources)
        try:  # the request is committed: this may not fail it
            await self.dictionary.refresh(conn)
        except Exception as exc:  # the next request finds out whether the database is gone
            log.warning("looking for a compression dictionary failed: %r", exc)
            self._drop_connection()
        return len(stored)

    def write(self, batch: Batch, derive: bool = True) -> int:
        """Store the batch; returns how many traces' trajectories were stored with it."""
        derived = self._derive(batch, derive)
        return self._run(self._write(batch, derived))

    async def _write_logs(self, batch: log_decode.LogBatch) -> None:
        conn = await self._connection()
        async with conn.transaction():
            await log_writer.write_logs(conn, batch.rows, batch.resources)

    def write_logs(self, batch: log_decode.LogBatch) -> None:
        """Store a request's log records."""
        self._run(self._write_logs(batch))

    def _run(self, write: Coroutine[Any, Any, _T]) -> _T:
        """Run a write on this worker's connection; any failure as an IngestError."""
        try:
            return self.loop.run_until_complete(write)
        except Exception as exc:
            # whatever failed, the connection may be mid-operation ("cannot switch to state"):
            # start the next request on a fresh one
            self._drop_connection()
            error = ingest_error(exc)  # transient → 503 / UNAVAILABLE; else logged 500
            # a shortage is logged by the main process, once a minute (service/shortages.py)
            if isinstance(error, Unavailable) and not getattr(error, "shortage", None):
                log.warning("database write failed: %s", exc)
            raise error from None

    def _drop_connection(self) -> None:
        conn, self.conn = self.conn, None
        if conn is not None:
            conn.terminate()

    def ping(self) -> None:
        try:
            self.loop.run_until_complete(self._connection())
        except Exception as exc:
            self._drop_connection()
            raise ingest_error(exc) from None


_worker: _Worker | None = None


def initialize(database_url: str, settle_seconds: float, log_level: int, log_format: str,
               parent_pid: int) -> None:
    """ProcessPoolExecutor initializer: one worker (and one connection) per process."""
    global _worker
    die_with_parent(parent_pid)
    logs.configure(log_level, log_format)
    compression.set_loader(compression_dictionaries.loader(database_url))
    _worker = _Worker(database_url, settle_seconds)


def warm_up() -> int:
    """Connect early, so the first request does not pay for it; returns the pid."""
    assert _worker is not None
    # the first request retries the connection and answers 503 if it must
    with contextlib.suppress(Unavailable):
        _worker.ping()
    return os.getpid()


class DrainRound(NamedTuple):
    """What one round of an idle ingest worker did after a burst (`drain_round`)."""

    #: traces claimed from the derivation queue (0: it is empty)
    derived: int
    #: trajectories finalized
    finalized: int
    #: trajectories whose words for free text were filled (None: the round had other work)
    filled: int | None

    @property
    def words_left(self) -> bool | None:
        """Whether words may be left to fill (a whole batch was filled); None when the round
        did not look."""
        return None if self.filled is None else self.filled == FILL_WORDS_BATCH


async def drain_round(conn: asyncpg.Connection, settle: timedelta) -> DrainRound:
    """Derive up to a derivation worker's round of traces (BATCH) from the derivation queue,
    as that round does, then finalize the settled trajectories; when neither found anything,
    fill the words of up to FILL_WORDS_BATCH stored trajectories, as an idle derivation worker
    does (storage/search_words.py). A long burst leaves every run it stored queued for its
    words, and until they are filled a search checks each such run's text itself, which slows
    a common word's search. Filling beside the derivation worker, on the core that draining
    used, shortens that window (bench/README.md, "Free text"). A round that finalized does not
    fill, so no trajectory's finality waits for a fill."""
    derived = await derivation.derive_round(conn, settle, BATCH)
    finalized = await derivation_store.finalize_settled(conn, MAX_OPEN_SECONDS)
    filled = None
    if not derived and not finalized:
        filled = await search_words.fill(conn, FILL_WORDS_BATCH)
    return DrainRound(derived, finalized, filled)


def derive_queued() -> DrainRound:
    """One `drain_round` on this worker's connection. The pool calls this on idle workers
    after a burst it queued (pool.IngestPool.drain). A request arriving meanwhile finds
    another ingest worker free (at most half of them drain: pool.drainers), so the round need
    not be small: a round of BATCH traces, as the derivation workers' are, spreads its
    statements and finalize pass over more traces, and made pipeline runs faster than smaller
    or larger rounds (bench/README.md, "Adaptive derivation and the drain")."""
    assert _worker is not None, "initialize() was not called in this process"
    worker = _worker

    async def round_() -> DrainRound:
        return await drain_round(await worker._connection(), worker.settle)

    try:
        return worker.loop.run_until_complete(round_())
    except Exception as exc:
        worker._drop_connection()
        raise ingest_error(exc) from None


def _body(job: IngestJob) -> bytes:
    """The request's body, decompressed, once its project (if it names one) is valid."""
    if job.project is not None:
        try:
            validate_project(job.project)
        except InvalidProject as error:
            raise BadRequest(str(error)) from None
    return decompress(job.body, job.content_encoding, job.max_bytes)


def decode(job: IngestJob) -> Batch:
    """The rows a request stores and the spans it rejects; BadRequest when nothing in it is
    usable. No database involved."""
    body = _body(job)
    if job.kind == KIND_COZELOOP:
        return cozeloop_batch(body, job.project)
    rejected: list[str] = []
    request = parse_otlp(body, job.kind, rejected)
    return otlp_batch(request, job.project, rejected)


def ingest(job: IngestJob) -> IngestResult:
    """Decode, validate and commit one request. Raises only IngestError: any other failure
    is classified by `ingest_error`, so no transport answers 500 for a database outage or
    gRPC UNKNOWN for anything."""
    try:
        return _ingest(job)
    except IngestError:
        raise
    except Exception as exc:
        raise ingest_error(exc) from None


def _ingest(job: IngestJob) -> IngestResult:
    assert _worker is not None, "initialize() was not called in this process"
    if job.kind in OTHER_KINDS:
        return _ingest_other(_worker, job)
    batch = decode(job)
    derived = 0
    if batch.rows:
        derived = _worker.write(batch, job.derive)
    elif batch.rejected:
        raise BadRequest(f"every span was invalid; {batch.error_message}")
    return IngestResult(len(batch.rows), batch.rejected, batch.error_message, derived)


def _ingest_other(worker: _Worker, job: IngestJob) -> IngestResult:
    """A request of the logs or metrics signal: log records are stored (as `_ingest` stores
    spans, acknowledged after the commit), metric data points only counted."""
    body = _body(job)
    if job.kind in log_decode.METRIC_KINDS:
        return IngestResult(log_decode.metric_points(
            body, job.kind == log_decode.KIND_METRICS_JSON), 0, "")
    batch = log_decode.decode_logs(body, job.kind == log_decode.KIND_LOGS_JSON, job.project)
    if batch.rows:
        worker.write_logs(batch)
    elif batch.rejected:
        raise BadRequest(f"every log record was invalid; {batch.error_message}")
    return IngestResult(len(batch.rows), batch.rejected, batch.error_message)
