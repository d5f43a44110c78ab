"""Monitoring's rollups (storage/rollups.py, docs/monitoring.md) hold, row for row, what the
final trajectories themselves sum to: after runs become final, after a re-derivation, a late
span, scores added and deleted, retention's row deletes and a whole partition dropped. So do
the sessions' rows (storage/session_rows.py; tests/test_session_rows.py compares them), whose
turns here span both partitions.

The server here has a database of its own with partitions three seconds wide, so two batches
of runs land in two partitions and one can be dropped."""

from __future__ import annotations

import asyncio
import math
import time
import uuid
from collections import defaultdict
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from typing import Any

import asyncpg
import httpx
import pytest

from tests.harness import (
    ServerProcess,
    TestDatabase,
    lock_waited,
    partitioned_server,
    separate_database,
    wait_for,
)
from tests.harness import fetch_rows as query
from tests.otlp_builders import PB, new_span_id, new_trace_id, request, span
from tests.test_session_rows import assert_sessions_match
from trajhub.client import TrajhubClient
from trajhub.service import derivation
from trajhub.service.ingest.decode import otlp_batch
from trajhub.storage import derivation_store, retention, scores, span_writer
from trajhub.storage.migrate import migrate
from trajhub.storage.rollups import HOUR_NS

WIDTH_SECONDS = 3.0


@pytest.fixture(scope="module")
def rollup_server(database: TestDatabase, tmp_path_factory: pytest.TempPathFactory
                  ) -> Iterator[tuple[ServerProcess, str]]:
    with partitioned_server(database, tmp_path_factory.mktemp("rollups"),
                            WIDTH_SECONDS) as server:
        yield server


def bucket(ms: int) -> int:
    """The latency bucket (migration 0080), computed here independently."""
    return 0 if ms < 1 else 1 + math.floor(math.log(ms) / math.log(1.1))


def expected(url: str) -> tuple[dict[tuple[Any, ...], dict[str, Any]],
                                dict[tuple[Any, ...], tuple[int, Decimal]]]:
    """The rollups and score rollups as the final trajectories and their scores sum to."""
    runs = query(url, """
        SELECT project, trace_id, start_ns, coalesce(run_name, '') AS run_name, agent_names,
               model_names,
               coalesce(release, '') AS release, coalesce(prompt_version, '') AS prompt_version,
               has_error, duration_ms, input_tokens, output_tokens, cache_read_tokens,
               cache_write_tokens, reasoning_tokens, coalesce(derived_usd, 0)::numeric AS usd
        FROM trajectories WHERE status = 'final'""")
    rows: dict[tuple[Any, ...], dict[str, Any]] = {}
    key_of = {}
    for r in runs:
        key = (r["project"], r["start_ns"] - r["start_ns"] % HOUR_NS, r["run_name"],
               tuple(r["agent_names"]), tuple(r["model_names"]), r["release"],
               r["prompt_version"])
        key_of[(r["project"], r["trace_id"])] = key
        row = rows.setdefault(key, defaultdict(int))
        row["runs"] += 1
        row["failed_runs"] += int(r["has_error"])
        row["latency"] = {**row.get("latency", {})}
        b = bucket(r["duration_ms"])
        row["latency"][b] = row["latency"].get(b, 0) + 1
        for c in ("duration_ms", "input_tokens", "output_tokens", "cache_read_tokens",
                  "cache_write_tokens", "reasoning_tokens", "usd"):
            row[c] += r[c]
    scores: dict[tuple[Any, ...], tuple[int, Decimal]] = {}
    for s in query(url, "SELECT project, trace_id, name, number_value::numeric AS v "
                        "FROM scores WHERE number_value IS NOT NULL"):
        if (k := key_of.get((s["project"], s["trace_id"]))) is not None:
            n, total = scores.get((*k, s["name"]), (0, Decimal(0)))
            scores[(*k, s["name"])] = (n + 1, total + s["v"])
    return {k: dict(v) for k, v in rows.items()}, scores


