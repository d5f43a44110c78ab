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
import logging
import multiprocessing
import os
import threading
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from multiprocessing.process import BaseProcess

from trajhub.service import logs, metrics
from trajhub.service.errors import DatabaseUnavailable, Unavailable
from trajhub.service.ingest import worker as ingest_worker
from trajhub.service.ingest.worker import IngestJob, IngestResult
from trajhub.service.supervision import Backoff, exit_cause

log = logging.getLogger("trajhub.ingest")

#: how often the supervisor looks at the workers
WATCH_INTERVAL_SECONDS = 0.25


class IngestPool:
    def __init__(self, database_url: str, workers: int, max_inflight: int,
                 settle_seconds: float, derive: bool = True) -> None:
        self.database_url = database_url
        self.settle_seconds = settle_seconds
        self.derive = derive
        self.workers = workers
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
            initargs=(self.database_url, self.settle_seconds, self.derive, *logs.settings(),
                      os.getpid()),
        )

    async def start(self) -> None:
        """Start the workers (from the event loop's thread: a worker's parent-death signal is
        tied to the thread that started it) and wait until each has connected."""
        executor = self._new_executor()
        loop = asyncio.get_running_loop()
        try:
            await asyncio.gather(*(loop.run_in_executor(executor, ingest_worker.warm_up)
                                   for _ in range(self.workers)))
        except BaseException:
            executor.shutdown(wait=False, cancel_futures=True)
            raise
        self._processes = list(getattr(executor, "_processes", {}).values())
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

    async def supervise(self) -> None:
        """Restart the workers whenever one dies; runs until cancelled."""
        while True:
            await asyncio.sleep(WATCH_INTERVAL_SECONDS)
            if not self.missing():
                continue
            causes = ", ".join(f"pid {p.pid}: {exit_cause(p.exitcode)}"
                               for p in self._processes if not p.is_alive())
            delay = self._backoff.next_delay()
            log.error("an ingest worker died (%s); restarting the ingest workers in %.1f s",
                      causes or "the pool broke", delay)
            old, self._executor = self._executor, None
            if old is not None:
                old.shutdown(wait=False, cancel_futures=True)
            await asyncio.sleep(delay)
            try:
                await self.start()
            except Exception as exc:  # e.g. a worker died again while starting
                log.error("restarting the ingest workers failed: %r", exc)
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
        try:
            loop = asyncio.get_running_loop()
            result = await loop.run_in_executor(executor, ingest_worker.ingest, job)
        except DatabaseUnavailable:
            metrics.DATABASE_ERRORS.labels("ingest").inc()
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
        metrics.SPANS_ACCEPTED.labels(job.kind).inc(result.accepted)
        metrics.SPANS_REJECTED.labels(job.kind).inc(result.rejected)
        if result.derived:
            metrics.TRACES_DERIVED.inc(result.derived)
        return result

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
