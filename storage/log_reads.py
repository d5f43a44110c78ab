"""Reads of stored OTLP log records (table `log_records`, migration 0069) for the REST API: a
trace's records (`GET /api/v1/traces/{trace_id}`, its OTLP logs export) and the project's list
(`GET /api/v1/logs`), orphans included."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

from trajhub.storage.database import Connection
from trajhub.storage.rows import Row, sql
from trajhub.storage.sql import Params

#: a record attached to no span: no span of its trace has its span id (one probe of the trace's
#: key and one of the spans' primary key, in the trace's partition)
ORPHANED = ("NOT EXISTS (SELECT 1 FROM trace_keys k JOIN spans s ON s.project = k.project "
            "AND s.trace_id = k.trace_id AND s.first_seen = k.first_seen "
            "AND s.span_id = l.span_id WHERE k.project = l.project AND k.trace_id = l.trace_id)")


@dataclass(frozen=True)
class LogRow(Row):
    """A stored log record: the columns reads look it up by, and the body as received."""

    trace_id: str
    span_id: str
    time_ns: int
    observed_ns: int
    severity_number: int
    severity_text: str
    event_name: str
    resource_id: int
    received_at: datetime
    digest: bytes
    body: bytes
    orphaned: bool = field(metadata=sql(ORPHANED))


_FIELDS = LogRow.columns("l")


async def trace_logs(conn: Connection, project: str, trace_id: str) -> list[LogRow]:
    """The trace's records in time order (through the primary key's (project, trace_id))."""
    return LogRow.from_records(await conn.fetch(
        f"SELECT {_FIELDS} FROM log_records l WHERE l.project = $1 AND l.trace_id = $2 "
        "ORDER BY l.time_ns, l.span_id, l.digest", project, trace_id))


@dataclass(frozen=True)
class LogFilter:
    trace_id: str | None = None
    span_id: str | None = None
    event_name: str | None = None
    orphaned: bool | None = None
    #: the keyset of the last record of the previous page: received_at, trace_id, span_id,
    #: time_ns, digest
    after: tuple[datetime, str, str, int, bytes] | None = None
    limit: int = 100


async def list_logs(conn: Connection, project: str, f: LogFilter) -> list[LogRow]:
    """A page of the project's records, the latest received first (the index of migration
    0070 reads them in that order)."""
    arg = Params(project)
    where = ["l.project = $1"]
    for column, value in (("trace_id", f.trace_id), ("span_id", f.span_id),
                          ("event_name", f.event_name)):
        if value is not None:
            where.append(f"l.{column} = {arg(value)}")
    if f.orphaned is not None:
        where.append(ORPHANED if f.orphaned else f"NOT {ORPHANED}")
    if f.after is not None:
        keys = ", ".join(f"{arg(v)}::{t}" for v, t in zip(
            f.after, ("timestamptz", "text", "text", "bigint", "bytea"), strict=True))
        where.append(f"(l.received_at, l.trace_id, l.span_id, l.time_ns, l.digest) < ({keys})")
    return LogRow.from_records(await conn.fetch(
        f"SELECT {_FIELDS} FROM log_records l WHERE {' AND '.join(where)} "
        "ORDER BY l.received_at DESC, l.trace_id DESC, l.span_id DESC, l.time_ns DESC, "
        f"l.digest DESC LIMIT {arg(f.limit)}", *arg.values))