def actual(url: str) -> tuple[dict[tuple[Any, ...], dict[str, Any]],
                              dict[tuple[Any, ...], tuple[int, Decimal]]]:
    rows: dict[tuple[Any, ...], dict[str, Any]] = {}
    for r in query(url, "SELECT * FROM run_rollups"):
        key = (r["project"], r["hour_ns"], r["run_name"], tuple(r["agents"]),
               tuple(r["models"]), r["release"], r["prompt_version"])
        latency = {b: n for b, n in enumerate(r["latency_counts"]) if n}
        figures = {c: r[c] for c in ("runs", "failed_runs", "duration_ms", "input_tokens",
                                     "output_tokens", "cache_read_tokens", "cache_write_tokens",
                                     "reasoning_tokens", "usd")}
        if r["runs"] == 0:
            # a row whose runs were all taken back holds zeros
            assert not latency and not any(figures.values()), r
            continue
        rows[key] = {**figures, "latency": latency}
    scores = {}
    for s in query(url, "SELECT * FROM run_rollup_scores"):
        if s["scores"] == 0:
            assert s["total"] == 0, s
            continue
        scores[(s["project"], s["hour_ns"], s["run_name"], tuple(s["agents"]),
                tuple(s["models"]), s["release"], s["prompt_version"], s["name"])] = (
            s["scores"], s["total"])
    return rows, scores


def assert_rollups_match(url: str) -> None:
    want_rows, want_scores = expected(url)
    got_rows, got_scores = actual(url)
    assert got_rows == want_rows
    assert got_scores == want_scores
    finals = {(r["project"], r["trace_id"]) for r in query(
        url, "SELECT project, trace_id FROM trajectories WHERE status = 'final'")}
    contributed = {(r["project"], r["trace_id"]) for r in query(
        url, "SELECT project, trace_id FROM rollup_contributions")}
    assert contributed == finals

    async def sessions() -> int:
        conn = await asyncpg.connect(url)
        try:
            return await assert_sessions_match(conn, sorted({p for p, _ in finals}))
        finally:
            await conn.close()

    assert asyncio.run(sessions()) == len({r["k"] for r in query(
        url, "SELECT DISTINCT (project, session_id)::text AS k FROM trajectories "
             "WHERE session_id IS NOT NULL")})


def run_spans(trace_id: bytes, start: int, agent: str, model: str, duration_ms: int,
              error: bool = False, prompt_version: str | None = None,
              run_name: str | None = None, session: str | None = None) -> list[Any]:
    root = new_span_id()
    chat_attrs: dict[str, Any] = {
        "gen_ai.operation.name": "chat", "gen_ai.request.model": model,
        "gen_ai.usage.input_tokens": 1000 + duration_ms, "gen_ai.usage.output_tokens": 20}
    if prompt_version is not None:
        chat_attrs["prompt.version"] = prompt_version
    return [
        span(trace_id, f"invoke_agent {agent}", span_id=root, start=start,
             duration=duration_ms * 1_000_000,
             attributes={"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": agent,
                         **({"trajhub.run": run_name} if run_name else {}),
                         **({"session.id": session} if session else {})}),
        span(trace_id, "chat", parent=root, start=start + 1_000_000, attributes=chat_attrs,
             error=error),
    ]


def send(server: ServerProcess, project: str, spans: list[Any], release: str | None) -> None:
    resource = {"service.version": release} if release else None
    r = httpx.post(f"{server.http}/v1/traces",
                   content=request(spans, resource=resource).SerializeToString(),
                   headers={**PB, "trajhub-project": project}, timeout=30)
    assert r.status_code == 200, r.text


def all_final(url: str, count: int, min_revision: dict[str, int] | None = None) -> None:
    def probe() -> bool:
        rows = query(url, "SELECT trace_id, status, revision FROM trajectories")
        queued = query(url, "SELECT count(*) AS n FROM trace_changes")[0]["n"]
        return (len(rows) == count and queued == 0
                and all(r["status"] == "final" for r in rows)
                and all(r["revision"] >= (min_revision or {}).get(r["trace_id"], 1)
                        for r in rows))
    wait_for(probe, timeout=60, what="every trajectory final")


def revisions(url: str) -> dict[str, int]:
    return {r["trace_id"]: r["revision"]
            for r in query(url, "SELECT trace_id, revision FROM trajectories")}


