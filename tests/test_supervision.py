"""Faults in trajhub's own processes: busy ports, dead workers, a dead embedded PostgreSQL,
kill -9 of the main process, and a shutdown with a slow client. Each test starts (and stops)
its own server, since it breaks it."""

from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import sys
import threading
import time
import uuid
from pathlib import Path

import grpc
import httpx
import pytest
from opentelemetry.proto.collector.trace.v1 import trace_service_pb2_grpc

from tests.harness import (
    ServerProcess,
    TestDatabase,
    final_trajectory,
    get_json,
    proc_stat,
    stop_threads,
    wait_for,
)
from tests.otlp_builders import PB, new_trace_id, request, span

REPO = Path(__file__).parent.parent


# ---------------------------------------------------------------------------- processes

def alive(pid: int) -> bool:
    fields = proc_stat(pid)
    return fields is not None and fields[0] not in ("Z", "X")  # a zombie has exited


def children(pid: int) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            fields = proc_stat(int(entry.name))
            if fields is not None and fields[1] == str(pid) and fields[0] not in ("Z", "X"):
                found.append(int(entry.name))
    return found


def workers(server: ServerProcess) -> tuple[set[int], set[int]]:
    """(ingest worker pids, derivation worker pids): the spawned children; the trajectory
    workers are the ones at nice 10."""
    ingest, derivation = set(), set()
    for pid in children(server.process.pid):
        try:
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
        except OSError:
            continue  # it exited between the listing and this read (a killed worker reaped)
        if b"spawn_main" not in cmdline:
            continue  # multiprocessing's resource tracker
        fields = proc_stat(pid)
        (derivation if fields is not None and fields[16] == "10" else ingest).add(pid)
    return ingest, derivation


def send_trace(c: httpx.Client, server: ServerProcess, project: str) -> str:
    tid = new_trace_id()
    r = c.post(f"{server.http}/v1/traces", headers={**PB, "trajhub-project": project},
               content=request([span(tid)]).SerializeToString())
    assert r.status_code == 200, r.text
    return tid.hex()


def serve_process(env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "trajhub", "serve"], cwd=REPO, text=True,
                          capture_output=True, timeout=120, env={**os.environ, **env})


# ---------------------------------------------------------------------------- busy ports

@pytest.mark.integration  # starts processes
@pytest.mark.parametrize("which", ["TRAJHUB_HTTP_PORT", "TRAJHUB_GRPC_PORT"])
def test_a_busy_port_stops_serve_before_anything_starts(tmp_path: Path, which: str) -> None:
    """Exit 1 naming the port; no embedded PostgreSQL was started, no worker either."""
    with socket.create_server(("127.0.0.1", 0)) as busy:
        port = busy.getsockname()[1]
        env = {"TRAJHUB_DATABASE_URL": "", "TRAJHUB_DATA_DIR": str(tmp_path / "data"),
               "TRAJHUB_HTTP_PORT": "0", "TRAJHUB_GRPC_PORT": "0", which: str(port)}
        done = serve_process(env)
    assert done.returncode == 1
    assert f"port {port} is already in use" in done.stderr
    assert "Traceback" not in done.stderr
    assert not (tmp_path / "data" / "pgdata").exists()


@pytest.mark.slow  # several servers
def test_a_second_server_cannot_share_the_grpc_port(database: TestDatabase,
                                                    tmp_path: Path) -> None:
    (tmp_path / "first").mkdir()
    first = ServerProcess.start(database.url, tmp_path / "first")
    try:
        done = serve_process({"TRAJHUB_DATABASE_URL": database.url, "TRAJHUB_HTTP_PORT": "0",
                              "TRAJHUB_GRPC_PORT": str(first.grpc_port),
                              "TRAJHUB_DATA_DIR": str(tmp_path / "data")})
        assert done.returncode == 1
        assert f"port {first.grpc_port} is already in use" in done.stderr
    finally:
        assert first.stop() == 0


# ---------------------------------------------------------------------------- dead workers

