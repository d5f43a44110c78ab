"""Time partitions (migration 0021): a trace's spans and a re-sent span are stored once in one
partition even across a partition boundary; retention drops whole partitions only when every
project's retention allows it and deletes rows for a shorter one; an existing store converts;
a trace read by id reads one partition.

The server here has a database of its own and partitions three seconds wide, so a test crosses
a partition boundary by waiting a few seconds."""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import asyncpg
import httpx
import pytest

from tests.harness import (
    ServerProcess,
    TestDatabase,
    lock_waited,
    on_separate_database,
    partitioned_server,
    run,
    separate_database,
    wait_for,
)
from tests.harness import fetch_rows as query
from tests.otlp_builders import PB, new_span_id, new_trace_id, request, span
from tests.test_log_content import _note, post_logs
from trajhub.storage import retention, span_writer, trace_reads
from trajhub.storage.database import POOL_SETTINGS
from trajhub.storage.migrate import migrate

WIDTH_SECONDS = 3.0
RETENTION_SECONDS = 6.0
TABLES = ("spans", "traces", "trajectories", "trajectory_revisions")


@pytest.fixture(scope="module")
def part_server(database: TestDatabase, tmp_path_factory: pytest.TempPathFactory
                ) -> Iterator[tuple[ServerProcess, str]]:
    with partitioned_server(database, tmp_path_factory.mktemp("partitions"), WIDTH_SECONDS,
                            TRAJHUB_RETENTION_DAYS=str(RETENTION_SECONDS / 86400)) as server:
        yield server


def send(server: ServerProcess, project: str, spans: list[Any]) -> None:
    r = httpx.post(f"{server.http}/v1/traces", content=request(spans).SerializeToString(),
                   headers={**PB, "trajhub-project": project}, timeout=30)
    assert r.status_code == 200, r.text


def keep_forever(server: ServerProcess, project: str) -> None:
    r = httpx.put(f"{server.http}/api/v1/retention", params={"project": project},
                  json={"days": 0})
    assert r.status_code == 200, r.text


def partition_of(url: str, project: str, trace_id: str) -> asyncpg.Record:
    """The time range the trace is filed under."""
    [row] = query(url, "SELECT p.lower, p.upper FROM trace_keys k JOIN trajhub_time_partitions p "
                       "ON k.first_seen >= p.lower AND k.first_seen < p.upper "
                       "WHERE k.project = $1 AND k.trace_id = $2", project, trace_id)
    return row


def wait_past(url: str, moment: datetime) -> None:
    wait_for(lambda: query(url, "SELECT now() >= $1 AS past", moment)[0]["past"] or None,
             timeout=WIDTH_SECONDS * 5, what="the next partition")


def rows_of(url: str, project: str, trace_id: str) -> dict[str, int]:
    return {t: query(url, f"SELECT count(*) AS n FROM {t} WHERE project = $1 AND trace_id = $2",
                     project, trace_id)[0]["n"] for t in TABLES}


@pytest.fixture
def kept_project(part_server: tuple[ServerProcess, str]) -> Iterator[str]:
    """A project kept forever for the test's length; then back to the default retention, so
    its traces expire and never hold a partition that a later test of this module (the server
    is shared) expects dropped."""
    server, _ = part_server
    project = "part-" + uuid.uuid4().hex[:6]
    keep_forever(server, project)
    yield project
    assert httpx.delete(f"{server.http}/api/v1/retention",
                        params={"project": project}).status_code == 200


