"""The receivers' side of ingestion: hands request bodies to the worker processes, bounded.

When every slot is taken the receiver answers 503 / UNAVAILABLE at once (docs/otlp.md A7): the
OTLP clients retry, and memory stays bounded by `max_inflight` request bodies.

`supervise()` watches the workers. When one dies (a ProcessPoolExecutor then stops every
worker and fails what was in flight), the death and its cause are logged and a new pool is
started, after a delay that grows with repeated deaths. Until it is up, requests get 503 /
UNAVAILABLE, and `missing()` says what /readyz reports.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
import math
import multiprocessing
import os
import threading
import time
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from multiprocessing.process import BaseProcess

from trajhub.service import logs, metrics
from trajhub.service.errors import DatabaseUnavailable, Unavailable
from trajhub.service.ingest import worker as ingest_worker
from trajhub.service.ingest.log_decode import METRIC_KINDS
from trajhub.service.ingest.worker import IngestJob, IngestResult
from trajhub.service.shortages import SHORTAGES
from trajhub.service.supervision import Backoff, exit_cause

log = logging.getLogger("trajhub.ingest")

#: how often the supervisor looks at the workers
WATCH_INTERVAL_SECONDS = 0.25
#: how often `drain` looks whether ingest has gone idle after a burst it queued (the cores idle
#: from the burst's end until it does)
DRAIN_INTERVAL_SECONDS = 0.05
#: no ingest request for this long: the burst is over (`DerivePolicy.idle`)
QUIET_SECONDS = 0.2


def available_cores() -> int:
    """The CPU cores this process may run on."""
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 1


def drainers(ingest_workers: int, derivation_workers: int, cores: int) -> int:
    """How many idle ingest workers derive from the queue after a burst (`IngestPool.drain`):
    half of them, but no more than the cores the derivation workers leave, and at least one.
    Each deriver keeps about a core busy (its Python, then its PostgreSQL backend), so more
    derivers than cores only take turns, at a cost in CPU (bench/README.md, "Adaptive
    derivation and the drain")."""
    return max(1, min(ingest_workers // 2, cores - derivation_workers))


class DerivePolicy:
    """Whether the ingest worker derives a request's whole traces before acknowledging it
    (`TRAJHUB_DERIVE_AT_INGEST`: "true", "false", or "auto": by load).

    Deriving and storing a trajectory costs more than ingesting its spans (bench/README.md,
    "Storing trajectories"), so on a saturated machine deriving at ingest makes every span wait
    for it. In "auto" the pool derives at ingest while it has headroom and queues the traces for
    the derivation workers while ingest is saturated; they catch up once the burst is over.
    Saturated means: this request, counted with the ones in flight, makes `high` or more,
    i.e. the workers are (nearly) all busy and requests start to wait for one. That switches
    to queueing at once, so a burst does not pay for derivation while an average builds up.
    Deriving resumes only when the time-weighted average of requests in flight (time constant
    `tau`, starting from the saturation) has fallen to half of `high`, about 1.4 s after a
    burst ends: a few quiet milliseconds between the
    requests of a burst do not switch back, and a load that deriving would saturate again
    does not flip on every request. Cost: a few float operations per request, in the
    receiver's event loop; no database query."""

    def __init__(self, mode: str, workers: int, tau: float = 2.0,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.mode = mode
        self.high = max(2, math.ceil(workers * 0.75))
        self.low = self.high / 2
        self.tau = tau
        self.clock = clock
        self.average = 0.0
        self.deferring = False
        self._held = 0  # requests in flight since the last change
        self._since = -math.inf  # never: a new pool is idle

    def changed(self, inflight: int) -> None:
        """Record a change of the requests in flight (the average weighs each value by how
        long it held)."""
        now = self.clock()
        weight = math.exp(-max(now - self._since, 0.0) / self.tau)
        self.average = self._held + (self.average - self._held) * weight
        self._held, self._since = inflight, now

    def idle(self, inflight: int) -> bool:
        """No request in flight, and none for `QUIET_SECONDS`: a burst is over, not just
        between two of its requests (those gaps last milliseconds). Queued derivation resumes
        then, not when the average has fallen (about 1.4 s later): after a burst the cores
        would otherwise idle that long while its trajectories wait (bench/README.md, "Adaptive
        derivation and the drain")."""
        return not inflight and not self._held and self.clock() - self._since >= QUIET_SECONDS

    def derive(self, inflight: int) -> bool:
        """For a request arriving with `inflight` requests in flight, itself included (call
        after `changed`)."""
        if self.mode != "auto":
            return self.mode == "true"
        if inflight >= self.high:
            self.deferring = True
            # the average starts from the saturation it has just seen, not from the quiet
            # before the burst: otherwise the first dip between requests would switch back
            self.average = max(self.average, float(inflight))
        elif self.deferring and self.average <= self.low:
            self.deferring = False
        return not self.deferring


def _count_other(kind: str, result: IngestResult) -> None:
    """Count what a request of the logs or metrics signal stored, rejected or dropped."""
    if kind in METRIC_KINDS:
        metrics.METRIC_POINTS_DROPPED.inc(result.accepted)
    else:
        metrics.LOG_RECORDS_ACCEPTED.inc(result.accepted)
        metrics.LOG_RECORDS_REJECTED.inc(result.rejected)


class IngestPool:
    def __init__(self, database_url: str, workers: int, max_inflight: int,
                 settle_seconds: float, derive: str, derivation_workers: int) -> None:
        self.database_url = database_url
        self.settle_seconds = settle_seconds
        self.policy = DerivePolicy(derive, workers)
        #: shared with the derivation worker processes: 1 from a request queued because ingest
        #: is saturated until one is derived at ingest again or ingest goes idle, so they step
        #: back for the burst (service/workers/derivation.py)
        self.saturated = multiprocessing.get_context("spawn").Value("b", 0, lock=False)
        #: this pool queued traces for the derivation workers (a burst) and has not yet seen
        #: the queue empty: idle ingest workers help derive them (`drain`)
        self.backlog = False
        self.workers = workers
        #: the ingest workers that derive from the queue after a burst (`drain`)
        self.drainers = drainers(workers, derivation_workers, available_cores())
        self.max_inflight = max_inflight
        self.inflight = 0
        self._executor: ProcessPoolExecutor | None = None
        self._processes: list[BaseProcess] = []
        self._backoff = Backoff()

    def _new_executor(self) -> ProcessPoolExecutor:
        # spawn, not fork: the parent runs threads (gRPC, asyncio) that fork would copy mid-state
        return ProcessPoolExecutor(
            max_workers=self.workers,
            mp_context=multiprocessing.get_context("spawn"),
            initializer=ingest_worker.initialize,
            initargs=(self.database_url, self.settle_seconds, *logs.settings(), os.getpid()),
        )

    async def start(self) -> None:
        """Start the workers (from the event loop's thread: a worker's parent-death signal is
        tied to the thread that started it) and wait until each has connected."""
        executor = self._new_executor()
        loop = asyncio.get_running_loop()
        warm_ups = [loop.run_in_executor(executor, ingest_worker.warm_up)
                    for _ in range(self.workers)]
        # the submissions spawned the workers: these are the processes the supervisor names
        # from now on, also when one of them dies before the start is over
        self._processes = list(getattr(executor, "_processes", {}).values())
        try:
            await asyncio.gather(*warm_ups)
        except BaseException:
            executor.shutdown(wait=False, cancel_futures=True)
            raise
        self._executor = executor
        self._backoff.started()

    def missing(self) -> str:
        """Why ingestion is not ready ("" when every worker is alive)."""
        if self._executor is None:
            return "the ingest workers are not running"
        dead = [p for p in self._processes if not p.is_alive()]
        if dead or getattr(self._executor, "_broken", False):
            return f"{len(dead) or 'an'} ingest worker(s) died; restarting"
        return ""

    def _dead(self) -> str:
        """The dead workers of the current pool, or of the last start, and why they died."""
        return ", ".join(f"pid {p.pid}: {exit_cause(p.exitcode)}"
                         for p in self._processes if not p.is_alive())

    async def supervise(self) -> None:
        """Restart the workers whenever one dies; runs until cancelled."""
        while True:
            await asyncio.sleep(WATCH_INTERVAL_SECONDS)
            if not self.missing():
                continue
            delay = self._backoff.next_delay()
            if self._executor is None:  # the last start failed, and said why
                log.error("starting the ingest workers again in %.1f s", delay)
            else:
                log.error("an ingest worker died (%s); restarting the ingest workers in %.1f s",
                          self._dead() or "the pool broke", delay)
            old, self._executor = self._executor, None
            if old is not None:
                old.shutdown(wait=False, cancel_futures=True)
            await asyncio.sleep(delay)
            try:
                await self.start()
            except Exception as exc:  # e.g. a worker died again while starting
                log.error("restarting the ingest workers failed (%s): %r",
                          self._dead() or "a new worker died", exc)
            else:
                log.info("ingest workers restarted")

    async def submit(self, job: IngestJob) -> IngestResult:
        if self.inflight >= self.max_inflight:
            metrics.INGEST_SATURATED.inc()
            raise Unavailable("ingestion is saturated; retry shortly", retry_after_s=1)
        executor = self._executor
        if executor is None:
            raise Unavailable("the ingest workers are restarting; retry shortly", retry_after_s=1)
        self.inflight += 1
        self.policy.changed(self.inflight)
        if not self.policy.derive(self.inflight):
            job = dataclasses.replace(job, derive=False)
            metrics.INGEST_DEFERRED.inc()
            if self.policy.mode == "auto":  # "false" leaves the queue to the derivation workers
                self.backlog = True
                self.saturated.value = 1
        elif self.saturated.value:
            # deferring stopped while requests still arrive: a steady load after a spike, which
            # never leaves ingest idle (`drain`), so the derivation workers resume now rather
            # than after their longest pause (MAX_PAUSE_SECONDS), which the spike's trajectories
            # otherwise wait out (bench/README.md, "Adaptive derivation and the drain")
            self.saturated.value = 0
        try:
            loop = asyncio.get_running_loop()
            result = await loop.run_in_executor(executor, ingest_worker.ingest, job)
        except DatabaseUnavailable as exc:
            metrics.DATABASE_ERRORS.labels("ingest").inc()
            if exc.shortage is not None:
                SHORTAGES.seen(exc.shortage, "ingest", exc.cause)
            raise
        except BrokenProcessPool:
            # the supervisor logs the death and starts new workers
            raise Unavailable("an ingest worker died; retry shortly", retry_after_s=1) from None
        except RuntimeError:
            if executor is self._executor:
                raise
            # the supervisor replaced this pool between our lookup and the submit
            raise Unavailable("the ingest workers are restarting; retry shortly",
                              retry_after_s=1) from None
        finally:
            self.inflight -= 1
            self.policy.changed(self.inflight)
        SHORTAGES.wrote()
        if job.kind in ingest_worker.OTHER_KINDS:
            _count_other(job.kind, result)
            return result
        metrics.SPANS_ACCEPTED.labels(job.kind).inc(result.accepted)
        metrics.SPANS_REJECTED.labels(job.kind).inc(result.rejected)
        if result.derived:
            metrics.TRACES_DERIVED.inc(result.derived)
        return result

    async def drain(self) -> None:
        """After a burst whose traces were queued (TRAJHUB_DERIVE_AT_INGEST=auto), the ingest
        workers are idle while the derivation workers work through the queue, one round at a
        time, alternating Python and PostgreSQL. While no ingest request is in flight, some
        of the ingest workers (`drainers`) derive from the queue too (a request arriving
        meanwhile finds another worker free: at most half of them drain), finalize what
        has settled until a settle period after the queue is empty, and fill the words for
        free text of the runs the burst stored until none are left (ingest_worker.drain_round):
        the trajectories of a burst are done sooner, on cores that would otherwise idle, and do
        not wait for the derivation workers' low CPU priority on a busy machine. Runs until
        cancelled."""
        loop = asyncio.get_running_loop()
        # after the queue is empty, the burst's last trajectories become final a settle period
        # later: finalize them too rather than leave them to the (niced) derivation workers
        finalize_until = 0.0
        words_left = False
        while True:
            await asyncio.sleep(DRAIN_INTERVAL_SECONDS)
            if self.saturated.value and self.policy.idle(self.inflight):
                self.saturated.value = 0  # the burst is over: the derivation workers resume
            while ((self.backlog or words_left or time.monotonic() < finalize_until)
                   and self._executor is not None and self.policy.idle(self.inflight)):
                executor = self._executor
                try:
                    rounds = await asyncio.gather(*(
                        loop.run_in_executor(executor, ingest_worker.derive_queued)
                        for _ in range(self.drainers)))
                except Exception as exc:  # a dead worker or the database: retried later
                    log.warning("deriving queued traces on idle ingest workers failed: %r",
                                exc)
                    await asyncio.sleep(1)
                    break
                derived = sum(r.derived for r in rounds)
                if derived:
                    metrics.TRACES_DERIVED.inc(derived)
                    continue
                if self.backlog:
                    self.backlog = False
                    finalize_until = time.monotonic() + self.settle_seconds + 1
                looked = [r.words_left for r in rounds if r.words_left is not None]
                if looked:
                    words_left = any(looked)
                if not words_left and not sum(r.finalized for r in rounds):
                    break  # nothing settled yet: look again after the interval

    def shutdown(self, timeout: float = 10.0) -> None:
        """Waits up to `timeout` for the calls in flight (already being committed), then stops
        the workers; a worker still busy after that is killed."""
        executor, self._executor = self._executor, None
        if executor is None:
            return
        stopped = threading.Event()

        def stop() -> None:
            executor.shutdown(wait=True, cancel_futures=True)
            stopped.set()

        threading.Thread(target=stop, name="trajhub-ingest-shutdown", daemon=True).start()
        if stopped.wait(timeout):
            return
        for process in self._processes:
            if process.is_alive():
                log.warning("ingest worker %s did not stop in time; killing it", process.pid)
                with contextlib.suppress(Exception):
                    process.kill()
        stopped.wait(2)
