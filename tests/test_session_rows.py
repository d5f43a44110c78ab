"""Sessions as rows (storage/session_rows.py, docs/monitoring.md "Sessions"): every session's
summary, read from its stored row and its open turns, equals the summary aggregated from all
its turns with the SQL the read used before sessions were stored (`OLD_SUMMARIES`, kept here
as the oracle), after turns become final, while turns are open, after scores are added and
deleted, a re-derivation, a late span, retention's row deletes and a partition dropped.

The runs are derived and finalized in this process (storage/derivation_store.py), so the test
decides which turns are open when it compares."""

from __future__ import annotations

import asyncio
import math
import time
import uuid
from datetime import UTC, datetime, timedelta
from typing import Any

import asyncpg
import orjson

from tests.harness import TestDatabase, separate_database
from tests.otlp_builders import interrupted_run_spans, new_span_id, new_trace_id, request, span
from trajhub.evaluators.pricing import Prices
from trajhub.service import derivation
from trajhub.service.api.sessions import _converters, _with_exact_usage
from trajhub.service.ingest.decode import otlp_batch
from trajhub.storage import derivation_store, retention, scores, session_reads, span_writer
from trajhub.storage.migrate import migrate, migration_files
from trajhub.storage.session_reads import SessionFilter

#: the summaries of a project's ($1) sessions, as the read aggregated them from every turn
#: before sessions were stored: each field's aggregate over the session's turns, then each
#: score name's mean over the turns of each one's latest whole-run score of it
OLD_SUMMARIES = """
SELECT turns.session_id, turns.turns, turns.start_time, turns.last_turn_time, turns.end_time,
       turns.user_ids, turns.input_tokens, turns.output_tokens, turns.failed_turns,
       turns.open_turns, turns.waiting, turns.first_trace_id, turns.first_input_preview,
       (SELECT coalesce(jsonb_object_agg(m.name, m.mean), '{}'::jsonb) FROM (
            SELECT l.name, avg(l.number_value) AS mean FROM (
                SELECT DISTINCT ON (sc.trace_id, sc.name) sc.name, sc.number_value
                FROM scores sc
                WHERE sc.project = turns.project AND sc.trace_id = ANY(turns.turn_ids)
                  AND sc.step_id IS NULL ORDER BY sc.trace_id, sc.name, sc.id DESC) l
            WHERE l.number_value IS NOT NULL GROUP BY l.name) m) AS scores,
       turns.cost
FROM (SELECT session_id, count(*) AS turns, min(start_ns) AS start_time,
             max(start_ns) AS last_turn_time,
             max(start_ns + duration_ms::bigint * 1000000) AS end_time,
             array_remove(array_agg(DISTINCT user_id ORDER BY user_id), NULL) AS user_ids,
             sum(input_tokens)::bigint AS input_tokens, sum(output_tokens)::bigint AS output_tokens,
             count(*) FILTER (WHERE has_error OR derivation_error IS NOT NULL) AS failed_turns,
             count(*) FILTER (WHERE status = 'open') AS open_turns,
             (array_agg(interrupted ORDER BY start_ns DESC, trace_id DESC))[1] AS waiting,
             (array_agg(trace_id ORDER BY start_ns, trace_id))[1] AS first_trace_id,
             (array_agg(input_preview ORDER BY start_ns, trace_id))[1] AS first_input_preview,
             array_agg(model_usage) AS cost,
             array_agg(trace_id) AS turn_ids, min(project) AS project
      FROM trajectories WHERE project = $1 AND session_id IS NOT NULL
      GROUP BY session_id) turns
"""

PLAIN = ("session_id", "turns", "start_time", "last_turn_time", "end_time", "user_ids",
         "input_tokens", "output_tokens", "failed_turns", "open_turns", "waiting",
         "first_trace_id", "first_input_preview")


def _comparable(row: Any, prices: Prices) -> dict[str, Any]:
    out = {k: row[k] for k in PLAIN}
    out["user_ids"] = list(out["user_ids"])
    out["cost"] = _converters(prices)["cost_of_turns"](row["cost"])
    return out


def _same_means(got: dict[str, float], want: dict[str, float]) -> bool:
    # the row sums numerics exactly where avg() summed floats: equal up to the last digits
    return got.keys() == want.keys() and all(
        math.isclose(got[k], want[k], rel_tol=1e-12, abs_tol=1e-15) for k in want)


