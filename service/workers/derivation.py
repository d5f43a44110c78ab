"""The derivation worker: derives the summary and trajectory of every trace that got spans.

The ingest workers derive the traces a request carries whole as they store it
(service/derivation.py); this worker derives the rest: traces whose spans came in several
requests, re-sent spans, re-derivations. It runs in its own process (derivation is CPU-bound
and must not stall the receivers). Each round claims changed traces from `trace_changes` inside
one transaction, derives them and stores the results, so a crash leaves the changes queued.
Several trajhub processes on one database share the queue (`FOR UPDATE SKIP LOCKED`, plus a
per-trace advisory lock, the one ingest workers take too, so a trace is never derived twice at
once).

One trace never stops the others: a trace whose spans cannot be read or derived, or whose
results the database refuses, gets a trajectory with its `derivation_error` recorded and the
worker moves on; its change is consumed, so it is not picked again until new spans arrive.
Only a transient database fault rolls the round back, to be retried.
"""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import logging
import multiprocessing
import os
import signal
import time
from collections.abc import Awaitable
from datetime import timedelta
from multiprocessing.connection import Connection
from multiprocessing.process import BaseProcess

import asyncpg

from trajhub.service import logs, metrics
from trajhub.service.config import Settings
from trajhub.service.derivation import derive_round
from trajhub.service.dictionaries import DictionaryKeeper
from trajhub.service.lifeline import die_with_parent
from trajhub.service.supervision import Backoff, exit_cause
from trajhub.storage import compression, compression_dictionaries, derivation_store, search_words
from trajhub.storage.database import connect, is_transient

log = logging.getLogger("trajhub.derivation")

#: traces derived per transaction
BATCH = 200
#: a trajectory whose root never ended is finalized this long after settling anyway
MAX_OPEN_SECONDS = 300.0
#: how often the parent looks at its derivation workers
WATCH_INTERVAL_SECONDS = 0.25
#: while ingest is saturated a worker steps back for at most this long, then derives anyway
#: (niced), so a sustained overload still gets its trajectories
MAX_PAUSE_SECONDS = 30.0
#: and looks this often whether the burst is over: the pool clears the flag the moment it is
#: (pool.IngestPool.drain), and every moment the worker sleeps after that the cores idle; a
#: look is one read of a shared byte
PAUSE_POLL_SECONDS = 0.02
#: a worker without a backlog fills the words of this many stored trajectories per round
#: (migration 0068): a round of filling takes no longer than a round of derivation, so that
#: changes arriving meanwhile wait no longer than for one (bench/README.md, "Free text")
FILL_WORDS_BATCH = 500
#: and merges the words index's pending list once this many trajectories' words were written
#: since its last merge: about as often as storing merged it before (migration 0066)
MERGE_WORDS_AFTER = 1000
#: and looks at how many were written, and whether the statistics of the runs and their words
#: as wholes are outgrown, at most this often
MERGE_WORDS_CHECK_SECONDS = 1.0


class IdleWords:
    """Keeps the free-text words index while the derivation has no backlog (migrations 0066
    and 0068), so that storing a trajectory pays neither for parsing its text nor for merging
    the index's pending list: fills the words of the trajectories queued since, a batch per
    round, then merges the list, and gathers the statistics a search's join of runs and words
    reads when they are missing or outgrown. During a burst the worker is busy deriving and the
    words wait (a search checks those trajectories' text itself); at a steady load the worker's
    rounds take what is queued, and it fills the words of each round's trajectories after it."""

    def __init__(self) -> None:
        self.merged_at: int | None = None  # words_written at the last merge
        self.checked = -MERGE_WORDS_CHECK_SECONDS

    async def __call__(self, conn: asyncpg.Connection) -> bool:
        """One step; True when trajectories without words are left for the next one."""
        if await search_words.fill(conn, FILL_WORDS_BATCH) == FILL_WORDS_BATCH:
            return True
        now = time.monotonic()
        if now - self.checked < MERGE_WORDS_CHECK_SECONDS:
            return False
        self.checked = now
        await self._upkeep(search_words.analyze_outgrown(conn), "gathering statistics")
        written = await search_words.words_written(conn)
        # counters that went back (a crash, a statistics reset) start over with a merge
        if self.merged_at is not None and 0 <= written - self.merged_at < MERGE_WORDS_AFTER:
            return False
        if await self._upkeep(search_words.merge_pending(conn),
                              "merging the words index's pending list"):
            self.merged_at = written
        return False

    @staticmethod
    async def _upkeep(step: Awaitable[object], what: str) -> bool:
        """Run one step of upkeep; False when the database refused it for good (e.g. a
        partition that retention dropped meanwhile: the next step takes the rest)."""
        try:
            await step
        except asyncpg.PostgresError as exc:
            if is_transient(exc):
                raise
            log.warning("%s failed: %s", what, exc)
            return False
        return True


