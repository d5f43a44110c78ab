"""Connections: their settings, the pool the REST API uses, and which failures mean "try
again later".

This module is the one place that classifies database errors. A transient error — the
connection was lost, the server is shutting down or restarting, too many connections, a
serialization failure or lock timeout — goes away on a retry: callers answer 503 /
UNAVAILABLE. Anything else — bad data, a violated constraint, a program limit, a bug — fails
the same way every time: callers log it and answer 500 / INTERNAL, and never retry it forever.
"""

from __future__ import annotations

import asyncio
import errno
from collections.abc import Mapping
from typing import Any, TypeAlias

import asyncpg
from asyncpg.pool import PoolConnectionProxy

#: What the storage functions take: a connection of the caller's own, or one the pool lent
#: (`async with pool.acquire()` gives a proxy, which asyncpg does not type as a Connection).
Connection: TypeAlias = asyncpg.Connection | PoolConnectionProxy
#: A row as read: asyncpg's Record (a mapping that its stubs do not declare one) or a dict.
RowMapping: TypeAlias = Mapping[str, Any] | asyncpg.Record

#: Failures that say the database is unreachable, restarting or busy, not that a query is wrong.
TRANSIENT_ERRORS: tuple[type[Exception], ...] = (
    OSError,
    asyncio.TimeoutError,
    # asyncpg's client side after a connection died mid-operation (e.g. "cannot switch to
    # state 15; another operation is in progress", "connection is closed")
    asyncpg.InterfaceError,
    asyncpg.InternalClientError,
    asyncpg.PostgresConnectionError,  # SQLSTATE class 08
    asyncpg.CannotConnectNowError,
    asyncpg.AdminShutdownError,
    asyncpg.CrashShutdownError,
    asyncpg.TooManyConnectionsError,
    asyncpg.InsufficientResourcesError,  # class 53: out of memory, disk full, connections
    asyncpg.SerializationError,
    asyncpg.DeadlockDetectedError,
    asyncpg.LockNotAvailableError,
    asyncpg.QueryCanceledError,  # statement or lock timeout
)


#: SQLSTATE class 53 (insufficient resources), in words
_SHORTAGES = {
    "53000": "insufficient resources",
    "53100": "disk full",
    "53200": "out of memory",
    "53300": "too many connections",
    "53400": "configuration limit exceeded",
}
#: what PostgreSQL says when it cannot write for lack of space under another SQLSTATE: a full
#: disk makes a WAL write PANIC, and after its crash restart every new connection can fail with
#: XX000 "could not write init file" until space is freed (README, Operations, "A full disk")
_NO_SPACE = ("no space left on device", "could not write init file")


def shortage(error: BaseException) -> str | None:
    """What the database server lacks, in words ("disk full", "out of memory", ...), when
    `error` says it lacks something; None for any other failure."""
    code = getattr(error, "sqlstate", None)
    if isinstance(code, str) and code in _SHORTAGES:
        return _SHORTAGES[code]
    if isinstance(error, OSError) and error.errno == errno.ENOSPC:
        return "disk full"
    text = str(error).lower()
    return "disk full" if any(words in text for words in _NO_SPACE) else None


#: Transient failures in words, most specific class first: what a 503 says instead of the
#: database's own text, which goes to the log only.
_UNAVAILABLE_WORDS: tuple[tuple[type[BaseException], str], ...] = (
    (asyncpg.CannotConnectNowError, "the database is starting up or shutting down"),
    (asyncpg.AdminShutdownError, "the database is shutting down"),
    (asyncpg.CrashShutdownError, "the database is restarting after a crash"),
    (asyncpg.SerializationError, "a concurrent write conflicted"),
    (asyncpg.DeadlockDetectedError, "a concurrent write conflicted"),
    (asyncpg.LockNotAvailableError, "the database did not answer in time"),
    (asyncpg.QueryCanceledError, "the database did not answer in time"),
    (asyncio.TimeoutError, "the database did not answer in time"),
    (asyncpg.PostgresConnectionError, "the connection to the database failed"),
    (asyncpg.InterfaceError, "the connection to the database was lost"),
    (asyncpg.InternalClientError, "the connection to the database was lost"),
    (OSError, "the database cannot be reached"),
)


def unavailable_reason(error: BaseException) -> str:
    """Why a transient failure happened, in trajhub's words: a shortage ("disk full"), or what
    kind of fault it was. Never the database's own message, which can quote stored values."""
    lack = shortage(error)
    if lack is not None:
        return lack
    for kind, words in _UNAVAILABLE_WORDS:
        if isinstance(error, kind):
            return words
    return "a transient database failure"


def is_transient(error: BaseException) -> bool:
    """True when retrying later may succeed; False for a deterministic failure."""
    return isinstance(error, TRANSIENT_ERRORS) or shortage(error) is not None


#: The settings of every connection trajhub opens. JIT off: PostgreSQL compiles a statement's
#: expressions to machine code when its estimated cost passes `jit_above_cost` (100,000 by
#: default), as a statement over a few million rows can; the compilation costs each execution
#: tens of milliseconds to seconds and pays off only for long analytic queries, which trajhub
#: does not run. At 5M spans on PostgreSQL 15, the trace list with two attribute filters spent
#: a large part of every request compiling (bench/README.md, "Reads at 5M spans"). A server
#: built without LLVM (the embedded one) never compiles: there the setting changes nothing.
#: On Citus (deploy/SCALING.md, section 3), shards stay visible in the catalogue: Citus hides them
#: by a test on every row of each query of `pg_class`, which made asyncpg's introspection of
#: the row types trajhub passes (`$1::trajectories[]`) take seconds per connection. Plain
#: PostgreSQL keeps the setting as an unknown `citus.` placeholder and ignores it.
CONNECTION_SETTINGS = {"jit": "off", "citus.override_table_visibility": "off"}
#: The REST API's pool: besides, every statement is planned for its own values. The best plan
#: for a list filter depends on how many rows the value matches (a rare one reads its index, a
#: common one walks the list order), and PostgreSQL's generic plan for asyncpg's prepared
#: statements picks one plan for all values (for a common free-text query, reading most runs
#: through the words index instead of walking the newest: bench/README.md, "Free text").
POOL_SETTINGS = {**CONNECTION_SETTINGS, "plan_cache_mode": "force_custom_plan"}


async def connect(url: str, timeout: float = 5) -> asyncpg.Connection:
    """A connection of its own (a worker's, the migrations', a command's)."""
    return await asyncpg.connect(url, timeout=timeout, server_settings=CONNECTION_SETTINGS)


async def create_pool(url: str, size: int = 4) -> asyncpg.Pool:
    pool = await asyncpg.create_pool(url, min_size=1, max_size=size, timeout=5,
                                     command_timeout=60, server_settings=POOL_SETTINGS)
    assert pool is not None
    return pool
