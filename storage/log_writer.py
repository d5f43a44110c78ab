"""The write path of OTLP log records (table `log_records`, migration 0069): one statement per
request, inside the ingest worker's transaction, committed before the client is answered.

A record sent twice is stored once: the table's primary key is (project, trace_id, span_id,
time_ns, digest of the record's bytes), all of which a re-send keeps, and the insert skips a
record already stored. The resource and scope a record came with are stored once, in
`resources`, as a span's are (service/ingest/log_decode.py builds the same envelope bytes).
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from typing import NamedTuple

from trajhub.storage.database import Connection


class LogWrite(NamedTuple):
    """One row of `log_records`, as ingest writes it."""

    project: str
    trace_id: str  # 32 lowercase hex digits, or "" for a record outside any trace
    span_id: str  # 16 lowercase hex digits, or ""
    time_ns: int  # time_unix_nano, else observed_time_unix_nano
    observed_ns: int
    severity_number: int
    severity_text: str  # NUL-free copy (the body keeps the original)
    event_name: str  # LogRecord.event_name, else the `event.name` attribute; NUL-free
    resource_id: int  # the resource and scope envelope in `resources`
    digest: bytes  # blake2b-128 of the record's serialized bytes
    body: bytes  # the serialized LogRecord, compressed (storage/compression.py)


LOG_COLUMNS: tuple[str, ...] = LogWrite._fields

_TYPES = ("text", "text", "text", "bigint", "bigint", "integer", "text", "text", "bigint",
          "bytea", "bytea")

# A record that names a trace queues the trace for derivation, in the transaction that stores
# it (as storage/span_writer.py queues a span's): its content becomes the trace's spans' events
# (normalizers/log_events.py), so a record that arrives after its spans, even after the
# trajectory is final, derives the trace again. A re-sent record, stored already, queues nothing.
# The queue is written by a statement of its own: it stays on the coordinator, the records do not
# (storage/citus_tables.py).
_INSERT = f"""
INSERT INTO log_records ({", ".join(LOG_COLUMNS)})
SELECT * FROM unnest({", ".join(f"${i}::{t}[]" for i, t in enumerate(_TYPES, 1))})
ON CONFLICT DO NOTHING
RETURNING project, trace_id
"""
_QUEUE = """
INSERT INTO trace_changes (project, trace_id)
SELECT * FROM unnest($1::text[], $2::text[])
"""

_INSERT_RESOURCES = """
INSERT INTO resources (id, body)
SELECT * FROM unnest($1::bigint[], $2::bytea[])
ON CONFLICT (id) DO NOTHING
"""


async def write_logs(conn: Connection, rows: Collection[LogWrite],
                     resources: Mapping[int, bytes]) -> None:
    """Store the records (skipping those stored already) and the envelopes they reference,
    inside the caller's transaction."""
    if resources:
        await conn.execute(_INSERT_RESOURCES, list(resources), list(resources.values()))
    if rows:
        stored = await conn.fetch(_INSERT, *(list(column) for column in zip(*rows, strict=True)))
        traces = sorted({(r["project"], r["trace_id"]) for r in stored if r["trace_id"]})
        if traces:
            await conn.execute(_QUEUE, [t[0] for t in traces], [t[1] for t in traces])
