"""Reads of raw traces and spans for the REST API."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from trajhub.storage import attribute_keys
from trajhub.storage.database import Connection
from trajhub.storage.rows import ProjectRow, SpanRow, TraceSummaryRow
from trajhub.storage.sql import Params, in_trace_partition

#: the span columns, for queries over `spans s`
SPAN_FIELDS = SpanRow.columns("s")


async def trace_spans(conn: Connection, project: str, trace_id: str
                      ) -> list[SpanRow]:
    return SpanRow.from_records(await conn.fetch(
        f"SELECT {SPAN_FIELDS} FROM spans s WHERE s.project = $1 AND s.trace_id = $2 "
        f"AND {in_trace_partition('s.')} "
        "ORDER BY s.start_ns, s.end_ns, s.span_id",
        project, trace_id))


async def trace_span_page(conn: Connection, project: str, trace_id: str,
                          after: tuple[int, int, str] | None, limit: int
                          ) -> tuple[int, list[SpanRow]]:
    """How many spans the trace has, and a page of them in start order (start, end, span id)
    after the keyset `after`, read in one snapshot. The count is the trace list's
    (`traces.span_count`, written by the derivation moments after spans arrive): counting a
    large trace's spans costs as much as the page (bench/README.md, "Large traces"); counted
    only for a trace not derived yet."""
    arg = Params(project, trace_id)
    where = f"s.project = $1 AND s.trace_id = $2 AND {in_trace_partition('s.')}"
    if after is not None:
        where += (f" AND (s.start_ns, s.end_ns, s.span_id) > "
                  f"({arg(after[0])}, {arg(after[1])}, {arg(after[2])})")
    async with conn.transaction(isolation="repeatable_read", readonly=True):
        total = await conn.fetchval(
            "SELECT t.span_count FROM traces t WHERE t.project = $1 AND t.trace_id = $2 "
            f"AND {in_trace_partition('t.')}", project, trace_id)
        if total is None:
            total = await conn.fetchval(
                "SELECT count(*) FROM spans s WHERE s.project = $1 AND s.trace_id = $2 "
                f"AND {in_trace_partition('s.')}", project, trace_id)
        rows = await conn.fetch(
            f"SELECT {SPAN_FIELDS} FROM spans s WHERE {where} "
            f"ORDER BY s.start_ns, s.end_ns, s.span_id LIMIT {arg(limit)}", *arg.values)
    return int(total), SpanRow.from_records(rows)


async def span(conn: Connection, project: str, trace_id: str, span_id: str
               ) -> SpanRow | None:
    return await SpanRow.fetch_one(
        conn, f"SELECT {SPAN_FIELDS} FROM spans s "
        f"WHERE s.project = $1 AND s.trace_id = $2 AND s.span_id = $3 "
        f"AND {in_trace_partition('s.')}",
        project, trace_id, span_id)


async def resources(conn: Connection, ids: Sequence[int]) -> dict[int, bytes]:
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


def _keys_held(keys: str, operator: str) -> str:
    """Trace `t`'s hash set holds every one (`@>`) or one (`&&`) of `keys`, or it has none."""
    return f"(t.attribute_keys {operator} {keys}::integer[] OR t.attribute_keys IS NULL)"


def _has_span(condition: str) -> str:
    """Whether a span of trace `t` meets `condition`, checked trace by trace. Not an EXISTS:
    the planner may turn that into a join that reads every span of the project (seconds at a
    few million spans), where checking the spans of the few traces left is milliseconds."""
    return ("(SELECT true FROM spans s WHERE s.project = t.project "
            f"AND s.trace_id = t.trace_id AND ({condition}) LIMIT 1) IS NOT NULL")


