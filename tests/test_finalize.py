"""Finalizing (storage/derivation_store.py, `finalize_settled`): a settled open trajectory
becomes final; one whose trace has a queued change waits for it, and only that one; the trace
locks a finalize takes are held until its runs are final."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import asyncpg

from tests.harness import TestDatabase, on_separate_database, run, separate_database
from trajhub.storage.derivation_store import finalize_settled
from trajhub.storage.migrate import migrate


async def _open_settled(conn: asyncpg.Connection, *trace_ids: str) -> None:
    past = datetime.now(UTC) - timedelta(minutes=1)
    for trace_id in trace_ids:
        await conn.execute(
            "INSERT INTO trajectories (project, trace_id, status, revision, "
            "normalizer_version, settle_at, root_ended, first_seen) "
            "VALUES ('p', $1, 'open', 1, 'test', $2, true, $2)", trace_id, past)
        await conn.execute("INSERT INTO open_trajectories (project, trace_id, settle_at, "
                           "root_ended) VALUES ('p', $1, $2, true)", trace_id, past)


def test_a_queued_change_holds_back_its_own_trace_only(database: TestDatabase) -> None:
    settled, queued, other = "a" * 32, "b" * 32, "c" * 32

    async def check(conn: asyncpg.Connection) -> None:
        await migrate(conn)
        await _open_settled(conn, settled, queued)
        # a change queued for the second trace, and one for a trace of no trajectory yet
        await conn.execute("INSERT INTO trace_changes (project, trace_id) "
                           "VALUES ('p', $1), ('p', $2)", queued, other)
        assert await finalize_settled(conn, 300) == 1
        assert dict(await conn.fetch("SELECT trace_id, status FROM trajectories")) == {
            settled: "final", queued: "open"}

    on_separate_database(database, check)


def test_a_finalize_holds_the_trace_locks_it_took_until_its_runs_are_final(
        database: TestDatabase) -> None:
    """Another finalizer reading the same candidates meanwhile cannot take them too: were the
    locks let go after the statement that takes them, two finalizers would both delete the same
    open rows, each in the order of its own plan, and could deadlock."""
    trace_id = "d" * 32

    class Watched:
        """The connection; after the statement that tries the trace locks, another connection
        tries the same lock (`held`: it could not)."""

        def __init__(self, conn: asyncpg.Connection, other: asyncpg.Connection) -> None:
            self.conn, self.other = conn, other
            self.held: bool | None = None

        async def fetch(self, sql: str, *args: Any) -> list[asyncpg.Record]:
            rows = await self.conn.fetch(sql, *args)
            if "pg_try_advisory_xact_lock" in sql:
                self.held = not await self.other.fetchval(
                    "SELECT pg_try_advisory_xact_lock(hashtextextended($1 || '/' || $2, 0))",
                    "p", trace_id)
            return rows

        def __getattr__(self, name: str) -> Any:
            return getattr(self.conn, name)

    async def check(url: str) -> None:
        conn, other = await asyncpg.connect(url), await asyncpg.connect(url)
        try:
            await migrate(conn)
            await _open_settled(conn, trace_id)
            watched = Watched(conn, other)
            assert await finalize_settled(watched, 300) == 1  # type: ignore[arg-type]
            assert watched.held is True
            assert await conn.fetchval("SELECT status FROM trajectories") == "final"
            # and let go once they are
            assert await other.fetchval(
                "SELECT pg_try_advisory_xact_lock(hashtextextended($1 || '/' || $2, 0))",
                "p", trace_id)
        finally:
            await conn.close()
            await other.close()

    with separate_database(database) as url:
        run(check(url))
