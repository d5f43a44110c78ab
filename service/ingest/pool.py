"""The receivers' side of ingestion: hands request bodies to the worker processes, bounded.

When every slot is taken the receiver answers 503 / UNAVAILABLE at once (spec/otlp.md A7): the
OTLP clients retry, and memory stays bounded by `max_inflight` request bodies.
"""

from __future__ import annotations

import asyncio
import logging
import multiprocessing
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool

from trajhub.service.errors import Unavailable
from trajhub.service.ingest import worker as ingest_worker
from trajhub.service.ingest.worker import IngestJob, IngestResult

log = logging.getLogger("trajhub.ingest")


class IngestPool:
    def __init__(self, database_url: str, workers: int, max_inflight: int) -> None:
        self.database_url = database_url
        self.workers = workers
        self.max_inflight = max_inflight
        self.inflight = 0
        self._executor = self._new_executor()

    def _new_executor(self) -> ProcessPoolExecutor:
        # spawn, not fork: the parent runs threads (gRPC, asyncio) that fork would copy mid-state
        return ProcessPoolExecutor(
            max_workers=self.workers,
            mp_context=multiprocessing.get_context("spawn"),
            initializer=ingest_worker.initialize,
            initargs=(self.database_url, logging.getLogger().getEffectiveLevel()),
        )

    async def start(self) -> None:
        loop = asyncio.get_running_loop()
        await asyncio.gather(
            *(loop.run_in_executor(self._executor, ingest_worker.warm_up)
              for _ in range(self.workers))
        )

    async def submit(self, job: IngestJob) -> IngestResult:
        if self.inflight >= self.max_inflight:
            raise Unavailable("ingestion is saturated; retry shortly", retry_after_s=1)
        self.inflight += 1
        try:
            loop = asyncio.get_running_loop()
            return await loop.run_in_executor(self._executor, ingest_worker.ingest, job)
        except BrokenProcessPool:
            log.error("an ingest worker died; starting a new pool")
            self._executor.shutdown(wait=False, cancel_futures=True)
            self._executor = self._new_executor()
            raise Unavailable("an ingest worker restarted; retry", retry_after_s=1) from None
        finally:
            self.inflight -= 1

    def shutdown(self) -> None:
        """Waits for the calls in flight (already being committed), then stops the workers."""
        self._executor.shutdown(wait=True)
