"""Retention in SQL: per-project overrides, and deleting expired traces in batches.

A trace expires when its spans last arrived (`traces.last_received_at`) before the cutoff. Each
batch takes the project's oldest traces through the `(project, last_received_at)` index and
deletes them with their spans (primary-key prefix), summary, trajectory and revisions (which
cascade) in one transaction, so the cost of a batch follows its size, not the tables'. Dataset
items are not touched: they hold their own snapshot of the trajectory (`source_trace_id` is a
plain reference).
"""

from __future__ import annotations

from datetime import datetime

import asyncpg

#: traces deleted per transaction: short transactions keep ingest and the workers moving
BATCH = 500

_EXPIRE = """
WITH expired AS (
    SELECT t.project, t.trace_id FROM traces t
    WHERE t.project = $1 AND t.last_received_at < $2
      AND NOT EXISTS (SELECT 1 FROM trace_changes c
                      WHERE c.project = t.project AND c.trace_id = t.trace_id)
    ORDER BY t.last_received_at
    LIMIT $3
    FOR UPDATE SKIP LOCKED
), gone_spans AS (
    DELETE FROM spans s USING expired e
    WHERE s.project = e.project AND s.trace_id = e.trace_id
), gone_trajectories AS (
    DELETE FROM trajectories j USING expired e
    WHERE j.project = e.project AND j.trace_id = e.trace_id
)
DELETE FROM traces t USING expired e
WHERE t.project = e.project AND t.trace_id = e.trace_id
RETURNING t.trace_id
"""

# the distinct projects of `traces`, one index probe each (a loose index scan)
_PROJECTS = """
WITH RECURSIVE p AS (
    (SELECT project FROM traces ORDER BY project LIMIT 1)
    UNION ALL
    SELECT (SELECT project FROM traces WHERE project > p.project ORDER BY project LIMIT 1)
    FROM p WHERE p.project IS NOT NULL
)
SELECT project FROM p WHERE project IS NOT NULL
"""


async def expire_batch(conn: asyncpg.Connection, project: str, cutoff: datetime,
                       limit: int = BATCH) -> int:
    """Delete up to `limit` of the project's traces last received before `cutoff`; returns how
    many."""
    async with conn.transaction():
        rows = await conn.fetch(_EXPIRE, project, cutoff, limit)
    return len(rows)


async def projects(conn: asyncpg.Connection) -> list[str]:
    return [r["project"] for r in await conn.fetch(_PROJECTS)]


async def overrides(conn: asyncpg.Connection) -> dict[str, float]:
    rows = await conn.fetch("SELECT project, days FROM project_retention")
    return {r["project"]: float(r["days"]) for r in rows}


async def get_override(conn: asyncpg.Connection, project: str) -> float | None:
    days = await conn.fetchval("SELECT days FROM project_retention WHERE project = $1", project)
    return None if days is None else float(days)


async def set_override(conn: asyncpg.Connection, project: str, days: float) -> None:
    await conn.execute(
        "INSERT INTO project_retention (project, days) VALUES ($1, $2) "
        "ON CONFLICT (project) DO UPDATE SET days = EXCLUDED.days, updated_at = now()",
        project, days)


async def clear_override(conn: asyncpg.Connection, project: str) -> bool:
    status = await conn.execute("DELETE FROM project_retention WHERE project = $1", project)
    return bool(status.endswith(" 1"))


__all__ = ["BATCH", "clear_override", "expire_batch", "get_override", "overrides", "projects",
           "set_override"]