async def list_traces(conn: Connection, project: str, f: TraceFilter
                      ) -> list[TraceSummaryRow]:
    """Newest first; keyset pagination on (start_ns, trace_id).

    With one attribute or span-name filter at most, one statement walks the project's traces
    newest first (traces_by_start) and keeps those that match. With several, PostgreSQL takes
    the share of traces meeting all of them for the product of their shares, which for
    attributes that go together (a user's model) is far too high: it walks the newest traces
    expecting a page soon, and passes thousands. Then the traces whose key sets hold every
    filter's keys are read from the key index first (`_matching_keys`), and the exact span
    check runs on the newest of them, a page at a time."""
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
    if f.cursor is not None:
        where.append(f"(t.start_ns, t.trace_id) < ({arg(f.cursor[0])}, {arg(f.cursor[1])})")
    # Attribute and span-name filters: the hash set in `traces.attribute_keys` (GIN,
    # storage/attribute_keys.py) first narrows the traces; the exact check then looks at the
    # spans of each trace left. A trace whose set is NULL (stored before migration 0014) is
    # always checked. The keys every listed trace holds (a span name's, a filter's without
    # alternatives) are one condition, which the key index answers in one scan, without a
    # visit to the traces holding only some; a filter with alternatives needs one of its keys.
    held, alternatives_held = [], []
    if f.span_name is not None:
        held.append(attribute_keys.span_name_key(f.span_name))
    for alternatives in f.attributes:
        keys = attribute_keys.attribute_filter_keys(alternatives)
        if keys is not None and len(keys) == 1:
            held += keys
        elif keys is not None:
            alternatives_held.append(keys)
    keyed = ([_keys_held(arg(held), "@>")] if held else []) \
        + [_keys_held(arg(keys), "&&") for keys in alternatives_held]
    narrowing = len(arg.values)  # the arguments of `where` and `keyed`: $1 … $narrowing
    exact = [] if f.span_name is None else [_has_span(f"s.name = {arg(f.span_name)}")]
    exact += [_has_span(" OR ".join(f"s.attributes @> {arg(alt)}::jsonb" for alt in alts))
              for alts in f.attributes]
    if len(held) + len(alternatives_held) > 1:
        return await _matching_keys(conn, arg, narrowing, where + keyed, exact, f.limit)
    sql = (
        f"SELECT {TraceSummaryRow.columns('t')} FROM traces t WHERE "
        + " AND ".join(where + keyed + exact)
        + f" ORDER BY t.start_ns DESC, t.trace_id DESC LIMIT {arg(f.limit)}"
    )
    return TraceSummaryRow.from_records(await conn.fetch(sql, *arg.values))


async def _matching_keys(conn: Connection, arg: Params, narrowing: int, where: list[str],
                         exact: list[str], limit: int) -> list[TraceSummaryRow]:
    """The first `limit` traces, newest first, that meet `where` (the key sets' conditions
    among them, with the arguments $1 … $narrowing of `arg`) and then `exact`. The traces
    meeting `where` are read first, in a CTE of their own so that the planner reads them
    through the key index rather than in the list's order; then the exact checks run on the
    newest of them, a page at a time, until a page is full. On Citus the CTE is read from every
    shard, and each page's check from the shards of its traces (deploy/SCALING.md, section 3)."""
    found: list[TraceSummaryRow] = []
    after: tuple[int, str] | None = None
    while len(found) < limit:
        read = Params(*arg.values[:narrowing])
        below = [] if after is None else \
            [f"(t.start_ns, t.trace_id) < ({read(after[0])}, {read(after[1])})"]
        # a hash collision only costs a trace the exact check drops: a few pages' worth of
        # candidates nearly always fill the page
        candidates = await conn.fetch(
            "WITH keyed AS MATERIALIZED (SELECT t.trace_id, t.start_ns FROM traces t WHERE "
            + " AND ".join(where + below) + ") SELECT trace_id, start_ns FROM keyed "
            f"ORDER BY start_ns DESC, trace_id DESC LIMIT {read(4 * limit)}", *read.values)
        for at in range(0, len(candidates), limit):
            page = Params(*arg.values)
            ids = [r["trace_id"] for r in candidates[at:at + limit]]
            found += TraceSummaryRow.from_records(await conn.fetch(
                f"SELECT {TraceSummaryRow.columns('t')} FROM traces t WHERE "
                + " AND ".join([*where, f"t.trace_id = ANY({page(ids)}::text[])", *exact])
                + " ORDER BY t.start_ns DESC, t.trace_id DESC", *page.values))
            if len(found) >= limit:
                break
        if len(candidates) < 4 * limit:
            break
        after = (candidates[-1]["start_ns"], candidates[-1]["trace_id"])
    return found[:limit]


async def projects(conn: Connection, only: str | None = None) -> list[ProjectRow]:
    """Every project that holds a trace (or just `only`), by name. One pass over the `traces`
    table (a row per trace, with its span count), never over the spans."""
    return ProjectRow.from_records(await conn.fetch(
        f"SELECT {ProjectRow.columns()} FROM traces WHERE $1::text IS NULL OR project = $1 "
        "GROUP BY project ORDER BY project", only))
