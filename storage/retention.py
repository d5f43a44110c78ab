"""Retention in SQL: per-project overrides, time partitions, and expiring traces.

The trace-keyed tables are partitioned by the time their trace was first seen (migration 0021).
A trace expires when its spans last arrived (`traces.last_received_at`) before its project's
cutoff. Expired data goes two ways:

- **Whole partitions.** A partition whose every trace has expired under its own project's
  retention (and none waits for derivation) is detached and dropped in every partitioned table:
  the cost is a few catalog changes, whatever the partition holds, plus deleting its traces'
  rows of `trace_keys` (one small row per trace, through its `first_seen` index).
- **Row deletes**, for what is left: a project whose retention is shorter than another's in the
  same partition, or a trace of an old partition that kept receiving spans. Each batch takes the
  project's oldest traces through the `(project, last_received_at)` index and deletes them with
  their spans, summary, trajectory, revisions and key in one transaction, so the cost of a batch
  follows its size, not the tables'.

Log records (migration 0069, not partitioned) go with their trace both ways; those whose trace
has no spans, or that name no trace, go by their own received time under their project's
retention (`expire_orphan_logs`).

Dataset items are not touched: they hold their own snapshot of the trajectory
(`source_trace_id` is a plain reference).

Ingest reads or records a trace's key row and holds its lock until it commits
(storage/span_writer.py). Both ways of expiring take the key rows first, so a span written
concurrently is either seen (and keeps its trace) or, once the key is gone, starts its trace
afresh in the current partition: an acknowledged span is never dropped with an old partition.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

import asyncpg

from trajhub.storage import rollups, session_rows, trace_locks
from trajhub.storage.database import Connection
from trajhub.storage.derivation_store import NOT_QUEUED

#: traces deleted per transaction: short transactions keep ingest and the workers moving
BATCH = 500

#: the partitioned tables; a partition of each covers every time range (`trajhub_time_partitions`)
PARTITIONED = ("spans", "traces", "trajectories", "trajectory_revisions", "trajectory_words")

#: how long expiring a partition waits for ingest transactions holding its traces' keys
LOCK_TIMEOUT = "5s"

# Each statement of a batch reads one kind of table (storage/citus_tables.py): the expired traces
# (no lock: sweeps run one at a time, under the sweep's advisory lock), then their keys, locked
# by an update that waits for any ingest writing to these traces (it holds the key's row lock
# until it commits, with its queued change), then which of them have no queued change: one
# committed before the keys were locked is seen, and a later ingest waits for this transaction.
_EXPIRED = """
SELECT t.project, t.trace_id FROM traces t
WHERE t.project = $1 AND t.last_received_at < $2
ORDER BY t.last_received_at
LIMIT $3
"""

_LOCK_KEYS = """
UPDATE trace_keys k SET first_seen = k.first_seen
FROM unnest($1::text[], $2::text[]) AS e(project, trace_id)
WHERE k.project = e.project AND k.trace_id = e.trace_id AND k.trace_id = ANY($2::text[])
RETURNING k.project, k.trace_id, k.first_seen
"""

# Of those with no queued change, only the ones no deriver or finalize statement holds (the
# trace's lock, storage/trace_locks.py): a run being made final meanwhile goes with the next
# batch, whose statement sees what it contributed to the rollups.
_UNQUEUED = f"""
SELECT e.project, e.trace_id FROM unnest($1::text[], $2::text[]) AS e(project, trace_id)
WHERE {NOT_QUEUED.format(project="e.project", trace_id="e.trace_id")}
  AND {trace_locks.TRY_LOCK.format(project="e.project", trace_id="e.trace_id")}