def test_a_trace_across_a_partition_boundary_is_stored_once(
        part_server: tuple[ServerProcess, str], kept_project: str) -> None:
    server, url = part_server
    project = kept_project
    tid, root_id = new_trace_id(), new_span_id()
    root = span(tid, "agent", span_id=root_id, duration=5_000_000)
    send(server, project, [root])
    first = partition_of(url, project, tid.hex())

    wait_past(url, first["upper"])  # the trace's partition is over: new traces go elsewhere
    child = span(tid, "tool", parent=root_id, start=root.start_time_unix_nano + 1)
    send(server, project, [child, root])  # the rest of the trace, and the root again
    send(server, project, [root])  # a client retry after the boundary
    later = new_trace_id()
    send(server, project, [span(later, "agent")])

    assert partition_of(url, project, later.hex())["lower"] >= first["upper"]
    assert partition_of(url, project, tid.hex()) == first
    wait_for(lambda: query(url, "SELECT 1 FROM trajectories WHERE project = $1 AND "
                                "trace_id = $2 AND status = 'final' AND step_count >= 0",
                           project, tid.hex()) or None, what="the trajectory final")
    # the re-sent root's request did not carry the whole trace: the derivation workers bring the
    # summary up to date, after the first trajectory may already have been final
    wait_for(lambda: query(url, "SELECT 1 FROM traces WHERE project = $1 AND trace_id = $2 "
                                "AND span_count = 2", project, tid.hex()) or None,
             what="the trace summary counting both spans")
    counts = rows_of(url, project, tid.hex())
    assert counts["spans"] == 2 and counts["traces"] == 1 and counts["trajectories"] == 1
    assert counts["trajectory_revisions"] >= 1
    [summary] = query(url, "SELECT span_count FROM traces WHERE project = $1 AND trace_id = $2",
                      project, tid.hex())
    assert summary["span_count"] == 2
    # every row of the trace in the partition of its first span
    for table in TABLES:
        seen = {r["first_seen"] for r in query(
            url, f"SELECT DISTINCT first_seen FROM {table} WHERE project = $1 AND trace_id = $2",
            project, tid.hex())}
        assert len(seen) == 1 and first["lower"] <= seen.pop() < first["upper"], table
    with httpx.Client() as c:
        r = c.get(f"{server.http}/api/v1/traces/{tid.hex()}", params={"project": project})
        assert r.status_code == 200
        assert len(c.get(f"{server.http}/api/v1/traces/{tid.hex()}",
                         params={"project": project, "view": "flat"}).json()["spans"]) == 2


