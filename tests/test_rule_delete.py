"""Deleting a rule while a worker finishes one of its runs (storage/rules.py, `delete` and
`finish`): the delete waits for the run and then succeeds, and never deadlocks with it."""

from __future__ import annotations

import asyncio

import asyncpg

from tests.harness import TestDatabase, run, separate_database
from trajhub.storage import rules as rule_store
from trajhub.storage.migrate import migrate


def test_a_rule_deleted_while_its_run_finishes_waits_for_the_run(database: TestDatabase
                                                                 ) -> None:
    async def check(url: str) -> None:
        conn = await asyncpg.connect(url)
        await migrate(conn)
        rule = await conn.fetchval(
            "INSERT INTO rules (project, name, evaluator, sample_rate) "
            "VALUES ('p', 'r', 'exact_match', 1) RETURNING id")
        backfill = await conn.fetchval(
            "INSERT INTO rule_backfills (rule_id, total_count) VALUES ($1, 1) RETURNING id",
            rule)
        run = await conn.fetchval(
            "INSERT INTO rule_runs (rule_id, project, trace_id, revision, backfill_id) "
            "VALUES ($1, 'p', 't', 1, $2) RETURNING id", rule, backfill)
        deleter = await asyncpg.connect(url)
        try:
            # a worker's `finish`, by hand, so that the delete comes between its two writes:
            # the run taken off the queue, then its backfill counted
            finishing = conn.transaction()
            await finishing.start()
            await conn.execute("DELETE FROM rule_runs WHERE id = $1", run)
            delete = asyncio.ensure_future(rule_store.delete(deleter, "p", rule))
            # the delete is waiting on the run's row (or would hold the backfill's)
            waiting = ("SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' "
                       "AND datname = current_database()")
            while not await conn.fetchval(waiting):
                await asyncio.sleep(0.05)
            await conn.execute("UPDATE rule_backfills SET done_count = done_count + 1 "
                               "WHERE id = $1", backfill)
            await finishing.commit()
            assert await asyncio.wait_for(delete, 60) is True
            assert await conn.fetchval("SELECT count(*) FROM rules") == 0
            assert await conn.fetchval("SELECT count(*) FROM rule_backfills") == 0
        finally:
            await deleter.close()
            await conn.close()

    with separate_database(database) as url:
        run(check(url))