class DerivationWorker:
    def __init__(self, database_url: str, settle_seconds: float) -> None:
        self.database_url = database_url
        self.settle = timedelta(seconds=settle_seconds)
        self.conn: asyncpg.Connection | None = None
        self.dictionary = DictionaryKeeper(train=False)
        self.words = IdleWords()

    async def connection(self) -> asyncpg.Connection:
        if self.conn is None or self.conn.is_closed():
            self.conn = await connect(self.database_url)
        return self.conn

    async def derive_round(self) -> int:
        """Derive one batch of changed traces; returns how many."""
        conn = await self.connection()
        await self.dictionary.refresh(conn)  # the documents' dictionary
        return await derive_round(conn, self.settle, BATCH)

    def _drop_connection(self) -> None:
        conn, self.conn = self.conn, None
        if conn is not None:
            conn.terminate()

    async def finalize_round(self) -> int:
        conn = await self.connection()
        return await derivation_store.finalize_settled(conn, MAX_OPEN_SECONDS)

    async def run(self, interval: float, stop: asyncio.Event,
                  report: Connection | None = None, saturated: ctypes.c_byte | None = None) -> None:
        """Derive until `stop`; each round's figures go to the parent through `report`
        (service/metrics.py). `saturated`: a shared flag the ingest pool sets during a burst
        (pool.IngestPool.saturated). Niceness keeps this process's Python from slowing
        ingest, but not the PostgreSQL backend its rounds keep busy; so while the flag is
        set the worker waits, up to MAX_PAUSE_SECONDS in a row, and the burst is
        acknowledged sooner; idle ingest workers and this worker derive it afterwards."""
        paused_since: float | None = None
        while not stop.is_set():
            if saturated is not None and saturated.value:
                now = time.monotonic()
                paused_since = now if paused_since is None else paused_since
                if now - paused_since < MAX_PAUSE_SECONDS:
                    with contextlib.suppress(TimeoutError):
                        await asyncio.wait_for(stop.wait(), PAUSE_POLL_SECONDS)
                    continue
            else:
                paused_since = None
            try:
                started = time.perf_counter()
                derived = await self.derive_round()
                if derived and report is not None:
                    _report(report, (REPORT_DERIVED, derived, time.perf_counter() - started))
                finalized = await self.finalize_round()
                words_left = False
                if derived < BATCH:  # no backlog: what is queued fits in a round
                    words_left = await self.words(await self.connection())
            except Exception as exc:
                if is_transient(exc):
                    if report is not None:
                        _report(report, (REPORT_DATABASE_ERROR,))
                    log.warning("database unavailable, retrying: %s", exc)
                else:
                    # a bug: logged, and the worker lives on (the round's changes are back in
                    # the queue; per-trace failures never get here)
                    log.exception("trajectory round failed")
                self._drop_connection()
                derived = finalized = 0
                words_left = False
                await asyncio.sleep(1)
            # rounds start at most every `interval` while there is little to do, so that
            # changes gather into rounds; after a round that took longer (a large trace: seconds),
            # what arrived meanwhile has gathered already, and waiting more would only add to
            # how long its trajectory takes to become final
            pause = interval - (time.perf_counter() - started)
            if derived < BATCH and not finalized and not words_left and pause > 0:
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(stop.wait(), pause)


#: messages a derivation worker sends its parent: (REPORT_DERIVED, traces, seconds) after a
#: round that derived something, (REPORT_DATABASE_ERROR,) when the database failed a round
REPORT_DERIVED = "derived"
REPORT_DATABASE_ERROR = "database_error"


def _report(report: Connection, message: tuple[object, ...]) -> None:
    # a few dozen bytes: one atomic pipe write, read by the parent every WATCH_INTERVAL_SECONDS
    with contextlib.suppress(OSError):
        report.send(message)