async def assert_sessions_match(conn: asyncpg.Connection, projects: list[str]) -> int:
    """Every session of `projects`, read by its summary and by the list, equals the old
    aggregate; the stored rows are those of the sessions with final turns, none stale, and a
    row left with no turns holds zeros. Returns how many sessions there were."""
    prices = Prices()
    count = 0
    for project in projects:
        want = {r["session_id"]: r for r in await conn.fetch(OLD_SUMMARIES, project)}
        listed = await _with_exact_usage(conn, project, prices, await session_reads.list_sessions(
            conn, project, SessionFilter(limit=1000)))
        assert [r.session_id for r in listed] == sorted(
            want, key=lambda s: (want[s]["last_turn_time"], s), reverse=True)
        for row in listed:
            one = await session_reads.session_summary(conn, project, row.session_id)
            assert one is not None
            [one] = await _with_exact_usage(conn, project, prices, [one])
            expected = want[row.session_id]
            for got in (row, one):
                assert _comparable(got, prices) == _comparable(expected, prices)
                assert _same_means(orjson.loads(got["scores"]),
                                   orjson.loads(expected["scores"])), (got, expected)
        count += len(want)
        finals = {r["session_id"] for r in await conn.fetch(
            "SELECT DISTINCT session_id FROM trajectories WHERE project = $1 "
            "AND status = 'final' AND session_id IS NOT NULL", project)}
        stored = {r["session_id"] for r in await conn.fetch(
            "SELECT session_id FROM sessions WHERE project = $1 AND turns > 0", project)}
        assert stored == finals
    assert not await conn.fetch("SELECT 1 FROM sessions WHERE stale OR turns < 0")
    assert not await conn.fetch(
        "SELECT 1 FROM sessions WHERE turns = 0 AND (failed_turns <> 0 OR input_tokens <> 0 "
        "OR output_tokens <> 0 OR first_trace_id IS NOT NULL OR last_trace_id IS NOT NULL "
        "OR end_ns IS NOT NULL)")
    assert not await conn.fetch("SELECT 1 FROM session_users WHERE turns < 0")
    assert not await conn.fetch("SELECT 1 FROM session_scores WHERE scores < 0 "
                                "OR (scores = 0 AND total <> 0)")
    assert not await conn.fetch(
        "SELECT 1 FROM session_models WHERE calls < 0 OR (calls = 0 AND (input_tokens <> 0 "
        "OR output_tokens <> 0 OR cache_read_tokens <> 0 OR cache_write_tokens <> 0 "
        "OR reasoning_tokens <> 0))")
    return count