def test_retention_drops_whole_partitions_only_when_every_project_allows(
        part_server: tuple[ServerProcess, str]) -> None:
    server, url = part_server
    tag = uuid.uuid4().hex[:6]
    kept, short, alone = f"ret-kept-{tag}", f"ret-short-{tag}", f"ret-alone-{tag}"
    keep_forever(server, kept)

    # a kept trace and a short-lived one in the same partition (sent again if a boundary fell
    # between them)
    for _ in range(5):
        k, s = new_trace_id(), new_trace_id()
        send(server, short, [span(s, "agent")])
        send(server, kept, [span(k, "agent")])
        shared = partition_of(url, kept, k.hex())
        if partition_of(url, short, s.hex()) == shared:
            break
    else:
        pytest.fail("no two requests in a row landed in one partition")

    # a partition with one project only
    wait_past(url, shared["upper"])
    a = new_trace_id()
    send(server, alone, [span(a, "agent")])
    own = partition_of(url, alone, a.hex())
    assert own["lower"] >= shared["upper"]
    own_tables = [f"{t}_p{own['lower'].astimezone(UTC):%Y%m%d_%H%M%S}" for t in TABLES]
    shared_tables = [f"{t}_p{shared['lower'].astimezone(UTC):%Y%m%d_%H%M%S}" for t in TABLES]

    def exists(name: str) -> bool:
        return query(url, "SELECT to_regclass($1) IS NOT NULL AS e", name)[0]["e"]

    assert all(exists(t) for t in own_tables + shared_tables)
    # its partition goes whole, tables and all
    wait_for(lambda: not any(exists(t) for t in own_tables) or None,
             timeout=RETENTION_SECONDS + 30, what="the partition of one project dropped")
    assert not any(rows_of(url, alone, a.hex()).values())
    assert not query(url, "SELECT 1 FROM trajhub_time_partitions WHERE lower = $1", own["lower"])
    # the shorter-lived trace of the shared partition went by rows; the kept one stays
    wait_for(lambda: not any(rows_of(url, short, s.hex()).values()) or None,
             timeout=RETENTION_SECONDS + 30, what="the short-lived trace deleted")
    time.sleep(1.0)  # a few more sweeps
    assert all(exists(t) for t in shared_tables)
    assert rows_of(url, kept, k.hex())["spans"] == 1
    assert query(url, "SELECT 1 FROM trace_keys WHERE project = $1 AND trace_id = $2",
                 kept, k.hex())
    assert not query(url, "SELECT 1 FROM trace_keys WHERE project = $1 AND trace_id IN ($2, $3)",
                     short, s.hex(), a.hex())

    # a score of the kept trace (scores are not partitioned: migration 0035) goes with it
    scores = f"{server.http}/api/v1/trajectories/{k.hex()}/scores"
    wait_for(lambda: httpx.get(scores, params={"project": kept}).status_code == 200 or None,
             what="the kept trajectory")
    assert httpx.post(scores, params={"project": kept},
                      json={"name": "q", "value": 1}).status_code == 201
    # and so does a log record of it (log records are not partitioned: migration 0069)
    post_logs(server.http, kept, [_note(k, b"\x02" * 8, "kept note")])
    assert query(url, "SELECT 1 FROM log_records WHERE project = $1", kept)

    # back to the default retention: now every project allows it, and the partition goes
    assert httpx.delete(f"{server.http}/api/v1/retention",
                        params={"project": kept}).status_code == 200
    wait_for(lambda: not any(exists(t) for t in shared_tables) or None,
             timeout=RETENTION_SECONDS + 30, what="the shared partition dropped")
    assert not any(rows_of(url, kept, k.hex()).values())
    assert not query(url, "SELECT 1 FROM scores WHERE project = $1", kept)
    assert not query(url, "SELECT 1 FROM log_records WHERE project = $1", kept)

    # a span of a dropped trace sent again is a new trace, in the current partition
    send(server, alone, [span(a, "agent")])
    assert rows_of(url, alone, a.hex())["spans"] == 1
    assert partition_of(url, alone, a.hex())["lower"] > own["lower"]


# -- an existing store ---------------------------------------------------------------------------

DAY1 = datetime(2025, 3, 1, 23, 59, 30, tzinfo=UTC)
DAY2 = DAY1 + timedelta(minutes=1)  # past midnight


def _old_span(trace_id: str, span_id: str, received: datetime) -> tuple[Any, ...]:
    return ("old", trace_id, span_id, "", "op", 1, 1, 2, 0, "svc", None, 1, "{}",
            b"body-" + span_id.encode(), received)


