"""The ingest write path: one transaction per request, committed before the client is answered.

The common case — spans never seen before — is a plain COPY into `spans`, much faster than the
merge below (bench/README.md, "Decoding and storing spans"). When a span is already stored (a
client retry, or the finished version of a long-running span: looked up only for traces seen
before; the COPY's unique violation, should one escape that, still leads there), the
rows go through a per-connection staging table merged with ON CONFLICT instead: a re-sent span
is stored once, and one with a later end time replaces the stored one, and the traces it changed
are queued for the derivation worker. After a plain COPY the ingest worker derives the traces
the request carried whole itself and queues the rest.

Every row of a trace carries the trace's `first_seen`, the partition key of the time-partitioned
tables (migration 0021): it comes from `trace_keys`, one row per trace, inserted the first time
the trace arrives and only read (and locked) afterwards. So a trace whose spans arrive on both
sides of a partition boundary, and a span re-sent in a later partition, still land in the
partition that holds the trace, and the primary key (which includes `first_seen`) still stores a
re-sent span once.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from datetime import datetime
from typing import NamedTuple

import asyncpg

from trajhub.storage.database import Connection


class SpanWrite(NamedTuple):
    """One row of `spans`, as ingest writes it. A NamedTuple: frozen, its fields are the column
    list, and it goes to COPY as is."""

    project: str
    trace_id: str  # 32 lowercase hex digits
    span_id: str  # 16 lowercase hex digits
    parent_span_id: str  # "" for a root
    name: str  # NUL-free copy (the body keeps the original)
    kind: int
    start_ns: int  # 0 ≤ start_ns < 2^63
    end_ns: int
    status_code: int
    service_name: str
    resource_id: int | None
    format: int  # FORMAT_OTLP or FORMAT_COZELOOP
    attributes: str  # JSON object of the short scalar attributes
    body: bytes  # the span exactly as received, compressed by ingest (storage/compression.py)


SPAN_COLUMNS: tuple[str, ...] = SpanWrite._fields

_CREATE_STAGE = """
CREATE TEMP TABLE IF NOT EXISTS span_stage (LIKE spans INCLUDING DEFAULTS INCLUDING STORAGE)
ON COMMIT DELETE ROWS
"""

_UPDATED = ", ".join(f"{c} = EXCLUDED.{c}" for c in SPAN_COLUMNS[3:])
#: what the COPY and the merge write: the row, then its trace's partition key
_STORED_COLUMNS: tuple[str, ...] = (*SPAN_COLUMNS, "first_seen")
_COLUMNS = ", ".join(_STORED_COLUMNS)

# The partition of each trace of the request: a new trace's is now (trajhub_partition_time keeps
# it inside the partitions created so far); a known trace's is the one stored. DO UPDATE, not DO
# NOTHING: it returns the stored row and locks it until this transaction ends, so retention,
# which takes a trace's key row first (storage/retention.py), either waits for these spans and
# sees them, or has already deleted the trace and this one starts afresh in a new partition.
# The keys are locked in a fixed order (sorted), so two requests never wait on each other.
_TRACE_KEYS = """
INSERT INTO trace_keys (project, trace_id, first_seen)
SELECT c.project, c.trace_id, (SELECT trajhub_partition_time(now()))
FROM unnest($1::text[], $2::text[]) AS c(project, trace_id)
ON CONFLICT (project, trace_id) DO UPDATE SET first_seen = trace_keys.first_seen
RETURNING project, trace_id, first_seen, xmax = 0 AS new
"""

# Whether any of the rows is stored already (by its primary key). Asked only for rows of traces
# seen before, so that a re-sent batch goes to the merge without a failed COPY first: the COPY's
# unique violation would be an ERROR line in PostgreSQL's log for a request that succeeds.
_ANY_STORED = """
SELECT EXISTS (
    SELECT 1 FROM spans s
    JOIN unnest($1::text[], $2::text[], $3::text[], $4::timestamptz[])
        AS k(project, trace_id, span_id, first_seen)
        USING (project, trace_id, span_id, first_seen))
"""

# The merge takes `received_at` from the row it inserts (`now()` there), not from a function in
# `DO UPDATE SET`, which Citus refuses on a distributed table; and it queues the traces it
# changed in a statement of its own: the queue stays on the coordinator (storage/citus_tables.py).
_MERGE = f"""
INSERT INTO spans ({_COLUMNS}, received_at)
SELECT {_COLUMNS}, now() FROM span_stage
ON CONFLICT (project, trace_id, span_id, first_seen) DO UPDATE
    SET {_UPDATED}, received_at = EXCLUDED.received_at
    WHERE spans.end_ns < EXCLUDED.end_ns
RETURNING project, trace_id
"""

_INSERT_RESOURCES = """
INSERT INTO resources (id, body)
SELECT * FROM unnest($1::bigint[], $2::bytea[])
ON CONFLICT (id) DO NOTHING
"""


async def prepare(conn: Connection) -> None:
    """Run once per connection before `write_spans`."""
    await conn.execute(_CREATE_STAGE)


async def write_spans(
    conn: Connection,
    rows: Collection[SpanWrite],
    resources: Mapping[int, bytes],
) -> bool:
    """Store rows (unique by key) and the resource envelopes they reference, inside the
    caller's transaction. True when every row was new (the plain COPY): the caller then
    derives or queues their traces (`queue_changes`). False when some were stored already:
    the merge queued the traces it changed."""
    if resources:
        await conn.execute(_INSERT_RESOURCES, list(resources), list(resources.values()))
    first_seen, known = await trace_partitions(conn, {(r.project, r.trace_id) for r in rows})
    stored = [(*r, first_seen[(r.project, r.trace_id)]) for r in rows]
    seen_before = [r for r in stored if (r[0], r[1]) in known]
    if seen_before and await conn.fetchval(
            _ANY_STORED, [r[0] for r in seen_before], [r[1] for r in seen_before],
            [r[2] for r in seen_before], [r[-1] for r in seen_before]):
        return await _merge(conn, stored)
    try:
        async with conn.transaction():  # a savepoint, should a stored row escape the check
            await conn.copy_records_to_table("spans", records=stored, columns=_STORED_COLUMNS)
    except asyncpg.UniqueViolationError:
        return await _merge(conn, stored)
    return True


async def _merge(conn: Connection, stored: Sequence[tuple[object, ...]]) -> bool:
    await conn.copy_records_to_table("span_stage", records=stored, columns=_STORED_COLUMNS)
    await queue_changes(conn, {(r["project"], r["trace_id"]) for r in await conn.fetch(_MERGE)})
    return False


async def trace_partitions(conn: Connection, traces: Collection[tuple[str, str]]
                           ) -> tuple[dict[tuple[str, str], datetime], set[tuple[str, str]]]:
    """The partition key (`first_seen`) of each trace, recorded now for the new ones, and the
    traces that were known before; the key rows stay locked until the caller's transaction
    ends."""
    keys = sorted(traces)
    rows = await conn.fetch(_TRACE_KEYS, [k[0] for k in keys], [k[1] for k in keys])
    return ({(r["project"], r["trace_id"]): r["first_seen"] for r in rows},
            {(r["project"], r["trace_id"]) for r in rows if not r["new"]})


async def queue_changes(conn: Connection, traces: Collection[tuple[str, str]]) -> None:
    """Queue (project, trace_id) pairs for the derivation worker."""
    if traces:
        await conn.copy_records_to_table("trace_changes", records=sorted(traces),
                                         columns=("project", "trace_id"))
