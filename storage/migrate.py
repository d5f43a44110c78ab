"""Apply the numbered `.sql` files in `storage/migrations` in order, each once.

Safe when several processes start at once: the whole run holds a PostgreSQL advisory lock, so
the second process waits, then finds every migration recorded and applies nothing.
"""

from __future__ import annotations

import logging
from importlib import resources

import pglast

from trajhub.storage.database import Connection

log = logging.getLogger("trajhub.migrate")

#: Arbitrary, fixed: the advisory lock key trajhub's migrations serialize on.
_LOCK_KEY = 0x7472616A68756221


def migration_files() -> list[tuple[int, str, str]]:
    """(number, name, sql) for every migration, in number order."""
    found = []
    for entry in resources.files("trajhub.storage.migrations").iterdir():
        name = entry.name
        if not name.endswith(".sql"):
            continue
        number = int(name.split("_", 1)[0])
        found.append((number, name, entry.read_text(encoding="utf-8")))
    found.sort()
    return found


async def migrate(conn: Connection, before: int | None = None) -> list[str]:
    """Apply pending migrations (only those numbered below `before`, when given: tests and
    benchmarks build a store as an earlier version left it); returns the names applied."""
    applied: list[str] = []
    await conn.execute("SELECT pg_advisory_lock($1)", _LOCK_KEY)
    try:
        await conn.execute(
            """CREATE TABLE IF NOT EXISTS schema_migrations (
                   number integer PRIMARY KEY,
                   name text NOT NULL,
                   applied_at timestamptz NOT NULL DEFAULT now())"""
        )
        done = {r["number"] for r in await conn.fetch("SELECT number FROM schema_migrations")}
        for number, name, sql in migration_files():
            if number in done:
                continue
            if before is not None and number >= before:
                break
            async with conn.transaction():
                # On Citus (deploy/SCALING.md, section 3): a migration that changes a distributed
                # table and creates a function must use one connection per node, and each DDL
                # statement's own text is sent on to the shards, where a text of several
                # statements is refused. Plain PostgreSQL ignores the setting.
                await conn.execute("SET LOCAL citus.multi_shard_modify_mode TO 'sequential'")
                for statement in pglast.split(sql):
                    await conn.execute(statement)
                await conn.execute(
                    "INSERT INTO schema_migrations (number, name) VALUES ($1, $2)", number, name
                )
            log.info("applied migration %s", name)
            applied.append(name)
    finally:
        await conn.execute("SELECT pg_advisory_unlock($1)", _LOCK_KEY)
    return applied
