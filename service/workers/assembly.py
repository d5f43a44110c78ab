"""The trajectory worker: derives the summary and trajectory of every trace that got spans.

It runs in its own process (derivation is CPU-bound and must not stall the receivers). Each
round claims changed traces from `trace_changes` inside one transaction, derives them and stores
the results, so a crash leaves the changes queued. Several trajhub processes on one database
share the queue (`FOR UPDATE SKIP LOCKED`, plus a per-trace advisory lock so one trace is never
derived twice at once).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import multiprocessing
import os
import signal
from collections import defaultdict
from collections.abc import Mapping, Sequence
from datetime import timedelta
from typing import Any

import asyncpg
import orjson

from trajhub.normalizers import NORMALIZER_VERSION, derive
from trajhub.normalizers.model import STATUS_ERROR, Span
from trajhub.normalizers.trajectory import trajectory_to_json
from trajhub.service.config import Settings
from trajhub.service.stored_spans import to_model
from trajhub.service.workers.run_context import preview, run_context
from trajhub.storage import assembly_store, trace_reads
from trajhub.storage.database import TRANSIENT_ERRORS

log = logging.getLogger("trajhub.assembly")

#: traces derived per transaction
BATCH = 200
#: a trajectory whose root never ended is finalized this long after settling anyway
MAX_OPEN_SECONDS = 300.0


def trace_row(project: str, trace_id: str, spans: Sequence[Span], last_received: Any
              ) -> tuple[Any, ...]:
    ids = {s.span_id for s in spans}
    roots = sorted((s for s in spans if s.parent_span_id not in ids),
                   key=lambda s: (s.start_ns, s.end_ns, s.span_id))
    root = roots[0] if roots else min(spans, key=lambda s: (s.start_ns, s.span_id))
    service = str(root.resource.get("service.name") or "")
    return (project, trace_id, root.span_id, root.name, service,
            min(s.start_ns for s in spans), max(s.end_ns for s in spans), len(spans),
            sum(1 for s in spans if s.status_code == STATUS_ERROR), last_received)


def trajectory_row(project: str, trace_id: str, spans: Sequence[Span], settle_at: Any
                   ) -> tuple[Any, ...]:
    context = run_context(spans)
    try:
        d = derive(spans)
    except Exception as exc:
        log.warning("trace %s/%s: derivation failed: %r", project, trace_id, exc)
        return (project, trace_id, NORMALIZER_VERSION, settle_at, root_ended(spans), None,
                None, [], f"{type(exc).__name__}: {exc}", "", [], "", "", "", [], [], [],
                min(s.start_ns for s in spans), 0, 0, 0, 0, 0, 0, 0, 0, False,
                context.service, context.session_id, context.user_id, None, None)
    s = d.summary
    explanation = orjson.dumps(d.explanation).decode()  # orjson serializes dataclasses natively
    return (project, trace_id, NORMALIZER_VERSION, settle_at, root_ended(spans),
            trajectory_to_json(d.trajectory).decode(), explanation, list(d.warnings), None,
            s.framework, list(s.conventions), s.root_name, s.root_input, s.root_output,
            list(s.agent_names), list(s.tool_names), list(s.model_names),
            s.started_at_ms * 1_000_000, s.duration_ms, s.step_count, s.model_step_count,
            s.tool_step_count, s.input_tokens, s.output_tokens, s.failed_model_steps,
            s.failed_tool_steps, s.has_error, context.service, context.session_id,
            context.user_id, preview(s.root_input), preview(s.root_output))


def root_ended(spans: Sequence[Span]) -> bool:
    """The trace's own root (a span with no parent at all) has arrived, ended. A trace whose
    top span points at a parent not (yet) here — the real root is usually exported last — is
    not done; if that parent never comes (a remote parent), MAX_OPEN_SECONDS finalizes it."""
    return any(s.parent_span_id == "" and s.end_ns > 0 for s in spans)


class Assembler:
    def __init__(self, database_url: str, settle_seconds: float) -> None:
        self.database_url = database_url
        self.settle = timedelta(seconds=settle_seconds)
        self.conn: asyncpg.Connection | None = None

    async def connection(self) -> asyncpg.Connection:
        if self.conn is None or self.conn.is_closed():
            self.conn = await asyncpg.connect(self.database_url, timeout=5)
        return self.conn

    async def derive_round(self) -> int:
        """Derive one batch of changed traces; returns how many."""
        conn = await self.connection()
        async with conn.transaction():
            claimed = await assembly_store.claim_changes(conn, BATCH)
            if not claimed:
                return 0
            rows = await assembly_store.load_spans(conn, claimed)
            envelopes = await trace_reads.resources(
                conn, sorted({r["resource_id"] for r in rows if r["resource_id"] is not None}))
            by_trace: dict[tuple[str, str], list[Mapping[str, Any]]] = defaultdict(list)
            for r in rows:
                by_trace[(r["project"], r["trace_id"])].append(r)
            traces, trajectories = [], []
            for c in claimed:
                trace_rows = by_trace.get((c.project, c.trace_id))
                if not trace_rows:
                    continue
                spans = to_model(trace_rows, envelopes)
                summary = trace_row(c.project, c.trace_id, spans, c.last_received_at)
                traces.append(summary)
                trajectories.append(trajectory_row(c.project, c.trace_id, spans,
                                                   c.last_received_at + self.settle))
            await assembly_store.store(conn, traces, trajectories)
        return len(claimed)

    async def finalize_round(self) -> int:
        conn = await self.connection()
        return await assembly_store.finalize_settled(conn, MAX_OPEN_SECONDS)

    async def run(self, interval: float, stop: asyncio.Event) -> None:
        while not stop.is_set():
            try:
                derived = await self.derive_round()
                finalized = await self.finalize_round()
            except TRANSIENT_ERRORS as exc:
                log.warning("database unavailable, retrying: %s", exc)
                self.conn = None
                derived = finalized = 0
                await asyncio.sleep(1)
            if derived < BATCH and not finalized:
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(stop.wait(), interval)


def _main(database_url: str, settle_seconds: float, interval: float, log_level: int) -> None:
    logging.basicConfig(level=log_level, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the parent decides when to stop
    # Acknowledging spans is what clients wait for; deriving trajectories can lag a moment.
    # Under full load the receivers and ingest workers get the CPU first.
    os.nice(10)

    async def main() -> None:
        stop = asyncio.Event()
        asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, stop.set)
        await Assembler(database_url, settle_seconds).run(interval, stop)

    asyncio.run(main())


class AssemblyProcesses:
    """The workers as child processes of `trajhub serve`; they share the queue like workers of
    separate trajhub processes do."""

    def __init__(self, database_url: str, settings: Settings) -> None:
        ctx = multiprocessing.get_context("spawn")
        self.processes = [
            ctx.Process(
                target=_main, name=f"trajhub-assembly-{i}", daemon=True,
                args=(database_url, settings.settle_seconds,
                      settings.assembly_interval_seconds,
                      logging.getLogger().getEffectiveLevel()))
            for i in range(settings.assembly_workers)
        ]

    def start(self) -> None:
        for process in self.processes:
            process.start()

    def stop(self) -> None:
        for process in self.processes:
            if process.is_alive():
                process.terminate()  # SIGTERM: finishes the round in progress, then exits
        for process in self.processes:
            process.join(timeout=30)
