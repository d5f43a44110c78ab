"""Which dictionary a process compresses what it stores with (storage/compression.py), and, in
an ingest worker, training one when the store has none recent enough
(storage/compression_dictionaries.py).

A process looks for a newer dictionary every `CHECK_SECONDS` (an ingest worker after a request's
commit, a derivation worker before a round), so they agree on one within seconds of its being
stored. When the newest is missing or due to be replaced (a day old; the store's first one ten
minutes old: `compression_dictionaries.StoredDictionary.due`), an ingest worker keeps the span
bodies it compresses as samples, with pieces of the trajectory documents it derives, and once it
has `SAMPLES` bodies, the first worker to take the training lock trains a dictionary (a
fraction of a second of CPU: bench/README.md, "Compression") and stores it; the others take
that one.
"""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Callable
from datetime import UTC, datetime

import zstandard

from trajhub.storage import compression, compression_dictionaries
from trajhub.storage.database import Connection

log = logging.getLogger("trajhub.ingest")

#: how often a worker looks for a newer dictionary
CHECK_SECONDS = 10.0


class DictionaryKeeper:
    def __init__(self, train: bool, clock: Callable[[], float] = time.monotonic) -> None:
        """`train`: this process trains a dictionary from the span bodies it compresses when
        one is due (the ingest workers)."""
        self.train = train
        self.clock = clock
        self.checked = -math.inf
        # until the first look says whether the store has a recent dictionary, keep samples:
        # a new store then trains from its first spans, not from those after the first request
        compression.collect_samples(train)

    async def refresh(self, conn: Connection) -> None:
        """Use the newest stored dictionary, or train one when it is due (call between
        requests, outside their transactions)."""
        collected, size = compression.samples()
        # enough spans, or as many bytes as are kept (a store of large spans)
        ready = (len(collected) >= compression_dictionaries.SAMPLES
                 or size >= compression.MAX_SAMPLE_BYTES)
        if not ready and self.clock() - self.checked < CHECK_SECONDS:
            return
        self.checked = self.clock()
        newest = await compression_dictionaries.newest(conn)
        if newest is not None:
            await self._take(conn, newest.id)
            if not newest.due(datetime.now(UTC)):
                compression.collect_samples(False)
                return
        if not self.train:
            return
        if not ready:
            if not compression.sampling():
                compression.collect_samples(True)
            return
        # one worker trains; the others keep their samples and take its dictionary at their
        # next look (training stalls a worker's requests, and four at once stalled ingest)
        if not await conn.fetchval("SELECT pg_try_advisory_lock($1)",
                                   compression_dictionaries.TRAIN_LOCK):
            return
        try:
            documents = compression.document_pieces()
            compression.collect_samples(False)
            try:
                data = compression_dictionaries.train(collected + documents)
            except zstandard.ZstdError as exc:  # e.g. bodies too alike to train on: try later
                log.info("training a compression dictionary failed: %s", exc)
                return
            if await compression_dictionaries.store(
                    conn, data, newest.id if newest is not None else None):
                compression.use(compression.register(data))
                log.info("span bodies: trained and stored a new compression dictionary")
            else:
                self.checked = -math.inf  # another worker's is there: take it next time
        finally:
            await conn.execute("SELECT pg_advisory_unlock($1)",
                               compression_dictionaries.TRAIN_LOCK)

    @staticmethod
    async def _take(conn: Connection, dictionary_id: int) -> None:
        """Compress with the stored dictionary `dictionary_id` (fetched only if it is new)."""
        current = compression.current()
        if current is not None and current.dict_id() == dictionary_id:
            return
        data = await compression_dictionaries.fetch(conn, dictionary_id)
        if data is not None:  # deleted meanwhile: the next look finds the newest
            compression.use(compression.register(data))
