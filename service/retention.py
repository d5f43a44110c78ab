"""The retention sweep of `trajhub serve`: every `retention_interval_seconds`, create the time
partitions a few widths ahead, then delete the traces (spans, summaries, trajectories,
revisions) whose spans last arrived longer ago than their project's retention: the project's
override, else TRAJHUB_RETENTION_DAYS (0: keep forever). Whole partitions go first where every
trace in them has expired; row deletes take what is left (storage/retention.py). Then the
compression dictionaries no remaining partition can need are deleted
(storage/compression_dictionaries.py).

Several replicas may share a database: a session advisory lock lets one sweep at a time, and
the batches skip rows another transaction holds.
"""

from __future__ import annotations

import asyncio
import logging
import math
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

import asyncpg

from trajhub.storage import compression_dictionaries, retention
from trajhub.storage.database import is_transient

log = logging.getLogger("trajhub.retention")

#: the advisory lock key of the sweep (any constant unique to trajhub's locks)
SWEEP_LOCK = 0x7472616A_72657431  # "trajret1"


@dataclass(frozen=True)
class Policy:
    """A project's retention: `days` (0 keeps forever) and where it comes from."""

    days: float
    source: str  # "project" (an override) or "default" (TRAJHUB_RETENTION_DAYS)


def policy(default_days: float, override: float | None) -> Policy:
    if override is not None:
        return Policy(override, "project")
    return Policy(default_days, "default")


async def sweep(db: asyncpg.Pool, default_days: float) -> int:
    """One pass over every project with a retention; returns how many traces it deleted by
    rows (dropped partitions are logged)."""
    deleted = 0
    async with db.acquire() as conn:
        if not await conn.fetchval("SELECT pg_try_advisory_lock($1)", SWEEP_LOCK):
            return 0  # another replica is sweeping
        try:
            overrides = await retention.overrides(conn)
            positive = [d for d in (default_days, *overrides.values()) if d > 0]
            if not positive:
                return 0
            now = datetime.now(UTC)

            def days_of(project: str) -> float:
                return policy(default_days, overrides.get(project)).days

            dropped = await retention.drop_expired_partitions(conn, days_of, min(positive), now)
            for part in dropped:
                log.info("retention: dropped the partition of %s to %s",
                         part.lower.isoformat(), part.upper.isoformat())
            if await compression_dictionaries.delete_unused(conn):
                log.info("retention: deleted compression dictionaries no partition needs")
            names = (await retention.projects(conn) if default_days > 0
                     else [p for p, days in overrides.items() if days > 0])
            for project in names:
                days = days_of(project)
                if days <= 0:
                    continue
                cutoff = now - timedelta(days=days)
                while True:
                    count = await retention.expire_batch(conn, project, cutoff)
                    deleted += count
                    if count < retention.BATCH:
                        break
                    await asyncio.sleep(0)  # let the server's other work in between
                while await retention.expire_orphan_logs(conn, project, cutoff) \
                        >= retention.BATCH:
                    await asyncio.sleep(0)
        finally:
            await conn.execute("SELECT pg_advisory_unlock($1)", SWEEP_LOCK)
    if deleted:
        log.info("retention: deleted %d expired trace(s)", deleted)
    return deleted


def partitions_ahead(width: timedelta, interval: float) -> int:
    """How many partitions to keep ahead of now: at least 3 (today and the next days, with
    daily partitions), and enough that two missed rounds of the loop do not run out."""
    return max(3, math.ceil(2 * interval / width.total_seconds()) + 2)


async def maintain_partitions(db: asyncpg.Pool, width: timedelta, interval: float) -> int:
    async with db.acquire() as conn:
        return await retention.ensure_partitions(conn, width, partitions_ahead(width, interval))


async def run(db: asyncpg.Pool, default_days: float, interval: float,
              partition_width: timedelta = timedelta(days=1)) -> None:
    """Create partitions ahead and sweep every `interval` seconds until cancelled; a database
    fault waits for the next round, a bug is logged and the loop lives on."""
    while True:
        try:
            await maintain_partitions(db, partition_width, interval)
            await sweep(db, default_days)
        except Exception as exc:
            if is_transient(exc):
                log.warning("retention sweep: database unavailable, retrying later: %s", exc)
            else:
                log.exception("retention sweep failed")
        await asyncio.sleep(interval)


__all__ = ["Policy", "maintain_partitions", "partitions_ahead", "policy", "run", "sweep"]
