"""The free-text words index's pending list is merged while the derivation has no backlog
(migration 0066, `IdleWordsMerge` in service/workers/derivation.py): at the first chance, then
once enough trajectories were written since the last merge, and not before.

Against a database of its own (no server's worker shares its index). Whether the list holds
entries is read from `gin_clean_pending_list`, which returns how many pages of it a merge
emptied; the threshold is lowered so that a test writes tens of trajectories, not thousands."""

from __future__ import annotations

from datetime import timedelta

import asyncpg
import pytest

from tests.harness import TestDatabase, run, separate_database
from tests.otlp_builders import new_trace_id, request, span
from trajhub.service import derivation
from trajhub.service.ingest.decode import otlp_batch
from trajhub.service.workers import derivation as worker
from trajhub.storage import search_words, span_writer
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
            merge = worker.IdleWordsMerge()

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

