"""The free-text words index, kept while the derivation has no backlog (migrations 0066 and
0068, `IdleWords` in service/workers/derivation.py, storage/search_words.py).

- A stored run's words are filled later; until then a search checks its text, with the same
  answers. A run stored again is found by its new text only, and one being stored while the
  words are filled is not filled with its old text.
- The migration fills the words of the runs stored before it.
- The index's pending list is merged at the first chance, then once enough words rows were
  written since the last merge, and not before. Whether the list holds entries is read from
  `gin_clean_pending_list`, which returns how many pages of it a merge emptied; the threshold is
  lowered so that a test writes tens of trajectories, not thousands.

Each against a database of its own: no server's worker fills or merges behind its back."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime, timedelta
from unittest.mock import patch

import asyncpg
import pytest

from tests.harness import TestDatabase, run, separate_database
from tests.otlp_builders import new_trace_id, request, span
from trajhub.records import write_values
from trajhub.records.trajectories import TrajectorySummary
from trajhub.service import derivation
from trajhub.service.ingest import worker as ingest_worker
from trajhub.service.ingest.decode import otlp_batch
from trajhub.service.workers import derivation as worker
from trajhub.storage import (
    derivation_store,
    search_words,
    span_writer,
    trace_locks,
    trajectory_reads,
)
from trajhub.storage.migrate import migrate

WORDS = "forecast for lisbon tomorrow with wind and sea temperature"


async def _write_trajectories(conn: asyncpg.Connection, count: int) -> None:
    """`count` one-span runs, derived and stored as the derivation worker does; the
    statistics counters are flushed at once (PostgreSQL otherwise waits up to 10 s)."""
    spans = [span(new_trace_id(), "agent", attributes={
        "openinference.span.kind": "AGENT", "input.value": f"{WORDS} {i}",
        "output.value": f"answer number {i}"}) for i in range(count)]
    batch = otlp_batch(request(spans), "words-merge")
    async with conn.transaction():
        await span_writer.write_spans(conn, batch.rows.values(), batch.resources)
        await span_writer.queue_changes(conn, {(r.project, r.trace_id)
                                               for r in batch.rows.values()})
    while await derivation.derive_round(conn, timedelta(0), 200):
        pass
    # their words, as an idle worker fills them, so that IdleWords itself finds none to fill
    while await search_words.fill(conn, 500):
        pass
    await conn.execute("SELECT pg_stat_force_next_flush()")
    await conn.execute("SELECT 1")  # the end of a transaction is when a backend flushes


async def _pending_pages(conn: asyncpg.Connection) -> int:
    """Pages the words index's pending list held (emptying it)."""
    return await search_words.merge_pending(conn)


