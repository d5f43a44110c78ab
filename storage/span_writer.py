"""The ingest write path: one transaction per request, committed before the client is answered.

Rows are COPYed into a per-connection staging table and merged into `spans` with
ON CONFLICT, so a re-sent span is stored once, and a re-sent span with a later end time (the
finished version of a long-running span) replaces the stored one. Only traces whose spans
actually changed are queued for the assembly worker.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from typing import Any

import asyncpg

SPAN_COLUMNS = (
    "project", "trace_id", "span_id", "parent_span_id", "name", "kind", "start_ns", "end_ns",
    "status_code", "service_name", "resource_id", "format", "attributes", "body",
)

_CREATE_STAGE = """
CREATE TEMP TABLE IF NOT EXISTS span_stage (LIKE spans INCLUDING DEFAULTS)
ON COMMIT DELETE ROWS
"""

_UPDATED = ", ".join(f"{c} = EXCLUDED.{c}" for c in SPAN_COLUMNS[3:])
_COLUMNS = ", ".join(SPAN_COLUMNS)

_MERGE = f"""
WITH merged AS (
    INSERT INTO spans ({_COLUMNS}, received_at)
    SELECT {_COLUMNS}, now() FROM span_stage
    ON CONFLICT (project, trace_id, span_id) DO UPDATE
        SET {_UPDATED}, received_at = now()
        WHERE spans.end_ns < EXCLUDED.end_ns
    RETURNING project, trace_id
)
INSERT INTO trace_changes (project, trace_id)
SELECT DISTINCT project, trace_id FROM merged
"""

_INSERT_RESOURCES = """
INSERT INTO resources (id, body)
SELECT * FROM unnest($1::bigint[], $2::bytea[])
ON CONFLICT (id) DO NOTHING
"""


async def prepare(conn: asyncpg.Connection) -> None:
    """Run once per connection before `write_spans`."""
    await conn.execute(_CREATE_STAGE)


async def write_spans(
    conn: asyncpg.Connection,
    rows: Collection[Sequence[Any]],
    resources: Mapping[int, bytes],
) -> None:
    """Store rows (in SPAN_COLUMNS order) and the resource envelopes they reference."""
    async with conn.transaction():
        if resources:
            await conn.execute(_INSERT_RESOURCES, list(resources), list(resources.values()))
        await conn.copy_records_to_table("span_stage", records=rows, columns=SPAN_COLUMNS)
        await conn.execute(_MERGE)
