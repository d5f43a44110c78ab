"""Reads of raw traces and spans for the REST API."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import asyncpg

from trajhub.storage.sql import Params

SPAN_FIELDS = """s.trace_id, s.span_id, s.parent_span_id, s.name, s.kind, s.start_ns, s.end_ns,
                 s.status_code, s.service_name, s.resource_id, s.format, s.body"""


async def trace_spans(conn: asyncpg.Connection, project: str, trace_id: str
                      ) -> list[asyncpg.Record]:
    return await conn.fetch(
        f"SELECT {SPAN_FIELDS} FROM spans s WHERE s.project = $1 AND s.trace_id = $2 "
        "ORDER BY s.start_ns, s.end_ns, s.span_id",
        project, trace_id)


async def span(conn: asyncpg.Connection, project: str, trace_id: str, span_id: str
               ) -> asyncpg.Record | None:
    return await conn.fetchrow(
        f"SELECT {SPAN_FIELDS} FROM spans s "
        "WHERE s.project = $1 AND s.trace_id = $2 AND s.span_id = $3",
        project, trace_id, span_id)


async def resources(conn: asyncpg.Connection, ids: Sequence[int]) -> dict[int, bytes]:
    rows = await conn.fetch("SELECT id, body FROM resources WHERE id = ANY($1::bigint[])",
                            list(ids))
    return {r["id"]: r["body"] for r in rows}


@dataclass(frozen=True)
class TraceFilter:
    start_ns: int | None = None
    end_ns: int | None = None
    service: str | None = None
    span_name: str | None = None
    has_error: bool | None = None
    min_duration_ns: int | None = None
    #: each entry: JSON documents of which a span's attributes must contain one
    attributes: Sequence[Sequence[str]] = ()
    cursor: tuple[int, str] | None = None  # (start_ns, trace_id) of the last row seen
    limit: int = 50


async def list_traces(conn: asyncpg.Connection, project: str, f: TraceFilter
                      ) -> list[asyncpg.Record]:
    """Newest first; keyset pagination on (start_ns, trace_id)."""
    arg = Params(project)
    where = ["t.project = $1"]
    if f.start_ns is not None:
        where.append(f"t.start_ns >= {arg(f.start_ns)}")
    if f.end_ns is not None:
        where.append(f"t.start_ns < {arg(f.end_ns)}")
    if f.service is not None:
        where.append(f"t.service_name = {arg(f.service)}")
    if f.has_error is not None:
        where.append("t.error_count > 0" if f.has_error else "t.error_count = 0")
    if f.min_duration_ns is not None:
        where.append(f"t.end_ns - t.start_ns >= {arg(f.min_duration_ns)}")
    if f.span_name is not None:
        where.append("EXISTS (SELECT 1 FROM spans s WHERE s.project = t.project "
                     f"AND s.trace_id = t.trace_id AND s.name = {arg(f.span_name)})")
    for alternatives in f.attributes:
        matches = " OR ".join(f"s.attributes @> {arg(alt)}::jsonb" for alt in alternatives)
        where.append("EXISTS (SELECT 1 FROM spans s WHERE s.project = t.project "
                     f"AND s.trace_id = t.trace_id AND ({matches}))")
    if f.cursor is not None:
        where.append(f"(t.start_ns, t.trace_id) < ({arg(f.cursor[0])}, {arg(f.cursor[1])})")
    sql = (
        "SELECT t.trace_id, t.root_span_id, t.root_name, t.service_name, t.start_ns, t.end_ns, "
        "t.span_count, t.error_count FROM traces t WHERE " + " AND ".join(where)
        + f" ORDER BY t.start_ns DESC, t.trace_id DESC LIMIT {arg(f.limit)}"
    )
    return await conn.fetch(sql, *arg.values)