def test_killed_workers_are_restarted_and_readyz_says_so_meanwhile(
        database: TestDatabase, tmp_path: Path) -> None:
    (tmp_path / "w").mkdir()
    server = ServerProcess.start(database.url, tmp_path / "w",
                                 extra_env={"TRAJHUB_INGEST_WORKERS": "2"})
    project = "sup-" + uuid.uuid4().hex[:8]
    try:
        with httpx.Client(timeout=30) as c:
            ingest, derivation = wait_for(lambda: (lambda w: w if len(w[0]) == 2 and w[1]
                                                 else None)(workers(server)),
                                        what="the workers")
            assert c.get(f"{server.http}/readyz").status_code == 200

            os.kill(next(iter(ingest)), signal.SIGKILL)
            statuses = set()

            def new_ingest_workers() -> set[int] | None:
                statuses.add(c.get(f"{server.http}/readyz").status_code)
                now = workers(server)[0]
                return now if len(now) == 2 and not now & ingest and 503 in statuses else None

            wait_for(new_ingest_workers, timeout=30, what="new ingest workers")
            wait_for(lambda: c.get(f"{server.http}/readyz").status_code == 200, what="ready")
            tid = send_trace(c, server, project)
            final_trajectory(c, server.http, project, tid)

            os.kill(next(iter(derivation)), signal.SIGKILL)
            statuses.clear()

            def new_derivation_worker() -> set[int] | None:
                statuses.add(c.get(f"{server.http}/readyz").status_code)
                now = workers(server)[1]
                return now if now and not now & derivation and 503 in statuses else None

            wait_for(new_derivation_worker, timeout=30, what="a new derivation worker")
            tid = send_trace(c, server, project)
            final_trajectory(c, server.http, project, tid)
            wait_for(lambda: c.get(f"{server.http}/readyz").status_code == 200, what="ready")
        assert server.stop() == 0
        log = server.log_path.read_text()
        assert "killed by SIGKILL" in log
        assert "ingest worker died" in log and "derivation worker" in log
    finally:
        server.stop()


@pytest.mark.slow  # a soak test
def test_five_quick_worker_kills_under_load_lose_nothing_and_end_in_a_working_pool(
        database: TestDatabase, tmp_path: Path) -> None:
    """An ingest worker killed 5 times as fast as new ones appear (some while the pool is still
    starting): every answer is 200 or 503, every acknowledged trace is stored, the log names
    the processes that died (not those of an earlier pool), and the pool ends up working."""
    (tmp_path / "w").mkdir()
    server = ServerProcess.start(database.url, tmp_path / "w",
                                 extra_env={"TRAJHUB_INGEST_WORKERS": "2"})
    project = "kills-" + uuid.uuid4().hex[:8]
    acked: list[str] = []
    statuses: set[int] = set()
    stop = threading.Event()

    def sender() -> None:
        with httpx.Client(timeout=60) as c:
            while not stop.is_set():
                tid = new_trace_id()
                r = c.post(f"{server.http}/v1/traces", headers={**PB, "trajhub-project": project},
                           content=request([span(tid)]).SerializeToString())
                statuses.add(r.status_code)
                if r.status_code == 200:
                    acked.append(tid.hex())
                else:
                    time.sleep(0.05)

    thread = threading.Thread(target=sender)
    try:
        thread.start()
        wait_for(lambda: len(acked) >= 10, what="traces acknowledged before the kills")
        killed: list[int] = []
        while len(killed) < 5:
            pids = wait_for(lambda: sorted(workers(server)[0] - set(killed)) or None,
                            timeout=60, interval=0.02, what="an ingest worker to kill")
            os.kill(pids[0], signal.SIGKILL)
            killed.append(pids[0])
        before = len(acked)
        with httpx.Client(timeout=30) as c:
            wait_for(lambda: c.get(f"{server.http}/readyz").status_code == 200, timeout=120,
                     what="ready after the kills")
            wait_for(lambda: len(acked) >= before + 10, timeout=60, what="ingest resumed")
            stop.set()
            thread.join()
            assert statuses <= {200, 503}, statuses
            for tid in acked:
                r = c.get(f"{server.http}/api/v1/traces/{tid}", params={"project": project})
                assert r.status_code == 200, (tid, r.status_code)
            final_trajectory(c, server.http, project, send_trace(c, server, project))
        # a worker just started counts as an ingest one until it lowers its priority, and one
        # replaced may not have exited yet: the pool settles at its two
        wait_for(lambda: len(workers(server)[0]) == 2, timeout=60, what="two ingest workers")
        assert server.stop() == 0
        named = [int(pid) for pid in re.findall(r"pid (\d+): killed by SIGKILL",
                                                server.log_path.read_text())]
        # each death is told once, by the pool it belonged to
        assert named and set(named) <= set(killed) and len(named) == len(set(named)), \
            (named, killed)
    finally:
        stop.set()
        if thread.is_alive():
            thread.join()
        server.stop()