def test_an_idle_worker_merges_the_words_pending_list_after_enough_trajectories(
        database: TestDatabase, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(worker, "MERGE_WORDS_AFTER", 30)
    monkeypatch.setattr(worker, "MERGE_WORDS_CHECK_SECONDS", 0.0)

    async def check(url: str) -> None:
        conn = await asyncpg.connect(url)
        try:
            await migrate(conn)
            await span_writer.prepare(conn)
            merge = worker.IdleWords()

            await _write_trajectories(conn, 20)
            await merge(conn)  # the first chance merges whatever is there
            assert await _pending_pages(conn) == 0

            await _write_trajectories(conn, 20)  # 20 since the merge: fewer than 30
            await merge(conn)
            assert await _pending_pages(conn) > 0  # the worker left them (this merged them)

            await _write_trajectories(conn, 15)  # 35 since the worker's merge
            await merge(conn)
            assert await _pending_pages(conn) == 0
        finally:
            await conn.close()

    with separate_database(database) as url:
        run(check(url))



def _run(trace_id: str, question: str, answer: str = "ok") -> derivation_store.TrajectoryWrite:
    """A run of project `p` as derivation stores it."""
    return derivation_store.TrajectoryWrite(
        project="p", trace_id=trace_id, settle_at=datetime.now(UTC), root_ended=True,
        document=None, explanation=None, warnings=[], values=write_values(
            TrajectorySummary, None, {"normalizer_version": "test", "root_input": question,
                                       "root_output": answer}))


async def _store(conn: asyncpg.Connection, *runs: derivation_store.TrajectoryWrite) -> None:
    async with conn.transaction():
        await _keep_keys(conn, runs)
        await derivation_store.store(conn, [], runs)


async def _keep_keys(conn: asyncpg.Connection,
                     runs: tuple[derivation_store.TrajectoryWrite, ...]) -> None:
    """The runs' traces filed under a time partition, as ingest files them with their spans:
    a run stored again is then the same row."""
    await conn.executemany(
        "INSERT INTO trace_keys (project, trace_id, first_seen) VALUES ($1, $2, now()) "
        "ON CONFLICT DO NOTHING", [(r.project, r.trace_id) for r in runs])


async def _found(conn: asyncpg.Connection, q: str) -> set[str]:
    rows = await trajectory_reads.list_trajectories(
        conn, "p", trajectory_reads.TrajectoryFilter(values={"q": q}, limit=1000))
    return {r.trace_id for r in rows}


async def _counted(conn: asyncpg.Connection, q: str) -> int:
    return await trajectory_reads.count_trajectories(
        conn, "p", trajectory_reads.TrajectoryFilter(values={"q": q}))


async def _unindexed(conn: asyncpg.Connection) -> set[str]:
    """The runs whose words are still to be filled."""
    return {r["trace_id"] for r in await conn.fetch(
        "SELECT trace_id FROM trajectory_words_queue")}


def _in_own_database(database: TestDatabase,
                     check: Callable[[asyncpg.Connection, str], Awaitable[None]]) -> None:
    async def migrated(url: str) -> None:
        conn = await asyncpg.connect(url)
        try:
            await migrate(conn)
            await check(conn, url)
        finally:
            await conn.close()

    with separate_database(database) as url:
        run(migrated(url))


A, B, C = "a" * 32, "b" * 32, "c" * 32
#: query → the runs it finds: word starts, a phrase, not the middle of a word, punctuation only
QUERIES = {"weather": {A, B}, "WEATH": {A, B}, "eather": set(), "weather forecast": {A},
           "forecast weather": set(), "zürich": {C}, "?!": {B}, "xylophone": set()}


def test_a_run_is_found_and_counted_alike_before_and_after_its_words_are_indexed(
        database: TestDatabase) -> None:
    async def check(conn: asyncpg.Connection, url: str) -> None:
        await _store(conn, _run(A, "What is the Weather forecast?"),
                     _run(B, "why?! the weather", "forecast: rain"), _run(C, "ÄRGER in Zürich"))
        assert await _unindexed(conn) == {A, B, C}
        assert {q: await _found(conn, q) for q in QUERIES} == QUERIES
        assert {q: await _counted(conn, q) for q in QUERIES} == {
            q: len(found) for q, found in QUERIES.items()}

        assert await search_words.fill(conn, 2) == 2  # a batch of two, then the rest
        assert len(await _unindexed(conn)) == 1
        assert {q: await _found(conn, q) for q in QUERIES} == QUERIES
        assert {q: await _counted(conn, q) for q in QUERIES} == {
            q: len(found) for q, found in QUERIES.items()}
        assert await search_words.fill(conn, 2) == 1
        assert await search_words.fill(conn, 2) == 0
        assert await _unindexed(conn) == set()
        assert {q: await _found(conn, q) for q in QUERIES} == QUERIES
        assert {q: await _counted(conn, q) for q in QUERIES} == {
            q: len(found) for q, found in QUERIES.items()}

    _in_own_database(database, check)


def test_a_run_stored_again_is_found_by_its_new_text_only(database: TestDatabase) -> None:
    async def check(conn: asyncpg.Connection, url: str) -> None:
        await _store(conn, _run(A, "alpha centauri"))
        await search_words.fill(conn, 10)
        assert await _found(conn, "alpha") == {A}

        await _store(conn, _run(A, "bravo company"))  # its spans derived again
        assert await _unindexed(conn) == {A}
        assert await _found(conn, "alpha") == set()
        assert await _found(conn, "bravo") == {A}
        await search_words.fill(conn, 10)
        assert await _unindexed(conn) == set()
        assert await _found(conn, "alpha") == set()
        assert await _found(conn, "bravo") == {A}

    _in_own_database(database, check)


def test_a_run_being_stored_is_not_indexed_with_its_old_text(database: TestDatabase) -> None:
    """A deriver stores the run again while the words are being filled: the fill leaves it
    to the deriver's transaction, and fills it with the new text after."""
    async def check(conn: asyncpg.Connection, url: str) -> None:
        await _store(conn, _run(A, "alpha centauri"))
        deriver = await asyncpg.connect(url)
        try:
            transaction = deriver.transaction()
            await transaction.start()
            # the trace's lock first, as every deriver takes it before it stores
            assert await deriver.fetchval("SELECT " + trace_locks.TRY_LOCK.format(
                project="$1::text", trace_id="$2::text"), "p", A)
            await derivation_store.store(deriver, [], [_run(A, "bravo company")])  # keys kept
            assert await search_words.fill(conn, 10) == 0  # held by the deriver: left
            await transaction.commit()
        finally:
            await deriver.close()
        assert await search_words.fill(conn, 10) == 1
        assert await _found(conn, "alpha") == set()
        assert await _found(conn, "bravo") == {A}
        assert await conn.fetchval("SELECT words::text FROM trajectory_words") \
            == "'bravo' 'company' 'ok'"  # without positions

    _in_own_database(database, check)


def test_an_idle_ingest_worker_fills_words_once_nothing_is_left_to_derive_or_finalize(
        database: TestDatabase) -> None:
    """After a burst, the ingest workers' drain rounds (ingest_worker.drain_round) derive
    what is queued first, and fill the words of the stored runs, a batch at a time, only in a
    round that found nothing to derive or finalize; a round that filled a whole batch says
    that more may be left."""
    async def check(conn: asyncpg.Connection, url: str) -> None:
        traces = [new_trace_id() for _ in range(3)]
        batch = otlp_batch(request([span(t, "agent", attributes={
            "openinference.span.kind": "AGENT", "input.value": f"lisbon weather {i}"})
            for i, t in enumerate(traces)]), "p")
        async with conn.transaction():
            await span_writer.write_spans(conn, batch.rows.values(), batch.resources)
            await span_writer.queue_changes(conn, {(r.project, r.trace_id)
                                                   for r in batch.rows.values()})
        settle = timedelta(seconds=0.5)
        derived = await ingest_worker.drain_round(conn, settle)
        assert (derived.derived, derived.finalized, derived.filled) == (3, 0, None)
        await asyncio.sleep(0.6)  # their settle period passes
        finalized = await ingest_worker.drain_round(conn, settle)
        assert (finalized.derived, finalized.finalized, finalized.filled) == (0, 3, None)
        assert await _unindexed(conn) == {t.hex() for t in traces}

        with patch.object(ingest_worker, "FILL_WORDS_BATCH", 2):
            batch_filled = await ingest_worker.drain_round(conn, settle)
            assert (batch_filled.derived, batch_filled.finalized, batch_filled.filled,
                    batch_filled.words_left) == (0, 0, 2, True)
            rest_filled = await ingest_worker.drain_round(conn, settle)
            assert (rest_filled.filled, rest_filled.words_left) == (1, False)
        assert await _unindexed(conn) == set()
        assert await conn.fetchval("SELECT count(*) FROM trajectory_words") == 3
        assert await _found(conn, "lisbon") == {t.hex() for t in traces}

    _in_own_database(database, check)


def test_migration_0068_indexes_the_words_of_the_runs_stored_before(
        database: TestDatabase) -> None:
    async def check(url: str) -> None:
        conn = await asyncpg.connect(url)
        try:
            await migrate(conn, before=68)
            # as a store before 0068 holds them: lower-cased text, no words rows
            await conn.executemany(
                "INSERT INTO trajectories (project, trace_id, status, revision, "
                "normalizer_version, settle_at, root_ended, root_input, root_output) "
                "VALUES ('p', $1, 'final', 1, 'old', now(), true, $2, $3)",
                [(A, "what is the weather forecast?", "sunny"),
                 (B, "why?! the weather", "forecast: rain")])
            assert await migrate(conn, before=69) == ["0068_words_indexed_lazily.sql"]
            assert await conn.fetchval("SELECT count(*) FROM trajectory_words") == 2
            assert await _unindexed(conn) == set()
            # the reads below are the current code's, which read the later migrations' columns
            await migrate(conn)
            assert await _found(conn, "weather") == {A, B}
            assert await _found(conn, "weather forecast") == {A}
            assert await _found(conn, "rain") == {B}
        finally:
            await conn.close()

    with separate_database(database) as url:
        run(check(url))


async def _analyze_partitions(conn: asyncpg.Connection, *tables: str) -> None:
    """ANALYZE each partition of `tables`, as autovacuum does (never the tables as wholes)."""
    for part in await conn.fetch("SELECT inhrelid::regclass::text AS name FROM pg_inherits "
                                 "WHERE inhparent = ANY($1::regclass[])", list(tables)):
        await conn.execute(f"ANALYZE {part['name']}")


def test_the_statistics_of_runs_and_words_as_wholes_are_gathered_when_missing_or_outgrown(
        database: TestDatabase) -> None:
    """Autovacuum never analyzes a partitioned table as a whole, and a search's join of runs and
    words is planned from those statistics: the idle worker gathers them."""
    wholes = ("SELECT count(*) FROM pg_stats WHERE inherited "
              "AND tablename IN ('trajectories', 'trajectory_words') AND attname = 'trace_id'")

    async def check(conn: asyncpg.Connection, url: str) -> None:
        await conn.execute("ANALYZE trajectories, trajectory_words")  # the migration's, again
        await _store(conn, *(_run(f"{i:032x}", f"run {i}") for i in range(1100)))
        await search_words.fill(conn, 2000)
        assert await conn.fetchval(wholes) == 0  # analyzed while empty: nothing gathered
        # the partitions as autovacuum would have analyzed them after the writes
        await _analyze_partitions(conn, "trajectories", "trajectory_words")
        # 1,100 runs, the wholes gathered at none: past the first 1,000
        assert await search_words.analyze_outgrown(conn)
        assert await conn.fetchval(wholes) == 2
        assert not await search_words.analyze_outgrown(conn)  # gathered at 1,100

        await _store(conn, *(_run(f"{i:032x}", f"run {i}") for i in range(1100, 2200)))
        await search_words.fill(conn, 2000)
        await _analyze_partitions(conn, "trajectories")
        assert not await search_words.analyze_outgrown(conn)  # 2,200 runs: doubled, not more
        await _store(conn, _run("f" * 32, "one more"))
        await search_words.fill(conn, 10)
        await _analyze_partitions(conn, "trajectories")
        assert await search_words.analyze_outgrown(conn)  # 2,201 runs > 2 x 1,100
        assert not await search_words.analyze_outgrown(conn)

    _in_own_database(database, check)
