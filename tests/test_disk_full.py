"""A full disk under load: ingest answers 503 / UNAVAILABLE (never 500 / INTERNAL), /readyz and
/metrics and the log say "disk full" in words, and once space is freed ingest recovers with no
restart of trajhub, having lost or doubled no acknowledged span.

The embedded PostgreSQL's data directory is on a tmpfs the test mounts itself (so it runs as
root, as CI does), and a ballast file fills what is left of it mid-load."""

from __future__ import annotations

import os
import signal
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import grpc
import httpx
import pytest
from opentelemetry.proto.collector.trace.v1 import trace_service_pb2_grpc

from tests.harness import ServerProcess, final_trajectory, get_json, stop_threads, wait_for
from tests.otlp_builders import PB, new_span_id, new_trace_id, request, span

PROJECT = "diskfull"
SPANS_PER_TRACE = 10


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    """A 512 MiB tmpfs of the test's own."""
    disk = tmp_path / "disk"
    disk.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=512m", "tmpfs", str(disk)],
                   check=True, capture_output=True)
    try:
        yield disk
    finally:
        subprocess.run(["umount", "-l", str(disk)], check=False)


def fill(path: Path) -> None:
    """Write zeros to `path` until the filesystem has no room left."""
    chunk = b"\0" * (1 << 16)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT, 0o600)
    try:
        while True:
            os.write(fd, chunk)
    except OSError:
        pass
    finally:
        os.close(fd)


def backend_pid(pgdata: Path) -> int:
    """A process of the PostgreSQL server whose data directory is `pgdata`, not its
    postmaster."""
    postmaster = int((pgdata / "postmaster.pid").read_text().split()[0])
    children = Path(f"/proc/{postmaster}/task/{postmaster}/children").read_text().split()
    return int(children[0])


def trace_body(trace_id: bytes) -> bytes:
    """One whole trace of incompressible spans, so that the disk fills in seconds."""
    root = new_span_id()
    now = time.time_ns()
    spans = [span(trace_id, "agent", span_id=root, start=now)]
    spans += [span(trace_id, f"step {i}", parent=root, start=now + i,
                   attributes={"payload": os.urandom(3000).hex()})
              for i in range(SPANS_PER_TRACE - 1)]
    return request(spans).SerializeToString()


@pytest.mark.slow  # a soak test
@pytest.mark.integration  # starts processes
def test_a_full_disk_gives_503_says_so_and_loses_nothing_acknowledged(
        tmp_path: Path, small_disk: Path) -> None:
    server = ServerProcess.start("", tmp_path, extra_env={
        "TRAJHUB_DATA_DIR": str(small_disk / "data"), "TRAJHUB_INGEST_WORKERS": "2"})
    acked: list[str] = []
    http_statuses: list[int] = []
    retry_afters: set[str] = set()
    grpc_codes: list[grpc.StatusCode] = []
    stop = threading.Event()

    def http_sender() -> None:
        with httpx.Client(timeout=60) as c:
            while not stop.is_set():
                tid = new_trace_id()
                r = c.post(f"{server.http}/v1/traces", content=trace_body(tid),
                           headers={**PB, "trajhub-project": PROJECT})
                http_statuses.append(r.status_code)
                if r.status_code == 200:
                    acked.append(tid.hex())
                elif r.status_code == 503:
                    retry_afters.add(r.headers.get("retry-after", ""))
                    time.sleep(0.1)

    def grpc_sender() -> None:
        from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
            ExportTraceServiceRequest,
        )

        with grpc.insecure_channel(server.grpc) as channel:
            stub = trace_service_pb2_grpc.TraceServiceStub(channel)
            while not stop.is_set():
                tid = new_trace_id()
                message = ExportTraceServiceRequest.FromString(trace_body(tid))
                try:
                    stub.Export(message, metadata=[("trajhub-project", PROJECT)], timeout=60)
                except grpc.RpcError as error:
                    grpc_codes.append(error.code())
                    time.sleep(0.1)
                    continue
                grpc_codes.append(grpc.StatusCode.OK)
                acked.append(tid.hex())

    threads = [threading.Thread(target=http_sender), threading.Thread(target=grpc_sender)]
    ballast = small_disk / "ballast"
    try:
        for t in threads:
            t.start()
        wait_for(lambda: len(acked) >= 20, timeout=60, what="traces acknowledged before")
        fill(ballast)
        with httpx.Client(timeout=30) as c:
            wait_for(lambda: http_statuses.count(503) >= 10, timeout=120, interval=0.2,
                     what="ingest refused with 503 while the disk is full")
            # a WAL write that finds no room makes PostgreSQL panic and restart all its
            # processes, and its recovery on the full disk fails in turn: killing one backend
            # starts the same restart without waiting for the WAL to fill
            os.kill(backend_pid(small_disk / "data" / "pgdata"), signal.SIGKILL)
            refused = http_statuses.count(503)
            wait_for(lambda: http_statuses.count(503) >= refused + 10
                     and grpc_codes.count(grpc.StatusCode.UNAVAILABLE) >= 10,
                     timeout=120, interval=0.2, what="ingest refused after the crash restart")
            ready = c.get(f"{server.http}/readyz")
            assert ready.status_code == 503
            assert "disk full" in ready.json()["detail"]
            metrics = c.get(f"{server.http}/metrics").text
            shortages = [line for line in metrics.splitlines()
                         if line.startswith('trajhub_database_shortages_total{kind="disk_full"}')]
            assert shortages and float(shortages[0].split()[-1]) > 0, shortages
            # reads: answered where PostgreSQL still reads, 503 where it cannot; never 500
            read = c.get(f"{server.http}/api/v1/traces/{acked[0]}", params={"project": PROJECT})
            assert read.status_code in (200, 503), read.text

            full_since = len(acked)
            ballast.unlink()
            wait_for(lambda: len(acked) >= full_since + 20, timeout=120, interval=0.2,
                     what="ingest recovered after space was freed")
            stop_threads(stop, threads)

            assert set(http_statuses) <= {200, 503}, sorted(set(http_statuses))
            assert set(grpc_codes) <= {grpc.StatusCode.OK, grpc.StatusCode.UNAVAILABLE}, \
                set(grpc_codes)
            assert grpc.StatusCode.UNAVAILABLE in grpc_codes
            assert retry_afters and all(int(v) > 0 for v in retry_afters), retry_afters
            wait_for(lambda: c.get(f"{server.http}/readyz").status_code == 200, timeout=60,
                     what="ready again")
            for tid in acked:  # stored once, and final
                spans = get_json(c, f"{server.http}/api/v1/traces/{tid}", project=PROJECT,
                                 view="flat")["spans"]
                assert len(spans) == SPANS_PER_TRACE, (tid, len(spans))
                final_trajectory(c, server.http, PROJECT, tid)
        assert "disk full" in server.log_path.read_text()
        assert server.stop() == 0
    finally:
        stop_threads(stop, threads)
        server.stop()
