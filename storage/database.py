"""Connections: the pool the REST API uses, and which failures mean "try again later"."""

from __future__ import annotations

import asyncio

import asyncpg

#: Failures that say the database is unreachable or restarting, not that a query is wrong.
TRANSIENT_ERRORS: tuple[type[BaseException], ...] = (
    OSError,
    asyncio.TimeoutError,
    asyncpg.InterfaceError,
    asyncpg.PostgresConnectionError,
    asyncpg.CannotConnectNowError,
    asyncpg.AdminShutdownError,
    asyncpg.CrashShutdownError,
    asyncpg.TooManyConnectionsError,
)


async def create_pool(url: str, size: int = 4) -> asyncpg.Pool:
    pool = await asyncpg.create_pool(url, min_size=1, max_size=size, timeout=5,
                                     command_timeout=60)
    assert pool is not None
    return pool