"""

# A later statement than _LOCK_KEYS, so it sees every span committed before the keys were
# locked; `first_seen = ANY` lets PostgreSQL read only those traces' partitions.
_DELETE = """
WITH e AS (
    SELECT * FROM unnest($1::text[], $2::text[]) AS e(project, trace_id)
), {SCORES}, gone_spans AS (
    DELETE FROM spans s USING e
    WHERE s.project = e.project AND s.trace_id = e.trace_id AND s.first_seen = ANY($3)
), gone_trajectories AS (
    DELETE FROM trajectories j USING e
    WHERE j.project = e.project AND j.trace_id = e.trace_id AND j.first_seen = ANY($3)
), gone_words AS (
    DELETE FROM trajectory_words w USING e
    WHERE w.project = e.project AND w.trace_id = e.trace_id AND w.first_seen = ANY($3)
), gone_words_queued AS (
    -- the queue of words to fill is not partitioned (migration 0068)
    DELETE FROM trajectory_words_queue q USING e
    WHERE q.project = e.project AND q.trace_id = e.trace_id
), gone_revisions AS (
    DELETE FROM trajectory_revisions r USING e
    WHERE r.project = e.project AND r.trace_id = e.trace_id AND r.first_seen = ANY($3)
), gone_scores AS (
    -- scores are not partitioned (migration 0035): they go with their trajectory here
    DELETE FROM scores x USING e
    WHERE x.project = e.project AND x.trace_id = e.trace_id
), gone_review_items AS (
    -- so are review queues' items (migration 0060)
    DELETE FROM review_items i USING e
    WHERE i.project = e.project AND i.trace_id = e.trace_id
), gone_chunks AS (
    -- and a large trajectory's chunks (migration 0061)
    DELETE FROM trajectory_chunks c USING e
    WHERE c.project = e.project AND c.trace_id = e.trace_id
), gone_open AS (
    DELETE FROM open_trajectories o USING e
    WHERE o.project = e.project AND o.trace_id = e.trace_id
), gone_logs AS (
    -- a trace's log records go with it, through their primary key's (project, trace_id)
    DELETE FROM log_records l USING e
    WHERE l.project = e.project AND l.trace_id = e.trace_id
), gone_keys AS (
    DELETE FROM trace_keys k USING e
    WHERE k.project = e.project AND k.trace_id = e.trace_id
)
-- what their final trajectories contributed to monitoring's rollups and their sessions is
-- taken back
{ROLLUPS}
DELETE FROM traces t USING e
WHERE t.project = e.project AND t.trace_id = e.trace_id AND t.first_seen = ANY($3)
RETURNING t.trace_id
""".replace("{ROLLUPS}", rollups.take_back_ctes("e")).replace("{SCORES}", rollups.read_scores("e"))

# Log records whose trace has no spans (no key: none arrived, or retention took them), and those
# outside any trace, go by their own received time, oldest first through the index of migration
# 0070. A record of a trace that has spans goes with the trace (`_DELETE`), its span there or
# not. The rows are taken by address, as storage/derivation_store.py's claims are.
_EXPIRE_ORPHAN_LOGS = """
DELETE FROM log_records l
WHERE (l.project, l.trace_id, l.span_id, l.time_ns, l.digest) IN (
    SELECT o.project, o.trace_id, o.span_id, o.time_ns, o.digest FROM log_records o
    WHERE o.project = $1 AND o.received_at < $2
      AND NOT EXISTS (SELECT 1 FROM trace_keys k
                      WHERE k.project = o.project AND k.trace_id = o.trace_id)
    ORDER BY o.received_at LIMIT $3)
