"""`trajhub serve`: start PostgreSQL (or connect), migrate, then run the receivers, the REST
API and the trajectory worker until SIGTERM/SIGINT; then stop accepting, finish and commit
what was acknowledged, and exit 0."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import signal
import socket
from collections.abc import Iterator
from pathlib import Path

import asyncpg
import uvicorn

from trajhub.service.app import create_app
from trajhub.service.config import Settings
from trajhub.service.ingest.grpc import create_server
from trajhub.service.ingest.pool import IngestPool
from trajhub.service.runtime import Runtime
from trajhub.service.workers.assembly import AssemblyProcesses
from trajhub.storage import evaluations
from trajhub.storage.database import create_pool
from trajhub.storage.embedded import EmbeddedPostgres
from trajhub.storage.migrate import migrate

log = logging.getLogger("trajhub")

#: a running evaluation with no progress for this long belongs to a server that died
ABANDONED_EVALUATION_SECONDS = 600.0


def require_upb() -> None:
    """The pure-Python protobuf backend is ~190× slower: refuse to run on it."""
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
    conn = await asyncpg.connect(url, timeout=10)
    try:
        await migrate(conn)
        abandoned = await evaluations.fail_abandoned(conn, ABANDONED_EVALUATION_SECONDS)
        if abandoned:
            log.warning("marked %d abandoned evaluation(s) failed", abandoned)
    finally:
        await conn.close()
    return url, embedded


async def serve(settings: Settings) -> None:
    require_upb()
    url, embedded = await prepare_database(settings)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)

    ingest = IngestPool(url, settings.ingest_workers, settings.max_inflight_requests)
    assembler = AssemblyProcesses(url, settings)
    db = await create_pool(url)
    try:
        await ingest.start()
        assembler.start()
        rt = Runtime(settings=settings, db=db, ingest=ingest)

        http_socket = socket.create_server((settings.host, settings.http_port), backlog=2048)
        http_port = http_socket.getsockname()[1]
        config = uvicorn.Config(create_app(rt), log_level=settings.log_level, access_log=False,
                                timeout_keep_alive=60, lifespan="off")
        http = _Uvicorn(config)
        grpc_server = create_server(ingest, settings.max_request_bytes)
        grpc_port = grpc_server.add_insecure_port(f"{settings.host}:{settings.grpc_port}")
        if grpc_port == 0:
            raise SystemExit(f"trajhub: cannot listen for gRPC on {settings.host}:"
                             f"{settings.grpc_port}")
        await grpc_server.start()
        http_task = asyncio.create_task(http.serve(sockets=[http_socket]))
        log.info("trajhub listening: http=%s:%d grpc=%s:%d database=%s", settings.host,
                 http_port, settings.host, grpc_port, "embedded" if embedded else "external")
        # one machine-readable line for scripts and tests that asked for port 0
        print(f"trajhub ready http_port={http_port} grpc_port={grpc_port}", flush=True)

        await asyncio.wait([asyncio.create_task(stop.wait()), http_task],
                           return_when=asyncio.FIRST_COMPLETED)
        log.info("shutting down: no new requests; finishing those in flight")
        http.should_exit = True
        await asyncio.gather(grpc_server.stop(grace=10), http_task)
    finally:
        await asyncio.to_thread(ingest.shutdown)
        await asyncio.to_thread(assembler.stop)
        await db.close()
        if embedded is not None:
            await asyncio.to_thread(embedded.stop)
    log.info("stopped")