def turn_spans(trace: bytes, start: int, session: str | None, user: str | None, model: str,
               input_tokens: int, error: bool = False, question: str = "") -> list[Any]:
    """One run: an agent with `session` and `user` on its root and a user's question as its
    input, and one call of `model` (with cache reads), which failed when `error`."""
    root = new_span_id()
    attrs: dict[str, Any] = {"gen_ai.operation.name": "invoke_agent",
                             "gen_ai.agent.name": "planner"}
    if session is not None:
        attrs["session.id"] = session
    if user is not None:
        attrs["user.id"] = user
    if question:
        attrs["gen_ai.input.messages"] = orjson.dumps(
            [{"role": "user", "parts": [{"type": "text", "content": question}]}]).decode()
    return [
        span(trace, "invoke_agent planner", span_id=root, start=start, duration=50_000_000 +
             input_tokens * 1000, attributes=attrs),
        span(trace, "chat", parent=root, start=start + 1_000_000, error=error, attributes={
            "gen_ai.operation.name": "chat", "gen_ai.request.model": model,
            "gen_ai.usage.input_tokens": input_tokens, "gen_ai.usage.output_tokens": 17,
            "gen_ai.usage.cache_read_input_tokens": input_tokens // 4}),
    ]


class Store:
    """A fresh database's connection, with this process as ingest, deriver and finalizer."""

    def __init__(self, conn: asyncpg.Connection) -> None:
        self.conn = conn

    async def send(self, project: str, spans: list[Any]) -> str:
        batch = otlp_batch(request(spans), project)
        async with self.conn.transaction():
            assert await span_writer.write_spans(self.conn, batch.rows.values(), batch.resources)
            await span_writer.queue_changes(self.conn, [(project, spans[0].trace_id.hex())])
        return str(spans[0].trace_id.hex())

    async def derive(self) -> None:
        while await derivation.derive_round(self.conn, timedelta(0), 100):
            pass

    async def finalize(self) -> None:
        while await derivation_store.finalize_settled(self.conn, 300.0):
            pass

    async def statuses(self) -> dict[str, str]:
        return {r["trace_id"]: r["status"] for r in await self.conn.fetch(
            "SELECT trace_id, status FROM trajectories")}


def test_session_rows_equal_the_sessions_turns_through_every_correction(
        database: TestDatabase) -> None:
    a, b = [f"p{n}-{uuid.uuid4().hex[:6]}" for n in range(2)]
    t0 = time.time_ns() - 3600 * 10**9

    async def check(url: str) -> None:
        conn = await asyncpg.connect(url)
        s = Store(conn)

        async def match(sessions: int) -> None:
            assert await assert_sessions_match(conn, [a, b]) == sessions

        try:
            await migrate(conn)
            await span_writer.prepare(conn)
            # session one: three turns of two users, the second failed; session two: one turn
            # of a model priced by the call's size, one of gpt-4o; a run of no session
            one = [await s.send(a, turn_spans(new_trace_id(), t0 + i * 10**9, "one",
                                              ("u1", "u2", "u1")[i], "gpt-4o", 100 + i,
                                              error=i == 1, question=f"question {i}"))
                   for i in range(3)]
            two = [await s.send(a, turn_spans(new_trace_id(), t0 + (5 + i) * 10**9, "two", None,
                                              ("gemini-2.5-pro", "gpt-4o")[i], 150_000 * (i + 1)))
                   for i in range(2)]
            await s.send(a, turn_spans(new_trace_id(), t0, None, "u1", "gpt-4o", 7))
            # the other project has a session of the same id
            other = await s.send(b, turn_spans(new_trace_id(), t0, "one", "u9", "gpt-4o", 9))
            await s.derive()
            assert set((await s.statuses()).values()) == {"open"}
            await match(3)  # all open: no rows yet
            assert not await conn.fetch("SELECT 1 FROM sessions")
            await s.finalize()
            assert set((await s.statuses()).values()) == {"final"}
            await match(3)
            [row] = await conn.fetch("SELECT * FROM sessions WHERE project = $1 "
                                     "AND session_id = 'one'", a)
            assert (row["turns"], row["failed_turns"], row["first_trace_id"]) == (3, 1, one[0])
            assert row["first_input_preview"] == "question 0"

            # two later turns of session one, open: the second (the latest) interrupted; one
            # of them scored while open
            later = [await s.send(a, turn_spans(new_trace_id(), t0 + 20 * 10**9, "one", "u3",
                                                "gpt-4o-mini", 50)),
                     await s.send(a, interrupted_run_spans(new_trace_id(), "planner", "one",
                                                           t0 + 30 * 10**9))]
            await s.derive()
            assert [(await s.statuses())[t] for t in later] == ["open", "open"]
            await scores.add(conn, a, [_score(later[0], "correctness", 0.5)])
            await match(3)
            await s.finalize()
            await match(3)
            assert (await session_reads.session_summary(conn, a, "one"))["waiting"] is True

            # scores of final turns: a newer one replaces the older of its name, a category
            # hides an older number, a step's score and a categorical one count nothing
            await scores.add(conn, a, [_score(one[0], "correctness", 1.0),
                                       _score(one[1], "correctness", 0.25),
                                       _score(one[1], "helpful", True),
                                       _score(two[0], "correctness", 0.75)])
            await match(3)
            replaced = await scores.add(conn, a, [_score(one[0], "correctness", 0.0)])
            await scores.add(conn, a, [_score(one[1], "correctness", "fine"),
                                       _score(one[2], "correctness", 0.9, step="s1")])
            await match(3)
            means = orjson.loads((await session_reads.session_summary(conn, a, "one"))["scores"])
            assert means["correctness"] == (0.0 + 0.5) / 2 and means["helpful"] == 1.0
            # the latest deleted: the one before it counts again; an older one deleted: no
            # change
            await scores.delete(conn, a, one[0], replaced[0].id)
            await match(3)
            older = next(r for r in await scores.for_trajectory(conn, a, one[1])
                         if r["name"] == "correctness")
            await scores.delete(conn, a, one[1], older.id)
            await match(3)

            # a re-derivation of the session's first turn: it is open again (the row's first
            # turn is read again from the rest), then final again
            await span_writer.queue_changes(conn, [(a, one[0])])
            await s.derive()
            assert (await s.statuses())[one[0]] == "open"
            await match(3)
            row = await conn.fetchrow("SELECT * FROM sessions WHERE project = $1 "
                                      "AND session_id = 'one'", a)
            assert row["first_trace_id"] == one[1] and row["turns"] == 4
            await s.finalize()
            await match(3)

            # a late span: session two's priced-by-size turn calls its model again
            [root] = await conn.fetch("SELECT span_id, start_ns FROM spans WHERE trace_id = $1 "
                                      "AND parent_span_id = ''", two[0])
            await s.send(a, [span(bytes.fromhex(two[0]), "chat", parent=bytes.fromhex(
                root["span_id"]), start=root["start_ns"] + 2_000_000, attributes={
                    "gen_ai.operation.name": "chat", "gen_ai.request.model": "gemini-2.5-pro",
                    "gen_ai.usage.input_tokens": 250_000, "gen_ai.usage.output_tokens": 3})])
            await s.derive()
            await match(3)
            await s.finalize()
            await match(3)
            # its calls straddle the model's price tiers: the row's sums alone would price
            # them all at the upper one, so the summary prices the turns' own calls
            summary = await session_reads.session_summary(conn, a, "two")
            assert summary is not None
            [exact] = await _with_exact_usage(conn, a, Prices(), [summary])
            price = _converters(Prices())["cost_of_turns"]
            assert price(exact["cost"])["usd"] != price(summary["cost"])["usd"]

            # the migration's fill, from the final runs as they now stand, gives the same rows
            await refill(conn)
            await match(3)

            # retention's row deletes: the three runs received first and not since (session
            # one's second and third, session two's latest)
            later_cutoff = datetime.now(UTC) + timedelta(days=1)
            assert await retention.expire_batch(conn, a, later_cutoff, limit=3) == 3
            await match(3)
            assert [(await session_reads.session_summary(conn, a, n))["turns"]
                    for n in ("one", "two")] == [3, 1]

            # every run of the project re-derived: all open, then all final
            await derivation_store.queue_rederive(conn, a, None, None)
            await s.derive()
            await match(3)
            await s.finalize()
            await match(3)

            # the whole partition dropped
            for part in await conn.fetch("SELECT lower, upper FROM trajhub_time_partitions"):
                await retention.drop_partition(
                    conn, retention.TimePartition(part["lower"], part["upper"]),
                    lambda project: 1.0, datetime.now(UTC) + timedelta(days=2))
            assert not await conn.fetch("SELECT 1 FROM trajectories WHERE trace_id = $1", other)
            await match(0)
        finally:
            await conn.close()

    with separate_database(database) as url:
        asyncio.run(check(url))


async def refill(conn: asyncpg.Connection) -> None:
    """The session rows, and the runs' summed calls, emptied and filled again by migration
    0092's own statements."""
    sql = next(sql for number, _, sql in migration_files() if number == 92)
    fill = sql[sql.index("-- The trajectories already final"):sql.index("-- On a Citus")]
    async with conn.transaction():
        await conn.execute("DELETE FROM sessions; DELETE FROM session_users; "
                           "DELETE FROM session_models; DELETE FROM session_scores; "
                           "UPDATE rollup_contributions SET session_id = NULL, user_id = NULL, "
                           "failed_turn = false, usage_sums = '{}'; "
                           # the derivation's sums too: the migration's SQL fills them again
                           "UPDATE trajectories SET usage_sums = '{}'")
        await conn.execute(fill)


def _score(trace: str, name: str, value: float | bool | str, step: str | None = None
           ) -> dict[str, Any]:
    row: dict[str, Any] = {"trace_id": trace, "name": name, "source": "api", "step_id": step}
    if isinstance(value, bool):
        row.update(value_type="boolean", number_value=float(value))
    elif isinstance(value, str):
        row.update(value_type="category", category_value=value)
    else:
        row.update(value_type="number", number_value=value)
    return row
