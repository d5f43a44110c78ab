"""What the workers reading a claimed queue from PostgreSQL share (the online evaluation
rules' runs, the alerts' notifications): a round that claims a batch and runs all of it, and
at start the claims a killed server held made due again."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Sequence
from typing import TypeVar

import asyncpg

from trajhub.storage.database import Connection

T = TypeVar("T")


async def run_claimed(pool: asyncpg.Pool, claim: Callable[[Connection], Awaitable[Sequence[T]]],
                      run: Callable[[T], Awaitable[None]]) -> int:
    """One round: `claim` a batch on a pooled connection, given back before the work starts
    (the work takes connections of its own), then `run` every claimed item at once; how many
    were claimed."""
    async with pool.acquire() as conn:
        claimed = await claim(conn)
    await asyncio.gather(*(run(item) for item in claimed))
    return len(claimed)


async def release_stale_claims(pool: asyncpg.Pool, release: Callable[[Connection], Awaitable[int]],
                               log: logging.Logger, what: str) -> None:
    """At start: `release` makes the claims a killed server held due now; a warning says how
    many `what` (e.g. "rule run(s)") it released."""
    async with pool.acquire() as conn:
        released = await release(conn)
    if released:
        log.warning("released %d %s claimed before a restart", released, what)