def read_reports(report: Connection) -> None:
    """In the parent: count what a worker reported (service/metrics.py)."""
    with contextlib.suppress(OSError, EOFError):
        while report.poll():
            message = report.recv()
            if message[0] == REPORT_DERIVED:
                metrics.TRACES_DERIVED.inc(message[1])
                metrics.DERIVATION_SECONDS.observe(message[2])
            elif message[0] == REPORT_DATABASE_ERROR:
                metrics.DATABASE_ERRORS.labels("derivation").inc()


def _main(database_url: str, settle_seconds: float, interval: float, log_level: int,
          log_format: str, parent_pid: int, report: Connection,
          saturated: ctypes.c_byte | None = None) -> None:
    die_with_parent(parent_pid)
    logs.configure(log_level, log_format)
    compression.set_loader(compression_dictionaries.loader(database_url))
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the parent decides when to stop
    # Acknowledging spans is what clients wait for; deriving trajectories can lag a moment.
    # Under full load the receivers and ingest workers get the CPU first.
    os.nice(10)

    async def main() -> None:
        stop = asyncio.Event()
        asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, stop.set)
        await DerivationWorker(database_url, settle_seconds).run(interval, stop, report,
                                                                 saturated)

    asyncio.run(main())


class DerivationProcesses:
    """The workers as child processes of `trajhub serve`; they share the queue like workers of
    separate trajhub processes do. `supervise()` restarts one that dies (logging the cause,
    backing off when it keeps dying); `missing()` says what /readyz reports meanwhile."""

    def __init__(self, database_url: str, settings: Settings,
                 saturated: ctypes.c_byte | None = None) -> None:
        """`saturated`: the ingest pool's shared flag (pool.IngestPool.saturated)."""
        self._ctx = multiprocessing.get_context("spawn")
        self._saturated = saturated
        self._args = (database_url, settings.settle_seconds,
                      settings.derivation_interval_seconds,
                      *logs.settings(), os.getpid())
        self.reports: list[Connection] = []
        self.processes: list[BaseProcess] = [self._new(i)
                                             for i in range(settings.derivation_workers)]
        self._backoff = [Backoff() for _ in self.processes]

    def _new(self, index: int) -> BaseProcess:
        # a pipe of its own per worker: a worker killed mid-write cannot block the others
        reader, writer = self._ctx.Pipe(duplex=False)
        if index < len(self.reports):
            self.reports[index].close()
            self.reports[index] = reader
        else:
            self.reports.append(reader)
        return self._ctx.Process(target=_main, name=f"trajhub-derivation-{index}", daemon=True,
                                 args=(*self._args, writer, self._saturated))

    def start(self) -> None:
        """Start the workers; from the event loop's thread (the parent-death signal is tied
        to the thread that starts a process)."""
        for i, process in enumerate(self.processes):
            process.start()
            self._backoff[i].started()

    def missing(self) -> str:
        dead = sum(1 for p in self.processes if not p.is_alive())
        return f"{dead} derivation worker(s) died; restarting" if dead else ""

    async def supervise(self) -> None:
        """Restart any worker that dies; runs until cancelled."""
        restarts: dict[int, asyncio.Task[None]] = {}
        while True:
            await asyncio.sleep(WATCH_INTERVAL_SECONDS)
            for report in self.reports:
                read_reports(report)
            for i, process in enumerate(self.processes):
                if process.is_alive() or (i in restarts and not restarts[i].done()):
                    continue
                delay = self._backoff[i].next_delay()
                log.error("derivation worker %s (pid %s) died (%s); restarting it in %.1f s",
                          process.name, process.pid, exit_cause(process.exitcode), delay)
                restarts[i] = asyncio.create_task(self._restart(i, delay))

    async def _restart(self, index: int, delay: float) -> None:
        await asyncio.sleep(delay)
        process = self._new(index)
        process.start()
        self.processes[index] = process
        self._backoff[index].started()
        log.info("derivation worker %s restarted (pid %s)", process.name, process.pid)

    def stop(self, timeout: float = 10.0) -> None:
        for process in self.processes:
            if process.is_alive():
                process.terminate()  # SIGTERM: finishes the round in progress, then exits
        for process in self.processes:
            process.join(timeout=timeout)
            if process.is_alive():
                log.warning("derivation worker %s did not stop in time; killing it",
                            process.pid)
                process.kill()
                process.join(1)
