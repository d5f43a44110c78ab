"""The zstd dictionaries stored values are compressed with (migration 0062, storage/compression.py):
stored, fetched by a process when a frame names one it has not loaded, trained from span bodies
(and pieces of trajectory documents), and deleted once no partition can hold a value compressed
with them."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime, timedelta
from typing import NamedTuple

import zstandard

from trajhub.storage.database import Connection, connect

#: span bodies a dictionary is trained from: a few hundred already make as good a dictionary as
#: thousands, and the training stalls an ingest worker in proportion (bench/README.md,
#: "Compression")
SAMPLES = 1000
#: a dictionary's size in bytes: a larger one keeps the bodies a little smaller
#: (bench/README.md, "Compression")
SIZE = 64 * 1024
#: a dictionary older than this is replaced by one trained on newer spans
MAX_AGE = timedelta(days=1)
#: a store's first dictionary is trained from its first spans, which one burst may give alone:
#: its traces are queued, not derived, so no trajectory document is among the samples. That
#: dictionary is replaced once, this long after, by one trained on what the store gets then.
FIRST_MAX_AGE = timedelta(minutes=10)
#: how long an ingest worker may go on compressing with a dictionary after a newer one is
#: stored (it looks every `service.dictionaries.CHECK_SECONDS`); retention adds it
IN_USE_AFTER_REPLACED = timedelta(minutes=1)


class StoredDictionary(NamedTuple):
    id: int
    trained_at: datetime
    #: the store's only dictionary
    only: bool

    def due(self, now: datetime) -> bool:
        """Whether a newer dictionary should replace this one (it is the newest)."""
        return now - self.trained_at >= (FIRST_MAX_AGE if self.only else MAX_AGE)


async def fetch(conn: Connection, dictionary_id: int) -> bytes | None:
    """A stored dictionary's bytes (None: there is no such dictionary)."""
    data: bytes | None = await conn.fetchval(
        "SELECT data FROM compression_dictionaries WHERE id = $1", dictionary_id)
    return data


def loader(database_url: str) -> Callable[[int], bytes | None]:
    """For `compression.set_loader`: fetches a dictionary by id over a connection of its own,
    on a thread of its own (the caller may be running an event loop, which a fetch on that
    loop would deadlock). A process fetches each dictionary once, the first time a frame names
    it; the caller waits those few milliseconds."""

    async def fetch_once(dictionary_id: int) -> bytes | None:
        conn = await connect(database_url)
        try:
            return await fetch(conn, dictionary_id)
        finally:
            await conn.close()

    def load(dictionary_id: int) -> bytes | None:
        with ThreadPoolExecutor(1) as thread:
            return thread.submit(asyncio.run, fetch_once(dictionary_id)).result()

    return load


async def newest(conn: Connection) -> StoredDictionary | None:
    """The newest dictionary's id and age; its bytes only when a process lacks it (`fetch`)."""
    row = await conn.fetchrow(
        "SELECT id, trained_at, count(*) OVER () = 1 AS only FROM compression_dictionaries "
        "ORDER BY trained_at DESC, id LIMIT 1")
    return None if row is None else StoredDictionary(row["id"], row["trained_at"], row["only"])


#: the advisory lock key of training (any constant unique to trajhub's locks): one ingest
#: worker trains, the others take its dictionary
TRAIN_LOCK = 0x7472616A_64696374  # "trajdict"


def train(samples: list[bytes]) -> bytes:
    """A dictionary for bodies like `samples` (zstandard.ZstdError when they do not make one).
    With its segment and d-mer sizes given (zstd's usual ones), zstd skips its parameter search,
    which was most of the training's CPU: the training stalls an ingest worker, and the
    dictionary is as good (bench/README.md, "Compression")."""
    return bytes(zstandard.train_dictionary(
        SIZE, list[bytes | bytearray | memoryview](samples), k=1024, d=8).as_bytes())


async def store(conn: Connection, data: bytes, replacing: int | None) -> bool:
    """Store a newly trained dictionary to replace `replacing`, the newest the caller saw (None:
    there was none), unless another process stored one in the meantime (then the caller takes
    that one: `newest`). Returns whether it was stored."""
    dictionary_id = zstandard.ZstdCompressionDict(data).dict_id()
    stored = await conn.fetchval(
        "INSERT INTO compression_dictionaries (id, data) SELECT $1, $2 "
        "WHERE (SELECT id FROM compression_dictionaries ORDER BY trained_at DESC, id LIMIT 1) "
        "      IS NOT DISTINCT FROM $3 "
        "ON CONFLICT (id) DO NOTHING RETURNING true", dictionary_id, data, replacing)
    return bool(stored)


# the earliest received log record: a loose index scan over the projects, then the first of
# the projects the records hold, then each one's earliest record by received time (an index
# probe each); a query correlating them is refused by Citus, which distributes the records by
# trace, not by project
_LOG_PROJECTS = "SELECT DISTINCT project FROM log_records"
_EARLIEST_LOG = "SELECT min(received_at) FROM log_records WHERE project = $1"


async def delete_unused(conn: Connection) -> int:
    """Delete the dictionaries no stored span can have been compressed with: each replaced
    (a newer one stored) before the oldest time partition began. A span is filed under its
    trace's first-seen time, never after it was received, so a span compressed with a
    dictionary lies in a partition that began before that dictionary was replaced (and the
    ingest workers' last look for a newer one). Trajectory documents are compressed with the
    dictionary of their time too, and live in their trace's partition. Log records are not
    partitioned (migration 0069), and an orphaned one may outlive every partition of its
    time: none is older than the earliest received one, found per project through the index
    of migration 0070. Returns how many went."""
    # The bound is read first, from the partition catalogue and the records, each in a
    # statement of its own (storage/citus_tables.py: a local, a distributed and a reference
    # table), then the delete compares with it as a value (the interval is taken from the
    # value, not added to a column: Citus refuses that STABLE operator on a column here).
    oldest_partition = await conn.fetchval("SELECT min(lower) FROM trajhub_time_partitions")
    earliest = [await conn.fetchval(_EARLIEST_LOG, r["project"])
                for r in await conn.fetch(_LOG_PROJECTS)]
    earliest_log = min((t for t in earliest if t is not None), default=None)
    bound = min((t for t in (oldest_partition, earliest_log) if t is not None), default=None)
    if bound is None:
        return 0
    deleted = await conn.fetch(
        """DELETE FROM compression_dictionaries d
           WHERE d.id = ANY(ARRAY(
               SELECT o.id FROM compression_dictionaries o
               WHERE (SELECT min(n.trained_at) FROM compression_dictionaries n
                      WHERE n.trained_at > o.trained_at) < $2::timestamptz - $1::interval))
           RETURNING id""", IN_USE_AFTER_REPLACED, bound)
    return len(deleted)