@pytest.mark.slow  # several servers
@pytest.mark.integration  # starts processes
def test_kill_9_of_the_main_process_leaves_no_child_and_the_next_start_works(
        tmp_path: Path) -> None:
    """With the embedded PostgreSQL: the workers die with their parent, and the next start
    drops the dead process's handle, so its clean stop stops PostgreSQL."""
    server = ServerProcess.start("", tmp_path, extra_env={"TRAJHUB_INGEST_WORKERS": "2"})
    try:
        with httpx.Client(timeout=30) as c:
            send_trace(c, server, "default")
        spawned = wait_for(lambda: (lambda w: w if len(w[0]) == 2 and w[1] else None)(
            workers(server)), what="the workers")
        kids = children(server.process.pid)
        assert set(spawned[0]) | set(spawned[1]) <= set(kids)
        server.process.kill()
        server.process.wait()
        wait_for(lambda: not any(alive(pid) for pid in kids), timeout=15,
                 what="every child of the killed server to exit")
    finally:
        server.stop()

    again = ServerProcess.start("", tmp_path, extra_env={"TRAJHUB_INGEST_WORKERS": "2"})
    try:
        with httpx.Client(timeout=30) as c:
            tid = send_trace(c, again, "default")
            final_trajectory(c, again.http, "default", tid)
    finally:
        assert again.stop() == 0
    assert "stale handle" in again.log_path.read_text()
    # the last handle closed: PostgreSQL was stopped, not left running
    assert not (tmp_path / "data" / "pgdata" / "postmaster.pid").exists()


# ---------------------------------------------------------------------------- PostgreSQL