def test_rollups_equal_the_final_trajectories_through_every_correction(
        rollup_server: tuple[ServerProcess, str]) -> None:
    server, url = rollup_server
    projects = [f"roll-{n}-{uuid.uuid4().hex[:6]}" for n in ("a", "b")]
    now_ns = time.time_ns()
    sent: list[tuple[str, str]] = []

    def batch(k: int) -> None:
        for i in range(6):
            project = projects[i % 2]
            trace = new_trace_id()
            send(server, project, run_spans(
                trace, now_ns - (i % 3) * HOUR_NS - i * 1_000_000_000,
                agent=("planner", "writer")[i % 2 if k else 0],
                model=("gpt-4o", "gpt-4o-mini")[i % 3 == 0], duration_ms=40 + 97 * i + k,
                error=i == 4, prompt_version="v2" if i % 3 == 1 else None,
                run_name="nightly" if i % 2 else None,
                # sessions with turns in both batches' partitions, and a run of none
                session=f"s{i % 3}" if i < 5 else None),
                release=("1.0.0", None, "1.1.0")[i % 3])
            sent.append((project, trace.hex()))

    batch(0)
    all_final(url, 6)
    assert_rollups_match(url)
    first = {r["first_seen"] for r in query(url, "SELECT first_seen FROM trace_keys")}
    # the next batch in a later partition
    time.sleep(WIDTH_SECONDS * 1.2)
    batch(1)
    all_final(url, 12)
    assert_rollups_match(url)
    # the labels and the money arrive
    [seen] = query(url, "SELECT bool_or(run_name = 'nightly') AS run_name, "
                        "bool_or(release = '1.1.0') AS release, "
                        "bool_or(prompt_version = 'v2') AS prompt, sum(usd) > 0 AS priced, "
                        "sum(failed_runs) AS failed FROM run_rollups")
    assert seen["run_name"] and seen["release"] and seen["prompt"] and seen["priced"]
    assert seen["failed"] == 2

    # scores, added to final runs and one taken away; a categorical one counts nothing
    with TrajhubClient(server.http, project=projects[0]) as hub:
        mine = [t for p, t in sent if p == projects[0]]
        for n, trace in enumerate(mine):
            hub.add_score(trace, "correctness", n / 4)
            hub.add_score(trace, "label", "good")
        gone = hub.add_score(mine[0], "helpfulness", 1.0)
        hub.add_score(mine[1], "helpfulness", 0.5)
        hub.delete_score(mine[0], gone.id)
    assert_rollups_match(url)

    # a re-derivation of one project: its runs open, then final again
    before = revisions(url)
    with TrajhubClient(server.http, project=projects[0]) as hub:
        assert hub.rederive() == 6
    all_final(url, 12, {t: before[t] + 1 for p, t in sent if p == projects[0]})
    assert_rollups_match(url)

    # a late span: a final run of the other project calls one more model
    project, trace = next((p, t) for p, t in sent if p == projects[1])
    [root] = query(url, "SELECT span_id, start_ns FROM spans WHERE trace_id = $1 "
                        "AND parent_span_id = ''", trace)
    before = revisions(url)
    send(server, project, [span(bytes.fromhex(trace), "chat", parent=bytes.fromhex(
        root["span_id"]), start=root["start_ns"] + 2_000_000,
        attributes={"gen_ai.operation.name": "chat", "gen_ai.request.model": "o3",
                    "gen_ai.usage.input_tokens": 7, "gen_ai.usage.output_tokens": 3})], None)
    all_final(url, 12, {trace: before[trace] + 1})
    assert "o3" in query(url, "SELECT model_names FROM trajectories WHERE trace_id = $1",
                         trace)[0]["model_names"]
    assert_rollups_match(url)

    # retention's row deletes: the oldest two runs of a project (one of them scored)
    async def expire() -> int:
        conn = await asyncpg.connect(url)
        try:
            return await retention.expire_batch(
                conn, projects[0], datetime.now(UTC) + timedelta(days=1), limit=2)
        finally:
            await conn.close()

    assert asyncio.run(expire()) == 2
    assert_rollups_match(url)

    # a whole partition dropped: of the first batch's, the one holding the most runs left
    part = max((p for p in query(url, "SELECT lower, upper FROM trajhub_time_partitions")
                if any(p["lower"] <= f < p["upper"] for f in first)),
               key=lambda p: query(url, "SELECT count(*) AS n FROM trajectories "
                                        "WHERE first_seen >= $1 AND first_seen < $2",
                                   p["lower"], p["upper"])[0]["n"])

    async def drop() -> bool:
        conn = await asyncpg.connect(url)
        try:
            return await retention.drop_partition(
                conn, retention.TimePartition(part["lower"], part["upper"]),
                lambda project: 1.0, datetime.now(UTC) + timedelta(days=2))
        finally:
            await conn.close()

    left = len(query(url, "SELECT 1 FROM trajectories"))
    assert asyncio.run(drop())
    assert len(query(url, "SELECT 1 FROM trajectories")) < left
    assert_rollups_match(url)
    assert query(url, "SELECT count(*) AS n FROM run_rollups WHERE runs > 0")[0]["n"] >= 1


