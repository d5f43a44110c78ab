"""The retention sweep of `trajhub serve`: every `retention_interval_seconds`, delete the traces
(spans, summaries, trajectories, revisions) whose spans last arrived longer ago than their
project's retention: the project's override, else TRAJHUB_RETENTION_DAYS (0: keep forever).

Several replicas may share a database: a session advisory lock lets one sweep at a time, and
the batches skip rows another transaction holds.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

import asyncpg

from trajhub.storage import retention
from trajhub.storage.database import TRANSIENT_ERRORS

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
    """One pass over every project with a retention; returns how many traces it deleted."""
    deleted = 0
    async with db.acquire() as conn:
        if not await conn.fetchval("SELECT pg_try_advisory_lock($1)", SWEEP_LOCK):
            return 0  # another replica is sweeping
        try:
            overrides = await retention.overrides(conn)
            names = (await retention.projects(conn) if default_days > 0
                     else [p for p, days in overrides.items() if days > 0])
            now = datetime.now(UTC)
            for project in names:
                days = policy(default_days, overrides.get(project)).days
                if days <= 0:
                    continue
                cutoff = now - timedelta(days=days)
                while True:
                    count = await retention.expire_batch(conn, project, cutoff)
                    deleted += count
                    if count < retention.BATCH:
                        break
                    await asyncio.sleep(0)  # let the server's other work in between
        finally:
            await conn.execute("SELECT pg_advisory_unlock($1)", SWEEP_LOCK)
    if deleted:
        log.info("retention: deleted %d expired trace(s)", deleted)
    return deleted


async def run(db: asyncpg.Pool, default_days: float, interval: float) -> None:
    """Sweep every `interval` seconds until cancelled; a database fault waits for the next
    round, a bug is logged and the loop lives on."""
    while True:
        try:
            await sweep(db, default_days)
        except TRANSIENT_ERRORS as exc:
            log.warning("retention sweep: database unavailable, retrying later: %s", exc)
        except Exception:
            log.exception("retention sweep failed")
        await asyncio.sleep(interval)


__all__ = ["Policy", "policy", "run", "sweep"]
