"""`trajhub serve`: bind the ports, start PostgreSQL (or connect), migrate, then run the
receivers, the REST API and the derivation worker until SIGTERM/SIGINT; then stop accepting,
finish and commit what was acknowledged (waiting at most `shutdown_timeout`), and exit 0.

While it runs, the ingest workers, the derivation workers and the embedded PostgreSQL are
supervised: each is started again when it dies.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import logging
import signal
import socket
from collections.abc import Iterator
from pathlib import Path

import asyncpg
import grpc
import uvicorn

from trajhub.service import metrics, retention
from trajhub.service.app import create_app
from trajhub.service.auth import IngestGate, auth_enabled
from trajhub.service.config import Settings
from trajhub.service.ingest.grpc import create_server
from trajhub.service.ingest.pool import IngestPool
from trajhub.service.runtime import Runtime
from trajhub.service.supervision import Backoff
from trajhub.service.workers import alerts as alert_worker
from trajhub.service.workers import evaluations as evaluation_worker
from trajhub.service.workers import rules as rule_worker
from trajhub.service.workers.derivation import DerivationProcesses
from trajhub.storage import compression, compression_dictionaries, evaluations
from trajhub.storage import retention as storage_retention
from trajhub.storage.database import connect, create_pool
from trajhub.storage.embedded import EmbeddedPostgres
from trajhub.storage.migrate import migrate

log = logging.getLogger("trajhub")

#: a running evaluation with no progress for this long belongs to a server that died
ABANDONED_EVALUATION_SECONDS = 600.0
#: how often the embedded PostgreSQL is checked
EMBEDDED_WATCH_SECONDS = 1.0


def ui_address(host: str, port: int) -> str:
    """The web UI's address for a person to open: a wildcard host (all interfaces) is reached
    on this machine's loopback address; an IPv6 address is bracketed."""
    shown = {"": "127.0.0.1", "0.0.0.0": "127.0.0.1", "::": "::1"}.get(host, host)
    if ":" in shown and not shown.startswith("["):
        shown = f"[{shown}]"
    return f"http://{shown}:{port}/"


def require_upb() -> None:
    """The pure-Python protobuf backend is far slower than upb (bench/README.md, "Decoding and
    storing spans"): refuse to run on it."""
    from google.protobuf.internal import api_implementation

    backend = api_implementation.Type()
    if backend != "upb":
        raise SystemExit(
            f"trajhub: the protobuf {backend!r} backend is in use; trajhub needs 'upb' "
            "(unset PROTOCOL_BUFFERS_PYTHON_IMPLEMENTATION and install protobuf>=4.21)")


class _Uvicorn(uvicorn.Server):
    """uvicorn without its own signal handling: `serve()` owns shutdown order."""

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        yield


async def prepare_database(settings: Settings) -> tuple[str, EmbeddedPostgres | None]:
    embedded = None
    url = settings.database_url
    if not url:
        embedded = await asyncio.to_thread(EmbeddedPostgres, Path(settings.data_dir))
        url = embedded.url
    conn = await connect(url, timeout=10)
    try:
        # the width of the first time partitions, when migration 0021 creates them
        await conn.execute("SELECT set_config('trajhub.partition_seconds', $1, false)",
                           str(settings.partition_width.total_seconds()))
        await migrate(conn)
        # today's partition and the next ones exist before the first span is accepted
        await storage_retention.ensure_partitions(
            conn, settings.partition_width,
            retention.partitions_ahead(settings.partition_width,
                                       settings.retention_interval_seconds))
        abandoned = await evaluations.fail_abandoned(conn, ABANDONED_EVALUATION_SECONDS)
        if abandoned:
            log.warning("marked %d abandoned evaluation(s) failed", abandoned)
    finally:
        await conn.close()
    return url, embedded


def bind_http(host: str, port: int) -> socket.socket:
    """The HTTP listening socket; SystemExit naming the port when it is taken."""
    try:
        sock = socket.create_server((host, port), backlog=2048)
    except OSError as exc:
        if exc.errno == errno.EADDRINUSE:
            raise SystemExit(f"trajhub: port {port} is already in use") from None
        raise SystemExit(f"trajhub: cannot listen for HTTP on {host}:{port}: "
                         f"{exc.strerror}") from None
    # Accepted connections inherit this (Linux). uvloop leaves Nagle's algorithm on for them,
    # so the body of an answer written after its headers waited for the client's delayed ACK,
    # on every request of a keep-alive connection after its first (bench/README.md, "Decoding
    # and storing spans").
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return sock


def bind_grpc(server: grpc.aio.Server, host: str, port: int) -> int:
    """Bind the gRPC server (it does not share ports: grpc.so_reuseport is 0); SystemExit
    naming the port when it is taken."""
    try:
        bound = server.add_insecure_port(f"{host}:{port}")
    except RuntimeError:
        bound = 0
    if bound == 0:
        with socket.socket() as probe:
            try:
                probe.bind((host, port))
            except OSError as exc:
                if exc.errno == errno.EADDRINUSE:
                    raise SystemExit(f"trajhub: port {port} is already in use") from None
        raise SystemExit(f"trajhub: cannot listen for gRPC on {host}:{port}")
    return bound