def test_an_existing_store_is_converted(database: TestDatabase) -> None:
    a, b = "a" * 32, "b" * 32

    async def check(conn: asyncpg.Connection) -> None:
        await migrate(conn, before=21)  # the store as the previous version left it
        # trace a: spans on both sides of midnight; trace b: one span on the second day
        await conn.copy_records_to_table(
            "spans", records=[_old_span(a, "1" * 16, DAY1), _old_span(a, "2" * 16, DAY2),
                              _old_span(b, "3" * 16, DAY2)],
            columns=(*span_writer.SPAN_COLUMNS, "received_at"))
        for tid, received in ((a, DAY2), (b, DAY2)):
            await conn.execute(
                "INSERT INTO traces (project, trace_id, root_span_id, root_name, "
                "service_name, start_ns, end_ns, span_count, error_count, last_received_at) "
                "VALUES ('old', $1, '1', 'op', 'svc', 1, 2, 1, 0, $2)", tid, received)
            await conn.execute(
                "INSERT INTO trajectories (project, trace_id, status, revision, "
                "normalizer_version, settle_at, root_ended, document) "
                "VALUES ('old', $1, 'open', 1, 'v', $2, true, '{}')", tid, received)
            await conn.execute(
                "INSERT INTO open_trajectories (project, trace_id, settle_at, root_ended) "
                "VALUES ('old', $1, $2, true)", tid, received)
        before = {t: await conn.fetchval(f"SELECT count(*) FROM {t}") for t in TABLES}
        indexes_before = {r["indexname"] for r in await conn.fetch(
            "SELECT indexname FROM pg_indexes WHERE tablename = ANY($1::text[])",
            list(TABLES))}

        assert await migrate(conn, before=22) == ["0021_time_partitions.sql"]

        assert {t: await conn.fetchval(f"SELECT count(*) FROM {t}") for t in TABLES} \
            == before
        # every row of a trace under the time of its first span
        for table in TABLES:
            for tid, first in ((a, DAY1), (b, DAY2)):
                assert {r["first_seen"] for r in await conn.fetch(
                    f"SELECT DISTINCT first_seen FROM {table} WHERE trace_id = $1", tid)
                } == {first}, (table, tid)
        assert await conn.fetchval("SELECT body FROM spans WHERE span_id = $1",
                                   "2" * 16) == b"body-" + b"2" * 16
        # a day's partition for each day that held data, and the current ones
        lowers = [r["lower"] for r in await conn.fetch(
            "SELECT lower FROM trajhub_time_partitions ORDER BY lower")]
        assert lowers[:2] == [datetime(2025, 3, 1, tzinfo=UTC),
                              datetime(2025, 3, 2, tzinfo=UTC)]
        assert lowers[-1] > datetime.now(UTC)
        for table in TABLES:
            assert await conn.fetchval("SELECT relkind FROM pg_class WHERE oid = $1::regclass",
                                       table) == b"p"
        indexes_after = {r["indexname"] for r in await conn.fetch(
            "SELECT indexname FROM pg_indexes WHERE tablename = ANY($1::text[])",
            list(TABLES))}
        assert indexes_after == indexes_before
        assert await conn.fetchval(
            "SELECT count(*) FROM pg_trigger WHERE tgrelid = 'trajectories'::regclass "
            "AND NOT tgisinternal") == 2

        # a span of trace a sent again today: stored once, in the trace's partition
        await span_writer.prepare(conn)
        row = span_writer.SpanWrite(*_old_span(a, "2" * 16, DAY2)[:14])
        async with conn.transaction():
            assert not await span_writer.write_spans(conn, [row], {})
        assert await conn.fetchval("SELECT count(*) FROM spans WHERE trace_id = $1", a) == 2
        # a new revision of the old trajectory joins its history, in its partition
        await conn.execute("UPDATE trajectories SET revision = 2 WHERE trace_id = $1", a)
        assert await conn.fetchval(
            "SELECT array_agg(first_seen = $2 ORDER BY revision) FROM trajectory_revisions "
            "WHERE trace_id = $1", a, DAY1) == [True, True]

        # reading a trace by id reads its partition only
        class Captured:
            async def fetch(self, sql: str, *args: Any) -> list[Any]:
                self.sql, self.args = sql, args
                return []

        cap = Captured()
        await trace_reads.trace_spans(cap, "old", a)  # type: ignore[arg-type]
        plan = "\n".join(r[0] for r in await conn.fetch(
            "EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF) " + cap.sql, *cap.args))
        scans = [line for line in plan.splitlines() if " on spans_p" in line]
        assert len(scans) >= 3, plan
        assert sum("never executed" not in line for line in scans) == 1, plan
        assert len(await trace_reads.trace_spans(conn, "old", a)) == 2

    on_separate_database(database, check, server_settings=POOL_SETTINGS)


async def _stored_in_day(conn: asyncpg.Connection, span: span_writer.SpanWrite,
                         lower: datetime) -> None:
    """A migrated database with a partition for the day from `lower`, holding `span` in it as
    a trace first seen at noon that day."""
    seen = lower + timedelta(hours=12)
    await migrate(conn)
    await conn.execute("SELECT trajhub_create_partition($1, $2)", lower, lower + timedelta(days=1))
    await conn.execute("INSERT INTO trace_keys VALUES ('p', $1, $2)", span.trace_id, seen)
    await span_writer.prepare(conn)
    async with conn.transaction():
        assert await span_writer.write_spans(conn, [span], {})
    await conn.execute(
        "INSERT INTO traces (project, trace_id, root_span_id, root_name, service_name, "
        "start_ns, end_ns, span_count, error_count, last_received_at, first_seen) "
        "VALUES ('p', $1, $2, 'op', 'svc', 1, 2, 1, 0, $3, $3)", span.trace_id, span.span_id, seen)