@pytest.mark.slow  # a soak test
@pytest.mark.integration  # starts processes
def test_embedded_postgres_killed_under_load_is_restarted_and_nothing_acked_is_lost(
        tmp_path: Path) -> None:
    server = ServerProcess.start("", tmp_path, extra_env={"TRAJHUB_INGEST_WORKERS": "2"})
    project = "pgkill"
    pgdata = tmp_path / "data" / "pgdata"
    acked: list[str] = []
    http_statuses: set[int] = set()
    grpc_codes: set[grpc.StatusCode] = set()
    dropped: list[str] = []
    stop = threading.Event()

    def http_sender() -> None:
        with httpx.Client(timeout=30) as c:
            while not stop.is_set():
                tid = new_trace_id()
                try:
                    r = c.post(f"{server.http}/v1/traces",
                               headers={**PB, "trajhub-project": project},
                               content=request([span(tid)]).SerializeToString())
                except httpx.HTTPError as exc:
                    dropped.append(repr(exc))
                    continue
                http_statuses.add(r.status_code)
                if r.status_code == 200:
                    acked.append(tid.hex())
                time.sleep(0.02)

    def grpc_sender() -> None:
        with grpc.insecure_channel(server.grpc) as channel:
            stub = trace_service_pb2_grpc.TraceServiceStub(channel)
            while not stop.is_set():
                tid = new_trace_id()
                try:
                    stub.Export(request([span(tid)]), metadata=[("trajhub-project", project)],
                                timeout=30)
                except grpc.RpcError as error:
                    grpc_codes.add(error.code())
                    continue
                grpc_codes.add(grpc.StatusCode.OK)
                acked.append(tid.hex())
                time.sleep(0.02)

    threads = [threading.Thread(target=http_sender), threading.Thread(target=http_sender),
               threading.Thread(target=grpc_sender)]
    try:
        for t in threads:
            t.start()
        wait_for(lambda: len(acked) >= 20, what="acknowledged requests before the kill")
        postmaster = int((pgdata / "postmaster.pid").read_text().split()[0])
        os.kill(postmaster, signal.SIGKILL)
        before = len(acked)

        def restarted() -> bool:
            pid_file = pgdata / "postmaster.pid"
            try:
                pid = int(pid_file.read_text().split()[0])
            except (OSError, ValueError, IndexError):
                return False
            return pid != postmaster and alive(pid) and len(acked) >= before + 20

        wait_for(restarted, timeout=60, interval=0.2, what="PostgreSQL restarted, ingest resumed")
        stop_threads(stop, threads)
        # the outage was seen, and answered only with 503 / UNAVAILABLE
        assert 503 in http_statuses or grpc.StatusCode.UNAVAILABLE in grpc_codes
        assert http_statuses <= {200, 503}, http_statuses
        assert grpc_codes <= {grpc.StatusCode.OK, grpc.StatusCode.UNAVAILABLE}, grpc_codes
        assert not dropped, dropped[:3]
        with httpx.Client(timeout=30) as c:
            wait_for(lambda: c.get(f"{server.http}/readyz").status_code == 200, timeout=30,
                     what="ready")
            stored = {t["trace_id"] for t in get_json(
                c, f"{server.http}/api/v1/traces", project=project, limit=1000)["items"]}
            missing = [tid for tid in acked if tid not in stored]
            # traces are listed once the derivation worker summarized them: wait for it
            if missing:
                wait_for(lambda: all(
                    c.get(f"{server.http}/api/v1/traces/{tid}",
                          params={"project": project}).status_code == 200 for tid in missing),
                    timeout=30, what="every acknowledged span stored")
            tid = send_trace(c, server, project)
            final_trajectory(c, server.http, project, tid)
        ingest, derivation = workers(server)
        assert len(ingest) == 2 and derivation
        assert "embedded PostgreSQL died" in server.log_path.read_text()
    finally:
        stop_threads(stop, threads)
        server.stop()


# ---------------------------------------------------------------------------- shutdown

def test_shutdown_cuts_off_a_slow_body_after_the_timeout(database: TestDatabase,
                                                         tmp_path: Path) -> None:
    """SIGTERM while a client sends its body at a few bytes a second: trajhub exits 0 after
    TRAJHUB_SHUTDOWN_TIMEOUT, and the unfinished request never gets a 200."""
    server = ServerProcess.start(database.url, tmp_path,
                                 extra_env={"TRAJHUB_SHUTDOWN_TIMEOUT": "2"})
    received = bytearray()
    with socket.create_connection(("127.0.0.1", server.http_port)) as slow:
        slow.sendall(b"POST /v1/traces HTTP/1.1\r\nHost: x\r\n"
                     b"Content-Type: application/x-protobuf\r\nContent-Length: 100000\r\n\r\n")
        stop = threading.Event()

        def trickle() -> None:
            while not stop.is_set():
                try:
                    slow.send(b"\x0a")
                except OSError:
                    return
                time.sleep(0.2)

        sender = threading.Thread(target=trickle)
        sender.start()
        time.sleep(0.5)
        server.process.send_signal(signal.SIGTERM)
        try:
            assert server.process.wait(timeout=30) == 0
        finally:
            stop.set()
            sender.join()
        slow.settimeout(2)
        try:
            while chunk := slow.recv(65536):
                received += chunk
        except OSError:
            pass
    assert b" 200 " not in bytes(received[:20])
    server.stop()