async def supervise_embedded(embedded: EmbeddedPostgres) -> None:
    """Start the embedded PostgreSQL again whenever it dies; runs until cancelled. Meanwhile
    ingest answers 503 / UNAVAILABLE, as for any database outage."""
    backoff = Backoff()
    backoff.started()
    while True:
        await asyncio.sleep(EMBEDDED_WATCH_SECONDS)
        if await asyncio.to_thread(embedded.running):
            continue
        delay = backoff.next_delay()
        log.error("the embedded PostgreSQL died; restarting it in %.1f s", delay)
        await asyncio.sleep(delay)
        try:
            await asyncio.to_thread(embedded.ensure_running)
        except Exception as exc:
            log.error("restarting the embedded PostgreSQL failed: %r", exc)
        else:
            backoff.started()
            log.info("embedded PostgreSQL restarted")


async def serve(settings: Settings) -> None:
    """Run until SIGTERM/SIGINT. The ports are bound first, so a busy port stops trajhub
    before anything else has started; whatever did start is stopped on the way out."""
    require_upb()
    http_socket = bind_http(settings.host, settings.http_port)
    ingest = IngestPool("", settings.ingest_workers, settings.max_inflight_requests,
                        settings.settle_seconds, settings.derive_at_ingest,
                        settings.derivation_workers)
    gate = IngestGate(settings)
    grpc_server = create_server(ingest, settings.max_request_bytes, gate)
    try:
        grpc_port = bind_grpc(grpc_server, settings.host, settings.grpc_port)
    except SystemExit:
        http_socket.close()
        raise
    http_port = http_socket.getsockname()[1]
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)

    timeout = settings.shutdown_timeout
    embedded: EmbeddedPostgres | None = None
    deriver: DerivationProcesses | None = None
    db: asyncpg.Pool | None = None
    supervisors: list[asyncio.Task[None]] = []
    grpc_started = False
    try:
        url, embedded = await prepare_database(settings)
        if embedded is not None:
            supervisors.append(asyncio.create_task(supervise_embedded(embedded)))
        ingest.database_url = url
        await ingest.start()
        supervisors.append(asyncio.create_task(ingest.supervise()))
        supervisors.append(asyncio.create_task(ingest.drain()))
        deriver = DerivationProcesses(url, settings, ingest.saturated)
        deriver.start()
        supervisors.append(asyncio.create_task(deriver.supervise()))
        db = await create_pool(url)
        compression.set_loader(compression_dictionaries.loader(url))
        gate.db = db
        rt = Runtime(settings=settings, db=db, ingest=ingest)
        metrics.watch_ingest_queue(lambda: ingest.inflight, settings.max_inflight_requests)
        # online evaluation rules (docs/rules.md): what a killed server held runs again
        await rule_worker.release_claims(db)
        supervisors.append(rule_worker.start(db, settings, lambda: bool(ingest.saturated.value)))
        # monitoring alerts (docs/alerts.md): what a killed server held is due again
        await alert_worker.release_claims(db)
        supervisors.extend(alert_worker.start(
            db, settings.alert_interval_seconds,
            settings.public_url or ui_address(settings.host, http_port)))
        # dataset evaluations, from their queue (migration 0056)
        async with db.acquire() as conn:
            await evaluations.release_claims(conn)
        supervisors.append(asyncio.create_task(evaluation_worker.run_queue(db, settings),
                                               name="evaluations"))
        # always running: a project may have a retention of its own while the default is off
        supervisors.append(asyncio.create_task(retention.run(
            db, settings.retention_days, settings.retention_interval_seconds,
            settings.partition_width)))

        def workers_missing() -> str:
            assert deriver is not None
            return "; ".join(m for m in (ingest.missing(), deriver.missing()) if m)

        config = uvicorn.Config(create_app(rt, workers_missing), log_level=settings.log_level,
                                # the access log is trajhub's own (service/access.py); with
                                # log_config=None uvicorn's records use trajhub's format
                                access_log=False, log_config=None,
                                timeout_keep_alive=60, lifespan="off",
                                timeout_graceful_shutdown=max(1, round(timeout)))
        http = _Uvicorn(config)
        await grpc_server.start()
        grpc_started = True
        http_task = asyncio.create_task(http.serve(sockets=[http_socket]))
        log.info("trajhub listening: http=%s:%d grpc=%s:%d database=%s api_keys=%s",
                 settings.host, http_port, settings.host, grpc_port,
                 "embedded" if embedded else "external",
                 "required" if auth_enabled(settings) else "off")
        # one machine-readable line for scripts and tests that asked for port 0
        print(f"trajhub ready http_port={http_port} grpc_port={grpc_port}", flush=True)
        # and one for people: where to open the web UI (service/ui serves it at `/`)
        print(f"trajhub: web UI at {ui_address(settings.host, http_port)}", flush=True)

        await asyncio.wait([asyncio.create_task(stop.wait()), http_task],
                           return_when=asyncio.FIRST_COMPLETED)
        log.info("shutting down: no new requests; finishing those in flight (at most %.0f s)",
                 timeout)
        http.should_exit = True
        # uvicorn cancels what is still running after timeout_graceful_shutdown: a request
        # whose body is still arriving gets no answer (never a 200 for a partial body)
        await asyncio.gather(grpc_server.stop(grace=timeout), http_task)
        grpc_started = False
    finally:
        for task in supervisors:
            task.cancel()
        await asyncio.gather(*supervisors, return_exceptions=True)
        if grpc_started:
            await grpc_server.stop(grace=None)
        http_socket.close()
        await asyncio.to_thread(ingest.shutdown, timeout)
        if deriver is not None:
            await asyncio.to_thread(deriver.stop, timeout)
        if db is not None:
            await db.close()
        if embedded is not None:
            await asyncio.to_thread(embedded.stop)
    log.info("stopped")