def test_a_score_written_while_its_run_is_finalized_counts_once(
        database: TestDatabase) -> None:
    """The two changes to one run in the same instant: the finalize statement has made the run
    final in a transaction not yet committed when a score of it is written. The score waits
    for the run's lock, then counts in the rollups as the run now stands: once."""
    project, trace = "race", new_trace_id()

    async def check(url: str) -> None:
        conn, finalizer, scorer = [await asyncpg.connect(url) for _ in range(3)]
        try:
            await store_run(conn, project, trace)
            tx = finalizer.transaction()
            await tx.start()
            assert await derivation_store.finalize_settled(finalizer, 300.0) == 1
            scoring = asyncio.ensure_future(scores.add(scorer, project, [
                {"trace_id": trace.hex(), "name": "correctness", "value_type": "number",
                 "number_value": 0.75,
                 "source": "api"}]))
            await lock_waited(conn, scorer.get_server_pid(),
                              "the score for the run being finalized")
            await tx.commit()
            assert len(await scoring) == 1
        finally:
            for c in (conn, finalizer, scorer):
                await c.close()

    with separate_database(database) as url:
        asyncio.run(check(url))
        assert [dict(r) for r in query(url, "SELECT scores, total FROM run_rollup_scores")] == [
            {"scores": 1, "total": Decimal("0.75")}]
        assert_rollups_match(url)


def test_a_run_expired_while_it_is_finalized_is_left_for_the_next_batch(
        database: TestDatabase) -> None:
    """Retention's row deletes and the finalize statement in the same instant: the run being
    made final is skipped by the batch (its lock is held), and expired by the next one, whose
    statement sees what it contributed, so the rollups hold nothing of it."""
    project, trace = "expiring", new_trace_id()

    async def check(url: str) -> None:
        conn, finalizer = [await asyncpg.connect(url) for _ in range(2)]
        try:
            await store_run(conn, project, trace)
            tx = finalizer.transaction()
            await tx.start()
            assert await derivation_store.finalize_settled(finalizer, 300.0) == 1
            later = datetime.now(UTC) + timedelta(days=1)
            # without the lock it would wait for the finalize, which this test holds open
            assert await asyncio.wait_for(retention.expire_batch(conn, project, later), 60) == 0
            await tx.commit()
            assert await retention.expire_batch(conn, project, later) == 1
        finally:
            for c in (conn, finalizer):
                await c.close()

    with separate_database(database) as url:
        asyncio.run(check(url))
        assert not query(url, "SELECT 1 FROM trajectories")
        assert not query(url, "SELECT 1 FROM run_rollups WHERE runs <> 0")
        assert_rollups_match(url)


async def store_run(conn: asyncpg.Connection, project: str, trace: bytes) -> None:
    """A fresh database's migrations, then one run stored and derived (open, settled)."""
    await migrate(conn)
    await span_writer.prepare(conn)
    batch = otlp_batch(request(run_spans(trace, time.time_ns() - 10**9, "planner", "gpt-4o",
                                         120)), project)
    async with conn.transaction():
        assert await span_writer.write_spans(conn, batch.rows.values(), batch.resources)
        await span_writer.queue_changes(conn, [(project, trace.hex())])
    assert await derivation.derive_round(conn, timedelta(0), 10) == 1