def test_a_span_written_while_its_partition_is_dropped_keeps_it(database: TestDatabase) -> None:
    """Ingest holds its trace's key until it commits; dropping the partition takes the keys
    first, so it waits, then sees the acknowledged span (its trace queued for derivation) and
    keeps the partition."""
    old = span_writer.SpanWrite("p", "c" * 32, "1" * 16, "", "op", 1, 1, 2, 0, "svc", None, 1,
                              "{}", b"old")
    late = old._replace(span_id="2" * 16, body=b"late")
    lower = datetime(2020, 1, 1, tzinfo=UTC)

    async def check(url: str) -> None:
        ingest, sweep = await asyncpg.connect(url), await asyncpg.connect(url)
        try:
            await _stored_in_day(ingest, old, lower)
            [part] = [p for p in await retention.partitions(ingest) if p.lower == lower]

            now = datetime.now(UTC)
            assert await retention.partition_expired(sweep, part, lambda p: 1.0, now)
            tx = ingest.transaction()
            await tx.start()
            assert await span_writer.write_spans(ingest, [late], {})
            await span_writer.queue_changes(ingest, [("p", old.trace_id)])
            dropping = asyncio.ensure_future(
                retention.drop_partition(sweep, part, lambda p: 1.0, now))
            await asyncio.sleep(0.5)
            assert not dropping.done()  # waiting for the ingest's key
            await tx.commit()
            assert await dropping is False
            assert await ingest.fetchval("SELECT count(*) FROM spans WHERE trace_id = $1",
                                         old.trace_id) == 2
            assert await ingest.fetchval("SELECT first_seen FROM trace_keys WHERE trace_id = $1",
                                         old.trace_id) == lower + timedelta(hours=12)
            assert await ingest.fetchval("SELECT to_regclass($1) IS NOT NULL",
                                         part.name("spans"))

            # once derived and expired, the partition goes, keys and all
            await ingest.execute("DELETE FROM trace_changes")
            assert await retention.drop_partition(sweep, part, lambda p: 1.0, now)
            assert await ingest.fetchval("SELECT count(*) FROM spans WHERE trace_id = $1",
                                         old.trace_id) == 0
            assert not await ingest.fetchval("SELECT count(*) FROM trace_keys")
            assert await ingest.fetchval("SELECT to_regclass($1)", part.name("spans")) is None
        finally:
            await ingest.close()
            await sweep.close()

    with separate_database(database) as url:
        run(check(url))


def test_row_deletes_and_partition_creation_wait_for_each_other_without_deadlock(
        database: TestDatabase) -> None:
    """A batch of retention's row deletes started while a partition is being created (its
    first table, spans, already locked) waits for it, and the creation goes on to lock traces,
    whose rows the batch deletes: both finish, and the trace is gone."""
    old = span_writer.SpanWrite("p", "d" * 32, "1" * 16, "", "op", 1, 1, 2, 0, "svc", None, 1,
                              "{}", b"old")
    lower = datetime(2020, 1, 1, tzinfo=UTC)

    async def check(url: str) -> None:
        creator, sweep, watch = (await asyncpg.connect(url), await asyncpg.connect(url),
                                 await asyncpg.connect(url))
        try:
            await _stored_in_day(creator, old, lower)

            tx = creator.transaction()
            await tx.start()
            # what trajhub_create_partition takes first, held until the rest is taken
            await creator.execute("LOCK TABLE ONLY spans IN ACCESS EXCLUSIVE MODE")
            expiring = asyncio.ensure_future(
                retention.expire_batch(sweep, "p", datetime.now(UTC)))
            await lock_waited(watch, sweep.get_server_pid(),
                              "the row deletes for the partition")
            next_day = lower + timedelta(days=1)
            await creator.execute("SELECT trajhub_create_partition($1, $2)",
                                  next_day, next_day + timedelta(days=1))
            await tx.commit()
            assert await expiring == 1
            assert not await watch.fetchval("SELECT count(*) FROM traces WHERE trace_id = $1",
                                            old.trace_id)
        finally:
            for conn in (creator, sweep, watch):
                await conn.close()

    with separate_database(database) as url:
        run(check(url))


