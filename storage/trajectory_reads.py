"""Reads of derived trajectories for the REST API."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

import asyncpg

from trajhub.storage.rows import (
    ExplanationRow,
    TrajectoryDocumentRow,
    TrajectoryRow,
    TrajectorySummaryRow,
)
from trajhub.storage.sql import Params
from trajhub.storage.stored_documents import HAS_DOCUMENT

#: sort name → SQL expression; each is paired with trace_id for a total order
SORTS = {
    "start_time": "start_ns",
    "duration": "duration_ms",
    "tokens": "(input_tokens + output_tokens)",
    "steps": "step_count",
}


@dataclass(frozen=True)
class TrajectoryFilter:
    start_ns: int | None = None
    end_ns: int | None = None
    agent: str | None = None
    tool: str | None = None
    model: str | None = None
    framework: str | None = None
    service: str | None = None
    session_id: str | None = None
    user_id: str | None = None
    status: str | None = None
    has_failed_tool_steps: bool | None = None
    has_failed_model_steps: bool | None = None
    has_error: bool | None = None
    min_tokens: int | None = None
    max_tokens: int | None = None
    min_duration_ms: int | None = None
    max_duration_ms: int | None = None
    text: str | None = None
    trace_ids: Sequence[str] | None = None
    sort: str = "start_time"
    descending: bool = True
    cursor: tuple[Any, str] | None = None
    limit: int = 50


def _where(project: str, f: TrajectoryFilter) -> tuple[list[str], Params]:
    arg = Params(project)
    where = ["project = $1"]

    if f.start_ns is not None:
        where.append(f"start_ns >= {arg(f.start_ns)}")
    if f.end_ns is not None:
        where.append(f"start_ns < {arg(f.end_ns)}")
    # case-insensitive array containment, so the GIN indexes over the lower-cased names serve
    # these (migration 0008)
    if f.agent is not None:
        where.append(f"trajhub_lower_all(agent_names) @> ARRAY[lower({arg(f.agent)})]")
    if f.tool is not None:
        where.append(f"trajhub_lower_all(tool_names) @> ARRAY[lower({arg(f.tool)})]")
    if f.model is not None:
        where.append(f"trajhub_lower_all(model_names) @> ARRAY[lower({arg(f.model)})]")
    if f.service is not None:
        where.append(f"service = {arg(f.service)}")
    if f.session_id is not None:
        where.append(f"session_id = {arg(f.session_id)}")
    if f.user_id is not None:
        where.append(f"user_id = {arg(f.user_id)}")
    if f.framework is not None:
        where.append(f"framework = {arg(f.framework)}")
    if f.status is not None:
        where.append(f"status = {arg(f.status)}")
        if f.status == "open":
            # the few open ones are listed in open_trajectories (migration 0016): start there
            # rather than walk the project's trajectories for them
            where.append("trace_id IN (SELECT o.trace_id FROM open_trajectories o "
                         "WHERE o.project = $1)")
    if f.has_failed_tool_steps is not None:
        where.append("failed_tool_steps > 0" if f.has_failed_tool_steps
                     else "failed_tool_steps = 0")
    if f.has_failed_model_steps is not None:
        where.append("failed_model_steps > 0" if f.has_failed_model_steps
                     else "failed_model_steps = 0")
    if f.has_error is not None:
        where.append("has_error" if f.has_error else "NOT has_error")
    if f.min_tokens is not None:
        where.append(f"input_tokens + output_tokens >= {arg(f.min_tokens)}")
    if f.max_tokens is not None:
        where.append(f"input_tokens + output_tokens <= {arg(f.max_tokens)}")
    if f.min_duration_ms is not None:
        where.append(f"duration_ms >= {arg(f.min_duration_ms)}")
    if f.max_duration_ms is not None:
        where.append(f"duration_ms <= {arg(f.max_duration_ms)}")
    if f.text:
        # The text, ignoring case: root_input and root_output are stored lower-cased
        # (storage/derivation_store.py, migration 0018), so this is exactly `ILIKE '%text%'`
        # (which compares lower(run) with lower(pattern)) without lower-casing each run read.
        # strpos rather than LIKE: no escaping of % and _, and a faster search.
        needle = f"lower({arg(f.text)})"
        substring = f"(strpos(root_input, {needle}) > 0 OR strpos(root_output, {needle}) > 0)"
        if any(c.isalnum() for c in f.text):
            # the word index (migration 0014) finds the runs having a word that starts with
            # each word of the text (split as the lower-cased stored text was); the substring
            # check then keeps those containing it. When most runs have every word (two common
            # words, rarely adjacent), PostgreSQL walks the runs newest first instead, and this
            # check is then what each run costs.
            where.append(f"trajhub_search_words(root_input, root_output) @@ "
                         f"trajhub_prefix_query({needle}) AND {substring}")
        else:  # no word to look up (punctuation only): a scan
            where.append(substring)
    if f.trace_ids is not None:
        where.append(f"trace_id = ANY({arg(list(f.trace_ids))}::text[])")
    if f.cursor is not None:
        op = "<" if f.descending else ">"
        where.append(f"({SORTS[f.sort]}, trace_id) {op} ({arg(f.cursor[0])}, {arg(f.cursor[1])})")
    return where, arg


async def list_trajectories(conn: asyncpg.Connection, project: str, f: TrajectoryFilter
                            ) -> list[TrajectorySummaryRow]:
    where, arg = _where(project, f)
    order = "DESC" if f.descending else "ASC"
    sort = SORTS[f.sort]
    sql = (f"SELECT {TrajectorySummaryRow.columns(sort=sort)} FROM trajectories "
           f"WHERE {' AND '.join(where)} ORDER BY {sort} {order}, trace_id {order} "
           f"LIMIT {arg(f.limit)}")
    return TrajectorySummaryRow.from_records(await conn.fetch(sql, *arg.values))


async def count_trajectories(conn: asyncpg.Connection, project: str, f: TrajectoryFilter
                             ) -> int:
    """How many trajectories match the filter (the cursor and limit aside)."""
    where, arg = _where(project, replace(f, cursor=None))
    return int(await conn.fetchval(
        f"SELECT count(*) FROM trajectories WHERE {' AND '.join(where)}", *arg.values))


async def trajectory_documents(conn: asyncpg.Connection, project: str, f: TrajectoryFilter
                               ) -> list[TrajectoryDocumentRow]:
    """Like list_trajectories, with the documents (for filling evaluation sets)."""
    where, arg = _where(project, f)
    sql = (f"SELECT {TrajectoryDocumentRow.columns()} FROM trajectories "
           f"WHERE {' AND '.join(where)} AND {HAS_DOCUMENT} "
           f"ORDER BY start_ns DESC, trace_id DESC LIMIT {arg(f.limit)}")
    return TrajectoryDocumentRow.from_records(await conn.fetch(sql, *arg.values))


async def trajectory(conn: asyncpg.Connection, project: str, trace_id: str
                     ) -> TrajectoryRow | None:
    row = await conn.fetchrow(
        f"SELECT {TrajectoryRow.columns()} FROM trajectories "
        "WHERE project = $1 AND trace_id = $2", project, trace_id)
    return TrajectoryRow.from_record(row) if row is not None else None


async def explanation(conn: asyncpg.Connection, project: str, trace_id: str
                      ) -> ExplanationRow | None:
    row = await conn.fetchrow(
        f"SELECT {ExplanationRow.columns()} FROM trajectories "
        "WHERE project = $1 AND trace_id = $2", project, trace_id)
    return ExplanationRow.from_record(row) if row is not None else None
