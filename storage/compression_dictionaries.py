"""The zstd dictionaries span bodies are compressed with (migration 0062): stored, loaded into
the process before the rows they compressed are read, trained from span bodies, and deleted
once no partition can hold a span compressed with them."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime, timedelta
from typing import NamedTuple

import zstandard

from trajhub.storage import compression
from trajhub.storage.database import Connection, RowMapping

#: span bodies a dictionary is trained from (~5 MB of loadgen's spans; zstd wants about 100
#: times the dictionary's size)
SAMPLES = 2000
#: a dictionary's size in bytes: 64 KiB kept loadgen's bodies at 30 %, 16 KiB at 33 %
SIZE = 64 * 1024
#: a dictionary older than this is replaced by one trained on newer spans
MAX_AGE = timedelta(days=1)
#: how long an ingest worker may go on compressing with a dictionary after a newer one is
#: stored (it looks every `service.ingest.dictionary.CHECK_SECONDS`); retention adds it
IN_USE_AFTER_REPLACED = timedelta(minutes=1)


class StoredDictionary(NamedTuple):
    id: int
    trained_at: datetime
    data: bytes


async def load(conn: Connection, ids: Iterable[int]) -> None:
    """Load the dictionaries `ids` names that this process does not have yet."""
    missing = sorted({i for i in ids if i and not compression.loaded(i)})
    if missing:
        for row in await conn.fetch(
                "SELECT data FROM compression_dictionaries WHERE id = ANY($1::bigint[])",
                missing):
            compression.register(row["data"])


async def load_for(conn: Connection, rows: Iterable[RowMapping],
                   column: str = "body") -> None:
    """Load what the stored values of `rows` need to be decompressed."""
    await load(conn, (compression.dictionary_id(r[column]) for r in rows))


async def newest(conn: Connection) -> StoredDictionary | None:
    row = await conn.fetchrow(
        "SELECT id, trained_at, data FROM compression_dictionaries "
        "ORDER BY trained_at DESC, id LIMIT 1")
    return None if row is None else StoredDictionary(row["id"], row["trained_at"], row["data"])


def train(samples: list[bytes]) -> bytes:
    """A dictionary for bodies like `samples` (zstandard.ZstdError when they do not make one)."""
    return bytes(zstandard.train_dictionary(SIZE, list[bytes | bytearray | memoryview](samples))
                 .as_bytes())


async def store(conn: Connection, data: bytes) -> bool:
    """Store a newly trained dictionary unless another process stored one in the meantime
    (then the caller uses that one: `newest`). Returns whether it was stored."""
    dictionary_id = zstandard.ZstdCompressionDict(data).dict_id()
    stored = await conn.fetchval(
        "INSERT INTO compression_dictionaries (id, data) SELECT $1, $2 "
        "WHERE NOT EXISTS (SELECT FROM compression_dictionaries "
        "                  WHERE trained_at > now() - $3::interval) "
        "ON CONFLICT (id) DO NOTHING RETURNING true", dictionary_id, data, MAX_AGE)
    return bool(stored)


async def delete_unused(conn: Connection) -> int:
    """Delete the dictionaries no stored span can have been compressed with: each replaced
    (a newer one stored) before the oldest time partition began. A span is filed under its
    trace's first-seen time, never after it was received, so a span compressed with a
    dictionary lies in a partition that began before that dictionary was replaced (and the
    ingest workers' last look for a newer one). Returns how many went."""
    deleted = await conn.fetch(
        """DELETE FROM compression_dictionaries d
           WHERE (SELECT min(n.trained_at) FROM compression_dictionaries n
                  WHERE n.trained_at > d.trained_at) + $1::interval
                 < (SELECT min(lower) FROM time_partitions)
           RETURNING id""", IN_USE_AFTER_REPLACED)
    return len(deleted)
