"""Database outage, clean shutdown, concurrent migrations, and the protobuf backend check."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import threading
import uuid
from pathlib import Path
from typing import Any

import asyncpg
import grpc
import httpx
import pytest
from google.rpc import error_details_pb2, status_pb2
from opentelemetry.proto.collector.trace.v1 import trace_service_pb2_grpc

from tests.harness import (
    ServerProcess,
    TestDatabase,
    database_url,
    fetch_rows,
    get_json,
    stop_threads,
    wait_for,
)
from tests.otlp_builders import PB, new_trace_id, request, span
from tests.test_otlp_logs import log_record, logs_request
from trajhub.storage.embedded import EmbeddedPostgres
from trajhub.storage.migrate import migrate, migration_files


def _pg_ctl(pg: EmbeddedPostgres, *args: str) -> None:
    from pgserver._commands import pg_ctl

    server = pg._server
    pg_ctl(list(args), pgdata=server.pgdata, user=server.system_user, timeout=30)


@pytest.mark.integration  # starts PostgreSQL
def test_embedded_data_directory_tuned_by_an_older_version_gets_the_new_settings(
        tmp_path: Path) -> None:
    """A data directory tuned before wal_compression was a setting gets it at the next start,
    and keeps every setting it had."""
    pg = EmbeddedPostgres(tmp_path)
    pg.stop()
    auto_conf = tmp_path / "pgdata" / "postgresql.auto.conf"
    older = [line for line in auto_conf.read_text().splitlines()
             if not line.startswith("wal_compression")]
    auto_conf.write_text("\n".join(older) + "\n")

    pg = EmbeddedPostgres(tmp_path)
    try:
        shown = {name: str(pg._server.psql(f"SHOW {name}")).split("\n")[2].strip()
                 for name in ("wal_compression", "wal_buffers", "checkpoint_timeout")}
    finally:
        pg.stop()
    assert shown == {"wal_compression": "pglz", "wal_buffers": "64MB",
                     "checkpoint_timeout": "15min"}


@pytest.mark.slow  # a soak test
@pytest.mark.integration  # starts processes
def test_database_outage_gives_503_and_ingestion_resumes(tmp_path: Path) -> None:
    """PostgreSQL stopped mid-run → 503 + Retry-After / UNAVAILABLE + RetryInfo, never 500;
    restarted → ingestion resumes with no restart of trajhub, and nothing acknowledged is lost.
    Uses its own PostgreSQL, since it stops it."""
    pg = EmbeddedPostgres(tmp_path / "pg")
    server = ServerProcess.start(pg.url, tmp_path)
    project = "outage"
    acked: list[str] = []
    try:
        with httpx.Client(timeout=30) as c:
            before = new_trace_id()
            r = c.post(f"{server.http}/v1/traces", headers={**PB, "trajhub-project": project},
                       content=request([span(before)]).SerializeToString())
            assert r.status_code == 200
            acked.append(before.hex())

            _pg_ctl(pg, "-w", "stop", "-m", "fast")
            during = new_trace_id()
            body = request([span(during)]).SerializeToString()
            r = c.post(f"{server.http}/v1/traces", headers={**PB, "trajhub-project": project},
                       content=body)
            assert r.status_code == 503
            assert int(r.headers["retry-after"]) > 0
            assert "database" in status_pb2.Status.FromString(r.content).message
            # log records likewise, over both transports
            logs = logs_request([log_record()]).SerializeToString()
            r = c.post(f"{server.http}/v1/logs", headers={**PB, "trajhub-project": project},
                       content=logs)
            assert r.status_code == 503 and int(r.headers["retry-after"]) > 0
            with grpc.insecure_channel(server.grpc) as channel, \
                    pytest.raises(grpc.RpcError) as refused:
                channel.unary_unary(
                    "/opentelemetry.proto.collector.logs.v1.LogsService/Export",
                    request_serializer=None, response_deserializer=None)(logs, timeout=30)
            assert refused.value.code() == grpc.StatusCode.UNAVAILABLE

            stub = trace_service_pb2_grpc.TraceServiceStub(grpc.insecure_channel(server.grpc))
            with pytest.raises(grpc.RpcError) as failure:
                stub.Export(request([span(new_trace_id())]), timeout=30)
            assert failure.value.code() == grpc.StatusCode.UNAVAILABLE
            details = dict(failure.value.trailing_metadata())["grpc-status-details-bin"]
            status = status_pb2.Status.FromString(details)
            retry = error_details_pb2.RetryInfo()
            assert status.details[0].Unpack(retry) and retry.retry_delay.seconds > 0

            assert c.get(f"{server.http}/readyz").status_code == 503
            assert c.get(f"{server.http}/healthz").status_code == 200

            pg._server.ensure_postgres_running()
            # the client retries as an OTLP exporter would, until the server takes it
            def retried() -> bool:
                return c.post(f"{server.http}/v1/traces", content=body,
                              headers={**PB, "trajhub-project": project}).status_code == 200

            wait_for(retried, timeout=30, interval=0.5, what="ingestion to resume")
            acked.append(during.hex())
            wait_for(lambda: c.get(f"{server.http}/readyz").status_code == 200, what="ready")
            for trace_id in acked:
                spans = get_json(c, f"{server.http}/api/v1/traces/{trace_id}",
                                 project=project, view="flat")["spans"]
                assert len(spans) == 1
            # the derivation worker recovered too
            wait_for(lambda: len(get_json(c, f"{server.http}/api/v1/traces",
                                          project=project)["items"]) == 2,
                     timeout=30, what="both traces summarized")
        assert server.stop() == 0
    finally:
        server.stop()
        pg.stop()


@pytest.mark.slow  # a soak test
def test_sigterm_under_load_exits_0_and_keeps_every_acknowledged_span(
        database: TestDatabase, tmp_path: Path) -> None:
    server = ServerProcess.start(database.url, tmp_path)
    project = "shutdown-" + uuid.uuid4().hex[:8]
    acked: list[str] = []
    stop = threading.Event()

    def sender() -> None:
        with httpx.Client(timeout=30) as c:
            while not stop.is_set():
                tid = new_trace_id()
                body = request([span(tid, name=f"s{i}") for i in range(50)]).SerializeToString()
                try:
                    r = c.post(f"{server.http}/v1/traces", content=body,
                               headers={**PB, "trajhub-project": project})
                except httpx.HTTPError:
                    return  # the server stopped accepting
                if r.status_code == 200:
                    acked.append(tid.hex())

    threads = [threading.Thread(target=sender) for _ in range(4)]
    for t in threads:
        t.start()
    wait_for(lambda: len(acked) >= 10, what="some acknowledged requests")
    assert server.stop(signal.SIGTERM) == 0
    stop_threads(stop, threads)

    counts = {r["trace_id"]: r["n"] for r in fetch_rows(
        database.url, "SELECT trace_id, count(*) AS n FROM spans WHERE project = $1 "
        "GROUP BY trace_id", project)}
    assert acked
    assert all(counts.get(tid) == 50 for tid in acked), "an acknowledged span is missing"


def test_two_processes_migrating_at_once_apply_each_migration_once(
        database: TestDatabase) -> None:
    name = "trajhub_migrate_" + uuid.uuid4().hex[:8]

    async def scenario() -> tuple[list[str], list[str], int]:
        admin = await asyncpg.connect(database.url)
        await admin.execute(f'CREATE DATABASE "{name}"')
        url = database_url(database.url, name)
        try:
            a, b = await asyncpg.connect(url), await asyncpg.connect(url)
            applied_a, applied_b = await asyncio.gather(migrate(a), migrate(b))
            again = await migrate(a)
            count = await a.fetchval("SELECT count(*) FROM schema_migrations")
            await a.close()
            await b.close()
            assert again == []
            return applied_a, applied_b, count
        finally:
            await admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
            await admin.close()

    applied_a, applied_b, count = asyncio.run(scenario())
    every = [name for _, name, _ in migration_files()]
    assert sorted(applied_a + applied_b) == sorted(every)
    assert count == len(every)


@pytest.mark.integration  # starts processes
def test_pure_python_protobuf_backend_is_refused() -> None:
    env = {**os.environ, "PROTOCOL_BUFFERS_PYTHON_IMPLEMENTATION": "python",
           "TRAJHUB_DATABASE_URL": "postgresql://127.0.0.1:1/none"}
    done = subprocess.run([sys.executable, "-m", "trajhub", "serve"], env=env,
                          capture_output=True, text=True, timeout=60,
                          cwd=Path(__file__).parent.parent)
    assert done.returncode != 0
    assert "upb" in done.stderr


def test_saturated_ingestion_gets_503_not_500(database: TestDatabase, tmp_path: Path) -> None:
    """With one in-flight slot, concurrent requests beyond it are refused with 503 +
    Retry-After (the client retries), and every request answered 200 is stored."""
    server = ServerProcess.start(database.url, tmp_path,
                                 extra_env={"TRAJHUB_MAX_INFLIGHT_REQUESTS": "1",
                                            "TRAJHUB_INGEST_WORKERS": "1"})
    project = "saturated-" + uuid.uuid4().hex[:8]
    statuses: list[int] = []
    ok: list[str] = []
    lock = threading.Lock()

    def send() -> None:
        with httpx.Client(timeout=30) as c:
            for _ in range(5):
                tid = new_trace_id()
                body = request([span(tid, attributes={"input.value": "x" * 2000})
                                for _ in range(300)]).SerializeToString()
                r = c.post(f"{server.http}/v1/traces", content=body,
                           headers={**PB, "trajhub-project": project})
                with lock:
                    statuses.append(r.status_code)
                    if r.status_code == 200:
                        ok.append(tid.hex())
                    else:
                        assert r.headers.get("retry-after")
    try:
        threads = [threading.Thread(target=send) for _ in range(6)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert set(statuses) <= {200, 503}
        assert 503 in statuses and 200 in statuses
        with httpx.Client() as c:
            for tid in ok:
                assert len(get_json(c, f"{server.http}/api/v1/traces/{tid}", project=project,
                                    view="flat")["spans"]) == 300
    finally:
        assert server.stop() == 0


def test_evaluation_abandoned_by_a_dead_server_is_marked_failed_at_start(
        database: TestDatabase, server: ServerProcess, tmp_path: Path) -> None:
    """`server` has migrated the database; a row left `running` by a killed server, idle for
    an hour, is failed by the next server that starts — and one still making progress is not."""
    project = "abandoned-" + uuid.uuid4().hex[:8]

    async def insert(idle: str) -> int:
        conn = await asyncpg.connect(database.url)
        try:
            return int(await conn.fetchval(
                """INSERT INTO evaluations (project, dataset_name, target, evaluators, status,
                       updated_at)
                   VALUES ($1, 'gone', 'snapshot', '[]', 'running', now() - $2::text::interval)
                   RETURNING id""", project, idle))
        finally:
            await conn.close()

    stale, fresh = asyncio.run(insert("1 hour")), asyncio.run(insert("1 second"))
    second = ServerProcess.start(database.url, tmp_path)
    try:
        with httpx.Client(timeout=30) as c:
            gone = get_json(c, f"{second.http}/api/v1/evaluations/{stale}", project=project)
            assert gone["status"] == "failed" and "interrupted" in gone["error"]
            alive = get_json(c, f"{second.http}/api/v1/evaluations/{fresh}", project=project)
            assert alive["status"] == "running"
    finally:
        assert second.stop() == 0


@pytest.mark.integration  # starts PostgreSQL
def test_a_resent_batch_writes_no_error_line_in_postgresqls_log(tmp_path: Path) -> None:
    """A client retry is a success: stored once, answered 200, and PostgreSQL's log stays free
    of ERROR lines (an operator reads those as failures). Uses its own PostgreSQL, to read its
    log."""
    pg = EmbeddedPostgres(tmp_path / "pg")
    server = ServerProcess.start(pg.url, tmp_path)
    project = "resend"
    try:
        with httpx.Client(timeout=30) as c:
            def post(spans: list[Any]) -> None:
                r = c.post(f"{server.http}/v1/traces", headers={**PB, "trajhub-project": project},
                           content=request(spans).SerializeToString())
                assert r.status_code == 200, r.content

            whole = new_trace_id()
            batch = [span(whole, name=f"s{i}") for i in range(5)]
            post(batch)
            post(batch)  # the same request again
            split = new_trace_id()
            first = [span(split, name=f"first {i}") for i in range(3)]
            post(first)
            post([*first[:1], span(split, name="later")])  # one re-sent, one new
            post([span(split, name="new, of a known trace")])
            for trace_id, count in ((whole, 5), (split, 5)):
                spans = get_json(c, f"{server.http}/api/v1/traces/{trace_id.hex()}",
                                 project=project, view="flat")["spans"]
                assert len(spans) == count
        assert server.stop() == 0
    finally:
        server.stop()
        pg.stop()
    errors = [line for line in (tmp_path / "pg" / "pgdata" / "log").read_text().splitlines()
              if "ERROR" in line]
    assert errors == []
