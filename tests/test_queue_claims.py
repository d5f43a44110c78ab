"""A claim from the derivation queue takes at most its limit, whatever the queue's statistics
say (storage/derivation_store.py, `claim_changes`). Autovacuum analyzes `trace_changes` when a
drain has emptied it, so the planner then believes the queue is empty; the claim must still
take only its first rows. The case runs in a transaction of its own on the test server's
database and is rolled back; the queued rows are the test's own."""

from __future__ import annotations

import uuid

import asyncpg
import pytest

from tests.harness import TestDatabase, rolled_back
from trajhub.storage import derivation_store

QUEUED = 300
LIMIT = 10


@pytest.mark.usefixtures("server")  # the server's migrations made the tables
def test_a_claim_takes_at_most_its_limit_from_a_queue_analyzed_empty(
        database: TestDatabase) -> None:
    project = "claims-" + uuid.uuid4().hex[:8]

    async def queue(conn: asyncpg.Connection) -> dict[int, str]:
        """QUEUED changes of this project: trace id by row id."""
        return {r["id"]: r["trace_id"] for r in await conn.fetch(
            "INSERT INTO trace_changes (project, trace_id) "
            "SELECT $1, 'trace-' || n FROM generate_series(1, $2) AS n RETURNING id, trace_id",
            project, QUEUED)}

    async def case(conn: asyncpg.Connection) -> None:
        # the queue holds only this test's rows while the case runs (the server's derivers wait)
        await conn.execute("LOCK TABLE trace_changes IN SHARE ROW EXCLUSIVE MODE")
        await conn.execute("DELETE FROM trace_changes")
        # a drained queue, analyzed: no live row in pages that are still there
        await queue(conn)
        await conn.execute("DELETE FROM trace_changes")
        await conn.execute("ANALYZE trace_changes")
        stats = await conn.fetchrow(
            "SELECT reltuples, relpages FROM pg_class WHERE oid = 'trace_changes'::regclass")
        assert stats is not None
        assert stats["reltuples"] == 0 and stats["relpages"] > 0, dict(stats)

        queued = await queue(conn)
        claimed = await derivation_store.claim_changes(conn, LIMIT)
        # the oldest LIMIT changes, and only they, left the queue
        oldest = [queued[i] for i in sorted(queued)[:LIMIT]]
        assert sorted(c.trace_id for c in claimed) == sorted(oldest)
        assert await conn.fetchval("SELECT count(*) FROM trace_changes") == QUEUED - LIMIT

    rolled_back(database, case)
