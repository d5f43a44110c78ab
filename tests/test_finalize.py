"""Finalizing (storage/derivation_store.py, `finalize_settled`): a settled open trajectory
becomes final; one whose trace has a queued change waits for it, and only that one."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import asyncpg

from tests.harness import TestDatabase, run, separate_database
from trajhub.storage.derivation_store import finalize_settled
from trajhub.storage.migrate import migrate


def test_a_queued_change_holds_back_its_own_trace_only(database: TestDatabase) -> None:
    settled, queued, other = "a" * 32, "b" * 32, "c" * 32

    async def check(url: str) -> None:
        conn = await asyncpg.connect(url)
        try:
            await migrate(conn)
            past = datetime.now(UTC) - timedelta(minutes=1)
            for trace_id in (settled, queued):
                await conn.execute(
                    "INSERT INTO trajectories (project, trace_id, status, revision, "
                    "normalizer_version, settle_at, root_ended, first_seen) "
                    "VALUES ('p', $1, 'open', 1, 'test', $2, true, $2)", trace_id, past)
                await conn.execute("INSERT INTO open_trajectories (project, trace_id, settle_at, "
                                   "root_ended) VALUES ('p', $1, $2, true)", trace_id, past)
            # a change queued for the second trace, and one for a trace of no trajectory yet
            await conn.execute("INSERT INTO trace_changes (project, trace_id) "
                               "VALUES ('p', $1), ('p', $2)", queued, other)
            assert await finalize_settled(conn, 300) == 1
            assert dict(await conn.fetch("SELECT trace_id, status FROM trajectories")) == {
                settled: "final", queued: "open"}
        finally:
            await conn.close()

    with separate_database(database) as url:
        run(check(url))
