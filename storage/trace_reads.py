"""Reads of raw traces and spans for the REST API."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass

from trajhub.storage import attribute_keys
from trajhub.storage.database import Connection
from trajhub.storage.rows import ProjectRow, SpanRow, TraceSummaryRow
from trajhub.storage.sql import Params, in_trace_partition

#: with several attribute or span-name filters, the trace list walks this many of the newest
#: traces before it reads the older ones through the key index (`list_traces`)
WALK = 2000
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


def _conditions(arg: Params, f: TraceFilter, keys: bool = True, spans: bool = True,
                bound: tuple[str, tuple[int, str]] | None = None) -> list[str]:
    """The conditions on trace `t` of `f` (its arguments added to `arg`, the project $1): the
    trace's own columns, then with `keys` the key sets' pre-filter of the attribute and
    span-name filters, then with `spans` their exact check; `bound`: also (start ns, trace id)
    `<` or `>=` that key."""
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
    if bound is not None:
        operator, (start_ns, trace_id) = bound
        where.append(f"(t.start_ns, t.trace_id) {operator} ({arg(start_ns)}, {arg(trace_id)})")
    if f.cursor is not None:
        where.append(f"(t.start_ns, t.trace_id) < ({arg(f.cursor[0])}, {arg(f.cursor[1])})")
    # Attribute and span-name filters: the hash set in `traces.attribute_keys` (GIN,
    # storage/attribute_keys.py) first narrows the traces; the exact check then looks at the
    # spans of each trace left. A trace whose set is NULL (stored before migration 0014) is
    # always checked. The keys every listed trace holds (a span name's, a filter's without
    # alternatives) are one condition, which the key index answers in one scan, without a
    # visit to the traces holding only some; a filter with alternatives needs one of its keys.
    if keys:
        held, alternatives = _keys(f)
        if held:
            where.append(_keys_held(arg(held), "@>" if len(held) > 1 else "&&"))
        where += [_keys_held(arg(one_of), "&&") for one_of in alternatives]
    if spans and f.span_name is not None:
        where.append(_has_span(f"s.name = {arg(f.span_name)}"))
    if spans:
        where += [_has_span(" OR ".join(f"s.attributes @> {arg(alt)}::jsonb" for alt in alts))
                  for alts in f.attributes]
    return where


def _keys(f: TraceFilter) -> tuple[list[int], list[list[int]]]:
    """The keys a listed trace's hash set holds all of, and those it holds one of each list of."""
    held = [] if f.span_name is None else [attribute_keys.span_name_key(f.span_name)]
    alternatives = []
    for documents in f.attributes:
        keys = attribute_keys.attribute_filter_keys(documents)
        if keys is not None and len(keys) == 1:
            held += keys
        elif keys is not None:
            alternatives.append(keys)
    return held, alternatives


async def list_traces(conn: Connection, project: str, f: TraceFilter
                      ) -> list[TraceSummaryRow]:
    """Newest first; keyset pagination on (start_ns, trace_id).

    With one attribute or span-name filter at most, one statement walks the project's traces
    newest first (traces_by_start) and keeps those that match. With several, PostgreSQL takes
    the share of traces meeting all of them for the product of their shares, which for
    attributes that go together (a user's model) is far too high: it walks the newest traces
    expecting a page soon, and can pass tens of thousands. So the walk stops after the newest
    WALK traces; if the filters did not fill a page there, they rarely hold together, and the
    older traces whose key sets hold every filter's keys are read from the key index
    (`_matching_keys`)."""
    held, alternatives = _keys(f)
    if len(held) + len(alternatives) < 2:
        return await _walk(conn, project, f, None)
    arg = Params(project)
    bound = await conn.fetchrow(
        f"SELECT t.start_ns, t.trace_id FROM traces t "
        f"WHERE {' AND '.join(_conditions(arg, f, keys=False, spans=False))} "
        f"ORDER BY t.start_ns DESC, t.trace_id DESC OFFSET {arg(WALK)} LIMIT 1", *arg.values)
    if bound is None:
        return await _walk(conn, project, f, None)
    key = (int(bound["start_ns"]), str(bound["trace_id"]))
    found = await _walk(conn, project, f, (">=", key))
    if len(found) == f.limit:
        return found
    return found + await _matching_keys(
        conn, project, dataclasses.replace(f, limit=f.limit - len(found)), key)


async def _walk(conn: Connection, project: str, f: TraceFilter,
                bound: tuple[str, tuple[int, str]] | None) -> list[TraceSummaryRow]:
    """The first traces of `f`, walked newest first (traces_by_start), within `bound`."""
    arg = Params(project)
    where = " AND ".join(_conditions(arg, f, bound=bound))
    return TraceSummaryRow.from_records(await conn.fetch(
        f"SELECT {TraceSummaryRow.columns('t')} FROM traces t WHERE {where} "
        f"ORDER BY t.start_ns DESC, t.trace_id DESC LIMIT {arg(f.limit)}", *arg.values))


async def _matching_keys(conn: Connection, project: str, f: TraceFilter,
                         before: tuple[int, str]) -> list[TraceSummaryRow]:
    """The first traces of `f` before `before` (start ns, trace id), newest first. The traces
    whose key sets let them through are read first, in a CTE of their own so that the planner
    reads them through the key index rather than in the list's order; then the exact checks
    run on the newest of them, a page at a time, until a page is full. On Citus the CTE is
    read from every shard, and each page's check from the shards of its traces
    (deploy/SCALING.md, section 3)."""
    found: list[TraceSummaryRow] = []
    while len(found) < f.limit:
        arg = Params(project)
        where = " AND ".join(_conditions(arg, f, spans=False, bound=("<", before)))
        # a hash collision only costs a trace the exact check drops: a few pages' worth of
        # candidates nearly always fill the page
        candidates = await conn.fetch(
            f"WITH keyed AS MATERIALIZED (SELECT t.trace_id, t.start_ns FROM traces t "
            f"WHERE {where}) SELECT trace_id, start_ns FROM keyed "
            f"ORDER BY start_ns DESC, trace_id DESC LIMIT {arg(4 * f.limit)}", *arg.values)
        for at in range(0, len(candidates), f.limit):
            arg = Params(project)
            checked = _conditions(arg, f, bound=("<", before))
            ids = [r["trace_id"] for r in candidates[at:at + f.limit]]
            checked.append(f"t.trace_id = ANY({arg(ids)}::text[])")
            found += TraceSummaryRow.from_records(await conn.fetch(
                f"SELECT {TraceSummaryRow.columns('t')} FROM traces t "
                f"WHERE {' AND '.join(checked)} ORDER BY t.start_ns DESC, t.trace_id DESC",
                *arg.values))
            if len(found) >= f.limit:
                break
        if len(candidates) < 4 * f.limit:
            break
        before = (int(candidates[-1]["start_ns"]), str(candidates[-1]["trace_id"]))
    return found[:f.limit]


async def projects(conn: Connection, only: str | None = None) -> list[ProjectRow]:
    """Every project that holds a trace (or just `only`), by name. One pass over the `traces`
    table (a row per trace, with its span count), never over the spans."""
    return ProjectRow.from_records(await conn.fetch(
        f"SELECT {ProjectRow.columns()} FROM traces WHERE $1::text IS NULL OR project = $1 "
        "GROUP BY project ORDER BY project", only))