def test_every_partition_of_the_words_index_gets_a_64_mb_pending_list(
        database: TestDatabase) -> None:
    """Migrations 0064, 0066 and 0068 (the words in a table of their own): the partitions that
    exist when they run, and those created after them."""
    options = ("SELECT c.relname, c.reloptions FROM pg_inherits h "
               "JOIN pg_class c ON c.oid = h.inhrelid "
               "WHERE h.inhparent = $1::regclass ORDER BY c.relname")

    async def check(conn: asyncpg.Connection) -> None:
        await migrate(conn, before=64)
        before = await conn.fetch(options, "trajectories_words")
        assert before and all(r["reloptions"] is None for r in before)
        existing = [r["relname"].replace("trajectories_words", "trajectory_words_search")
                    for r in before]
        words_options = options.replace("$1", "'trajectory_words_search'")
        await migrate(conn)
        assert [r["relname"] for r in await conn.fetch(words_options)] == existing
        # hourly partitions past the migrations' daily ones (which reach at most 3 days
        # ahead): a day of them is enough to see which options each got
        assert await conn.fetchval(
            "SELECT trajhub_ensure_partitions(interval '1 hour', 24 * 4)") > 0
        rows = await conn.fetch(words_options)
        assert {r["relname"] for r in rows} > set(existing)
        assert {r["relname"]: r["reloptions"] for r in rows} == {
            r["relname"]: ["gin_pending_list_limit=65536"] for r in rows}

    on_separate_database(database, check)


def test_every_partition_of_trajectories_is_analyzed_once_its_writes_exceed_nine_tenths_of_it(
        database: TestDatabase) -> None:
    """Migrations 0065 and 0067: autovacuum analyzes a partition of `trajectories` once the
    rows written since its last analyze exceed 0.9 of its size, on the partitions made before
    0065, those made while 0065's half held, and those made after 0067; the other tables keep
    PostgreSQL's default."""
    options = ("SELECT h.inhparent::regclass::text AS parent, c.relname, c.reloptions "
               "FROM pg_inherits h JOIN pg_class c ON c.oid = h.inhrelid "
               "WHERE h.inhparent = ANY('{trajectories,spans,traces}'::regclass[])")

    def scale_factors(reloptions: list[str] | None) -> list[str]:
        return [o for o in reloptions or [] if o.startswith("autovacuum_analyze_scale_factor=")]

    async def check(conn: asyncpg.Connection) -> None:
        await migrate(conn, before=65)
        before_0065 = {r["relname"] for r in await conn.fetch(options)}
        await migrate(conn, before=67)
        # hourly partitions past the migrations' daily ones (which reach at most 3 days
        # ahead): a day of them is enough to see which options each got
        assert await conn.fetchval(
            "SELECT trajhub_ensure_partitions(interval '1 hour', 24 * 4)") > 0
        at_half = {r["relname"] for r in await conn.fetch(options)
                   if scale_factors(r["reloptions"]) == ["autovacuum_analyze_scale_factor=0.5"]}
        assert at_half - before_0065, "0065 left no partition at a half to replace"
        await migrate(conn)
        assert await conn.fetchval(
            "SELECT trajhub_ensure_partitions(interval '1 hour', 24 * 5)") > 0
        rows = await conn.fetch(options)
        assert {r["relname"] for r in rows} > before_0065 | at_half
        for r in rows:
            expected = (["autovacuum_analyze_scale_factor=0.9"]
                        if r["parent"] == "trajectories" else [])
            assert scale_factors(r["reloptions"]) == expected, r

    on_separate_database(database, check)
