"""An idle derivation worker vacuums and analyzes ahead of autovacuum (storage/vacuum_ahead.py,
`IdleVacuum` in service/workers/derivation.py): a table more than half way to one of
autovacuum's thresholds, by PostgreSQL's formulas for them, and no other. The expected shares
below are worked out by hand from those formulas (threshold + scale factor × rows)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

import asyncpg

from tests.harness import TestDatabase, separate_database
from trajhub.service.workers import derivation as worker
from trajhub.storage import vacuum_ahead
from trajhub.storage.vacuum_ahead import Counters, due, statement

#: PostgreSQL's defaults
DEFAULTS = {"autovacuum_vacuum_threshold": "50", "autovacuum_vacuum_scale_factor": "0.2",
            "autovacuum_vacuum_insert_threshold": "1000",
            "autovacuum_vacuum_insert_scale_factor": "0.2",
            "autovacuum_analyze_threshold": "50", "autovacuum_analyze_scale_factor": "0.1"}
NO_TOAST = Counters(0, {}, 0, 0)


def test_the_shares_follow_autovacuums_formulas_with_the_server_settings() -> None:
    # 10,000 rows: inserts 1000 + 0.2 x 10,000 = 3,000; dead rows 50 + 2,000 = 2,050;
    # changes for analyze 50 + 1,000 = 1,050
    table = Counters(10_000, {}, dead=205, inserted=1_500, modified=525)
    assert due(table, NO_TOAST, DEFAULTS) == (0.5, 0.5)
    assert statement("t", *due(table, NO_TOAST, DEFAULTS)) == "VACUUM (SKIP_LOCKED, ANALYZE) t"
    assert due(Counters(10_000, {}, dead=1_025, inserted=0), NO_TOAST, DEFAULTS) == (0.5, 0.0)


def test_a_tables_storage_parameters_override_the_server_settings() -> None:
    # analyze at 0.9 of the rows (as migration 0067 sets for trajectories): 50 + 9,000
    options = vacuum_ahead.options(["autovacuum_analyze_scale_factor=0.9"])
    table = Counters(10_000, options, dead=0, inserted=0, modified=4_525)
    assert due(table, NO_TOAST, DEFAULTS) == (0.0, 0.5)
    assert statement("t", *due(table, NO_TOAST, DEFAULTS)) == "ANALYZE (SKIP_LOCKED) t"
    # an insert threshold of -1 turns vacuums for inserts off
    off = Counters(0, {"autovacuum_vacuum_insert_threshold": "-1"}, dead=0, inserted=10**6)
    assert due(off, NO_TOAST, DEFAULTS) == (0.0, 0.0)


def test_a_toast_tables_inserts_make_its_table_due_for_a_vacuum_not_an_analyze() -> None:
    toast = Counters(4_000, {}, dead=0, inserted=900)  # 900 of 1000 + 800
    vacuum, analyze = due(Counters(100, {}, 0, 0, 0), toast, DEFAULTS)
    assert (vacuum, analyze) == (0.5, 0.0)
    assert statement("t", vacuum, analyze) == "VACUUM (SKIP_LOCKED) t"


def test_nothing_is_due_below_half_way_or_where_autovacuum_is_off() -> None:
    assert statement("t", 0.49, 0.49) is None
    off = Counters(0, {"autovacuum_enabled": "false"}, dead=10**6, inserted=10**6,
                   modified=10**6)
    assert due(off, NO_TOAST, DEFAULTS) == (0.0, 0.0)
    # its TOAST table's inserts do not make it due: a VACUUM of the table is one of both
    assert due(off, Counters(0, {}, dead=0, inserted=10**6), DEFAULTS) == (0.0, 0.0)


def _stats(url: str, table: str) -> asyncpg.Record:
    async def main() -> asyncpg.Record:
        conn = await asyncpg.connect(url)
        try:
            row = await conn.fetchrow(
                "SELECT vacuum_count, analyze_count, n_ins_since_vacuum, last_vacuum "
                "FROM pg_stat_user_tables WHERE relid = $1::regclass", table)
            assert row is not None
            return row
        finally:
            await conn.close()
    return asyncio.run(main())


def test_an_idle_worker_vacuums_the_table_furthest_on_its_way_then_the_next_then_none(
        database: TestDatabase) -> None:
    # thresholds of exactly 1,000 inserted rows, and analyze never
    params = ("autovacuum_vacuum_insert_threshold = 1000, "
              "autovacuum_vacuum_insert_scale_factor = 0, "
              "autovacuum_analyze_threshold = 100000000")
    with separate_database(database) as url:
        async def fill() -> None:
            conn = await asyncpg.connect(url)
            try:
                for name, rows in (("nine_tenths", 900), ("six_tenths", 600), ("two_fifths", 400)):
                    await conn.execute(f"CREATE TABLE {name} (n int) WITH ({params})")
                    await conn.execute(
                        f"INSERT INTO {name} SELECT generate_series(1, {rows})")
                await conn.execute(
                    "CREATE TABLE switched_off (n int) WITH (autovacuum_enabled = false)")
                await conn.execute("INSERT INTO switched_off SELECT generate_series(1, 10000)")
            finally:
                await conn.close()  # a backend reports its counters when it exits

        async def steps() -> list[str | None]:
            idle = worker.IdleVacuum(url)
            ran: list[str | None] = []
            try:
                for _ in range(3):
                    idle.start()
                    assert idle.task is not None  # after a table, it looks again at once
                    ran.append(await idle.task)
                idle.start()
                assert idle.task is None  # the last look found none: not again so soon
            finally:
                await idle.close()
            return ran

        asyncio.run(fill())
        # each step takes one table, the furthest on its way first, and the third finds none
        assert asyncio.run(steps()) == ["VACUUM (SKIP_LOCKED) nine_tenths",
                                        "VACUUM (SKIP_LOCKED) six_tenths", None]
        assert _stats(url, "nine_tenths")["vacuum_count"] == 1
        assert _stats(url, "nine_tenths")["n_ins_since_vacuum"] == 0
        assert _stats(url, "six_tenths")["vacuum_count"] == 1
        assert _stats(url, "nine_tenths")["last_vacuum"] < _stats(url, "six_tenths")["last_vacuum"]
        assert _stats(url, "two_fifths")["vacuum_count"] == 0  # 400 of 1,000: not yet
        assert _stats(url, "switched_off")["vacuum_count"] == 0
        assert _stats(url, "switched_off")["analyze_count"] == 0


def test_a_vacuum_ahead_stops_in_postgresql_when_ingest_saturates(
        database: TestDatabase) -> None:
    # a table large enough that a vacuum at autovacuum's pace takes seconds, half way to a
    # threshold of 3M inserted rows: vacuumed ahead, and never by autovacuum meanwhile
    with separate_database(database) as url:
        async def main() -> None:
            conn = await asyncpg.connect(url)
            idle = worker.IdleVacuum(url)
            try:
                await conn.execute(
                    "CREATE TABLE big (n int, pad text) WITH ("
                    "autovacuum_vacuum_insert_threshold = 3000000, "
                    "autovacuum_vacuum_insert_scale_factor = 0, "
                    "autovacuum_analyze_threshold = 100000000)")
                await conn.execute("INSERT INTO big SELECT n, repeat('x', 200) "
                                   "FROM generate_series(1, 1500000) AS n")
                await conn.execute("SELECT pg_stat_force_next_flush()")
                await conn.execute("SELECT 1")  # the counters go out after a statement
                idle.start()
                assert await _vacuuming(conn, lambda n: n == 1), "the vacuum never started"
                idle.cancel()  # what the worker does when the saturated flag goes up
                assert await _vacuuming(conn, lambda n: n == 0), "the vacuum went on"
                assert idle.task is not None and idle.task.cancelled()
                stats = await conn.fetchrow("SELECT vacuum_count, n_ins_since_vacuum "
                                            "FROM pg_stat_user_tables WHERE relname = 'big'")
                assert stats is not None and stats["vacuum_count"] == 0
            finally:
                await idle.close()
                await conn.close()

        asyncio.run(main())


async def _vacuuming(conn: asyncpg.Connection, wanted: Callable[[int], bool],
                     seconds: float = 10.0) -> bool:
    """Whether the vacuums running in this database come to a count `wanted` accepts."""
    deadline = asyncio.get_running_loop().time() + seconds
    while asyncio.get_running_loop().time() < deadline:
        if wanted(await conn.fetchval("SELECT count(*) FROM pg_stat_progress_vacuum "
                                      "WHERE datname = current_database()")):
            return True
        await asyncio.sleep(0.02)
    return False