"""

# the distinct projects of a table (Citus runs no recursive CTE over a distributed table, which the
# loose index scan this was needed)
_PROJECTS = "SELECT DISTINCT project FROM {table}"


async def expire_batch(conn: Connection, project: str, cutoff: datetime,
                       limit: int = BATCH) -> int:
    """Delete up to `limit` of the project's traces last received before `cutoff`; returns how
    many."""
    async with conn.transaction():
        # Creating a partition (trajhub_create_partition) locks its tables in name order, spans
        # before traces. _EXPIRED locks traces' rows and _DELETE then needs spans, so spans is
        # taken first here: in the same order, the two wait for each other and never deadlock.
        await conn.execute("LOCK TABLE ONLY spans IN ROW EXCLUSIVE MODE")
        expired = await conn.fetch(_EXPIRED, project, cutoff, limit)
        if not expired:
            return 0
        keys = {(r["project"], r["trace_id"]): r["first_seen"] for r in await conn.fetch(
            _LOCK_KEYS, [r["project"] for r in expired], [r["trace_id"] for r in expired])}
        if not keys:
            return 0
        unqueued = await conn.fetch(_UNQUEUED, [k[0] for k in keys], [k[1] for k in keys])
        taken = [{"project": r["project"], "trace_id": r["trace_id"],
                  "first_seen": keys[(r["project"], r["trace_id"])]} for r in unqueued]
        if not taken:
            return 0
        rows = await conn.fetch(_DELETE, [r["project"] for r in taken],
                                [r["trace_id"] for r in taken],
                                sorted({r["first_seen"] for r in taken}))
        # the sessions whose first or latest turn went read theirs again from those left
        await session_rows.refresh(conn)
    return len(rows)


async def expire_orphan_logs(conn: Connection, project: str, cutoff: datetime,
                             limit: int = BATCH) -> int:
    """Delete up to `limit` of the project's log records received before `cutoff` whose trace
    has no spans (or that name no trace); returns how many."""
    status = await conn.execute(_EXPIRE_ORPHAN_LOGS, project, cutoff, limit)
    return int(status.split()[-1])


async def projects(conn: Connection) -> list[str]:
    """Every project that holds a trace (its key is written with its first span) or a log
    record."""
    found = {r["project"] for r in await conn.fetch(_PROJECTS.format(table="trace_keys"))}
    found.update(r["project"] for r in await conn.fetch(_PROJECTS.format(table="log_records")))
    return sorted(found)


# -- time partitions ---------------------------------------------------------------------------

@dataclass(frozen=True)
class TimePartition:
    lower: datetime
    upper: datetime

    def name(self, table: str) -> str:
        """The partition of `table` for this range (named by trajhub_create_partition)."""
        return f"{table}_p{self.lower.astimezone(UTC):%Y%m%d_%H%M%S}"


async def ensure_partitions(conn: Connection, width: timedelta, ahead: int) -> int:
    """Create the partitions from now to `ahead` widths ahead that do not exist yet; returns
    how many time ranges it created."""
    async with conn.transaction():
        return int(await conn.fetchval("SELECT trajhub_ensure_partitions($1, $2)", width, ahead))


async def partitions(conn: Connection) -> list[TimePartition]:
    return [TimePartition(r["lower"], r["upper"]) for r in await conn.fetch(
        "SELECT lower, upper FROM trajhub_time_partitions ORDER BY lower")]


async def _partition_projects(conn: Connection, part: TimePartition) -> set[str]:
    found: set[str] = set()
    for table in ("spans", "traces", "trajectories"):
        if await conn.fetchval("SELECT to_regclass($1)", part.name(table)) is None:
            continue  # an earlier, interrupted drop got that far
        found.update(r["project"] for r in await conn.fetch(
            _PROJECTS.format(table=part.name(table))))
    return found


async def partition_expired(conn: Connection, part: TimePartition,
                            days_of: Callable[[str], float], now: datetime) -> bool:
    """True when every trace in the partition has expired under its project's retention
    (`days_of(project)`, 0 = forever) and none waits for derivation."""
    for project in await _partition_projects(conn, part):
        days = days_of(project)
        if days <= 0:
            return False
        cutoff = now - timedelta(days=days)
        if part.upper > cutoff:
            return False
        traces = part.name("traces")
        if await conn.fetchval("SELECT to_regclass($1)", traces) is not None and \
                await conn.fetchval(
                    f"SELECT EXISTS (SELECT 1 FROM {traces} "
                    "WHERE project = $1 AND last_received_at >= $2)", project, cutoff):
            return False  # a trace that kept receiving spans: row deletes take it later
    spans = part.name("spans")
    if await conn.fetchval("SELECT to_regclass($1)", spans) is None:
        return True
    # the queue is short: one probe of the partition's primary key per queued change (the
    # queue is read on its own: it stays on the coordinator, the partition does not)
    queued = await conn.fetch("SELECT DISTINCT project, trace_id FROM trace_changes")
    return not queued or not await conn.fetchval(
        f"SELECT EXISTS (SELECT 1 FROM {spans} s "
        "JOIN unnest($1::text[], $2::text[]) AS c(project, trace_id) "
        "ON s.project = c.project AND s.trace_id = c.trace_id WHERE s.trace_id = ANY($2))",
        [r["project"] for r in queued], [r["trace_id"] for r in queued])


class _Kept(Exception):
    """The partition gained a live trace while its keys were being taken."""


async def drop_partition(conn: Connection, part: TimePartition,
                         days_of: Callable[[str], float], now: datetime) -> bool:
    """Drop the partition in every partitioned table if it has expired; True when it did."""
    try:
        async with conn.transaction():
            await conn.execute(f"SET LOCAL lock_timeout = '{LOCK_TIMEOUT}'")
            # Taking the keys waits for every ingest writing to these traces; the check then
            # sees what they wrote. Once this commits, a span of these traces is filed under a
            # new key, in the current partition, so nothing is written here any more.
            await conn.execute(
                "DELETE FROM trace_keys WHERE first_seen >= $1 AND first_seen < $2",
                part.lower, part.upper)
            if not await partition_expired(conn, part, days_of, now):
                raise _Kept
            if await conn.fetchval("SELECT to_regclass($1)", part.name("trajectories")):
                # monitoring's rollups lose what the partition's trajectories contributed
                # (their scores still in place)
                await conn.execute(rollups.partition_take_back(part.name("trajectories")))
                # read from the turns with a contribution: the partition's are still there
                await session_rows.refresh(conn)
                await conn.execute(
                    f"DELETE FROM open_trajectories o USING {part.name('trajectories')} t "
                    "WHERE o.project = t.project AND o.trace_id = t.trace_id")
                # scores are not partitioned (migration 0035): they go with the partition's
                # trajectories, named first (they are reference tables on Citus, which deletes
                # from those by values, not by a join with a distributed table)
                gone = await conn.fetch(
                    f"SELECT t.project, t.trace_id FROM {part.name('trajectories')} t")
                for table in ("scores", "review_items"):
                    await conn.execute(
                        f"DELETE FROM {table} x USING unnest($1::text[], $2::text[]) "
                        "AS t(project, trace_id) "
                        "WHERE x.project = t.project AND x.trace_id = t.trace_id",
                        [r["project"] for r in gone], [r["trace_id"] for r in gone])
                await conn.execute(
                    f"DELETE FROM trajectory_chunks c USING {part.name('trajectories')} t "
                    "WHERE c.project = t.project AND c.trace_id = t.trace_id")
                # and the queue of words to fill (migration 0068): a few, if any
                await conn.execute(
                    "DELETE FROM trajectory_words_queue q WHERE q.first_seen >= $1 "
                    "AND q.first_seen < $2", part.lower, part.upper)
            if await conn.fetchval("SELECT to_regclass($1)", part.name("traces")):
                # log records are not partitioned (migration 0069): they go with the
                # partition's traces
                await conn.execute(
                    f"DELETE FROM log_records l USING {part.name('traces')} t "
                    "WHERE l.project = t.project AND l.trace_id = t.trace_id")
    except _Kept:
        return False
    # Citus cannot detach a partition CONCURRENTLY (deploy/SCALING.md, section 3): there the
    # partition is dropped at once, which locks its table for as long as the drop takes
    on_citus = await conn.fetchval(
        "SELECT EXISTS (SELECT 1 FROM pg_extension WHERE extname = 'citus')")
    for table in PARTITIONED:
        name = part.name(table)
        pending = await conn.fetchval(
            "SELECT h.inhdetachpending FROM pg_inherits h WHERE h.inhrelid = to_regclass($1)",
            name)
        if pending is not None and not on_citus:
            # CONCURRENTLY: ingest and reads go on meanwhile (no ACCESS EXCLUSIVE lock on the
            # table); a detach interrupted half-way is finished by the next sweep
            await conn.execute(f"ALTER TABLE {table} DETACH PARTITION {name} "
                               + ("FINALIZE" if pending else "CONCURRENTLY"))
        await conn.execute(f"DROP TABLE IF EXISTS {name}")
    await conn.execute("DELETE FROM trajhub_time_partitions WHERE lower = $1", part.lower)
    return True


async def drop_expired_partitions(conn: Connection, days_of: Callable[[str], float],
                                  shortest_days: float, now: datetime) -> list[TimePartition]:
    """Drop every partition that has expired; `shortest_days` is the shortest retention of any
    project (no partition ending later than that ago can have expired)."""
    dropped = []
    for part in await partitions(conn):
        if part.upper > now - timedelta(days=shortest_days):
            break
        try:
            if await partition_expired(conn, part, days_of, now) and \
                    await drop_partition(conn, part, days_of, now):
                dropped.append(part)
        except asyncpg.LockNotAvailableError:
            # an ingest held one of its traces longer than LOCK_TIMEOUT: the next sweep tries
            # again, and this one goes on to the row deletes
            continue
    return dropped


async def overrides(conn: Connection) -> dict[str, float]:
    rows = await conn.fetch("SELECT project, days FROM project_retention")
    return {r["project"]: float(r["days"]) for r in rows}


async def get_override(conn: Connection, project: str) -> float | None:
    days = await conn.fetchval("SELECT days FROM project_retention WHERE project = $1", project)
    return None if days is None else float(days)


async def set_override(conn: Connection, project: str, days: float) -> None:
    await conn.execute(
        "INSERT INTO project_retention (project, days) VALUES ($1, $2) "
        "ON CONFLICT (project) DO UPDATE SET days = EXCLUDED.days, "
        "updated_at = EXCLUDED.updated_at",  # the default, now(): Citus takes no function here
        project, days)


async def clear_override(conn: Connection, project: str) -> bool:
    status = await conn.execute("DELETE FROM project_retention WHERE project = $1", project)
    return bool(status.endswith(" 1"))


__all__ = ["BATCH", "PARTITIONED", "TimePartition", "clear_override", "drop_expired_partitions",
           "drop_partition", "ensure_partitions", "expire_batch", "expire_orphan_logs",
           "get_override", "overrides",
           "partition_expired", "partitions", "projects", "set_override"]
