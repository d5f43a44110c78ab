"""Test helpers: start PostgreSQL and trajhub for real, and talk to them."""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import os
import re
import signal
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Awaitable, Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import asyncpg
import httpx

T = TypeVar("T")


def run(coro: Any) -> Any:
    return asyncio.run(coro)


@dataclass
class TestDatabase:
    """A database for one test session: a fresh database on the server named by
    TRAJHUB_TEST_DATABASE_URL (dropped at the end), else an embedded PostgreSQL.

    With `shared_dir` (one test run split over pytest-xdist workers) the embedded PostgreSQL in
    `shared_dir` serves every worker, and each worker gets a fresh database of its own on it,
    as with TRAJHUB_TEST_DATABASE_URL; the last worker to stop it stops the server."""

    url: str
    admin_url: str = ""
    name: str = ""
    embedded: Any = None

    __test__ = False

    @classmethod
    def start(cls, external_url: str, tmp: Path, shared_dir: Path | None = None
              ) -> TestDatabase:
        if not external_url:
            from trajhub.storage.embedded import EmbeddedPostgres

            if shared_dir is None:
                embedded = EmbeddedPostgres(tmp)
                return cls(url=embedded.url, embedded=embedded)
            shared_dir.mkdir(parents=True, exist_ok=True)
            # one worker at a time creates (and tunes, which restarts) the shared server
            with open(shared_dir / "start.lock", "w") as lock:
                fcntl.flock(lock, fcntl.LOCK_EX)
                embedded = EmbeddedPostgres(shared_dir)
            db = cls.fresh(embedded.url)
            db.embedded = embedded
            return db
        return cls.fresh(external_url)

    @classmethod
    def fresh(cls, server_url: str) -> TestDatabase:
        """A new, empty database on the PostgreSQL server at `server_url`."""
        name = "trajhub_test_" + uuid.uuid4().hex[:10]

        async def create() -> None:
            conn = await asyncpg.connect(server_url)
            try:
                await conn.execute(f'CREATE DATABASE "{name}"')
            finally:
                await conn.close()

        run(create())
        return cls(url=database_url(server_url, name), admin_url=server_url, name=name)

    def stop(self) -> None:
        if self.name:
            async def drop() -> None:
                conn = await asyncpg.connect(self.admin_url)
                try:
                    await conn.execute(f'DROP DATABASE IF EXISTS "{self.name}" WITH (FORCE)')
                finally:
                    await conn.close()

            run(drop())
        if self.embedded is not None:
            self.embedded.stop()


def rolled_back(database: TestDatabase,
                case: Callable[[asyncpg.Connection], Awaitable[None]]) -> None:
    """Run `case` on a connection of its own, inside a transaction that is then rolled back."""

    async def main() -> None:
        conn = await asyncpg.connect(database.url)
        try:
            tx = conn.transaction()
            await tx.start()
            try:
                await case(conn)
            finally:
                await tx.rollback()
        finally:
            await conn.close()

    asyncio.run(main())


class CapturedQuery:
    """Stands in for a connection to keep the SQL (and its arguments) of each statement a
    storage read sends: every statement runs on `conn`, so a read made of several (the session
    list's) gets real answers. `statements` holds them all; `sql` and `args` are the last. The
    tests and the benchmarks that EXPLAIN a read's statements use it."""

    def __init__(self, conn: Any) -> None:
        self.conn = conn
        self.statements: list[tuple[str, tuple[Any, ...]]] = []

    @property
    def sql(self) -> str:
        return self.statements[-1][0]

    @property
    def args(self) -> tuple[Any, ...]:
        return self.statements[-1][1]

    async def fetchval(self, sql: str, *args: Any) -> Any:
        self.statements.append((sql, args))
        return await self.conn.fetchval(sql, *args)

    async def fetch(self, sql: str, *args: Any) -> list[Any]:
        self.statements.append((sql, args))
        return list(await self.conn.fetch(sql, *args))

    async def fetchrow(self, sql: str, *args: Any) -> Any:
        self.statements.append((sql, args))
        return await self.conn.fetchrow(sql, *args)


def fetch_value(url: str, query: str, *args: Any) -> Any:
    """The first value `query` returns, on a connection of its own to the database at `url`."""
    return run(_fetch(url, "fetchval", query, args))


def fetch_rows(url: str, query: str, *args: Any) -> list[asyncpg.Record]:
    """The rows `query` returns, on a connection of its own to the database at `url`."""
    return list(run(_fetch(url, "fetch", query, args)))


async def _fetch(url: str, method: str, query: str, args: tuple[Any, ...]) -> Any:
    conn = await asyncpg.connect(url)
    try:
        return await getattr(conn, method)(query, *args)
    finally:
        await conn.close()


async def lock_waited(watch: asyncpg.Connection, pid: int, what: str) -> None:
    """Until the backend `pid` waits for a lock (a condition, not a time); AssertionError
    naming `what` when it never does."""
    for _ in range(600):
        if await watch.fetchval("SELECT count(*) FROM pg_locks WHERE pid = $1 AND NOT granted",
                                pid):
            return
        await asyncio.sleep(0.05)
    raise AssertionError(f"{what} never waited")


@contextlib.contextmanager
def separate_database(db: TestDatabase) -> Iterator[str]:
    """The URL of a fresh database on the session's PostgreSQL server, dropped afterwards: for a
    server of its own whose workers must not share the session database's change queue, or
    whose retention must not delete the other tests' data."""
    name = "trajhub_sep_" + uuid.uuid4().hex[:10]

    async def execute(statement: str) -> None:
        conn = await asyncpg.connect(db.url)
        try:
            await conn.execute(statement)
        finally:
            await conn.close()

    run(execute(f'CREATE DATABASE "{name}"'))
    try:
        yield database_url(db.url, name)
    finally:
        run(execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))


def on_separate_database(db: TestDatabase,
                         check: Callable[[asyncpg.Connection], Awaitable[None]],
                         **connect: Any) -> None:
    """Runs `check` on a connection (asyncpg.connect's `connect` options) to a fresh database
    of its own (separate_database), closed afterwards: for a test that builds a store from its
    migrations, or changes one, where the other tests must not see it."""
    async def connected(url: str) -> None:
        conn = await asyncpg.connect(url, **connect)
        try:
            await check(conn)
        finally:
            await conn.close()

    with separate_database(db) as url:
        run(connected(url))


@contextlib.contextmanager
def server_of_its_own(db: TestDatabase, workdir: Path, settle_seconds: float,
                      env: dict[str, str]) -> Iterator[tuple[ServerProcess, str]]:
    """A server with `env`'s settings on a database of its own (separate_database's reasons),
    and that database's URL; stopped afterwards."""
    with separate_database(db) as url:
        proc = ServerProcess.start(url, workdir, settle_seconds=settle_seconds, extra_env=env)
        yield proc, url
        proc.stop()


@contextlib.contextmanager
def partitioned_server(db: TestDatabase, workdir: Path, width_seconds: float,
                       **env: str) -> Iterator[tuple[ServerProcess, str]]:
    """A server with a database of its own (its URL too) and time partitions `width_seconds`
    wide, retention looking every half second: a test crosses a partition boundary by waiting
    a few seconds, and sees retention act soon after. `env` adds settings."""
    with server_of_its_own(db, workdir, 0.2,
                           {"TRAJHUB_PARTITION_MINUTES": str(width_seconds / 60),
                            "TRAJHUB_RETENTION_INTERVAL_SECONDS": "0.5", **env}) as server:
        yield server


def database_url(url: str, name: str) -> str:
    """`url` with its database replaced by `name` (query parameters, e.g. a socket dir, kept)."""
    base, _, query = url.partition("?")
    return base.rsplit("/", 1)[0] + "/" + name + (("?" + query) if query else "")


_READY = re.compile(r"trajhub ready http_port=(\d+) grpc_port=(\d+)")


def ready_ports(line: str) -> tuple[int, int] | None:
    """(HTTP port, gRPC port) from the line `trajhub serve` prints once it listens; else None."""
    match = _READY.search(line)
    return (int(match.group(1)), int(match.group(2))) if match else None


class LoopbackPorts:
    """The addresses of a `trajhub serve` on this machine, by the ports it listens on (the
    benchmarks' servers are these too: bench/_common.py)."""

    http_port: int
    grpc_port: int

    @property
    def http(self) -> str:
        return f"http://127.0.0.1:{self.http_port}"

    @property
    def grpc(self) -> str:
        return f"127.0.0.1:{self.grpc_port}"


@dataclass
class ServerProcess(LoopbackPorts):
    process: subprocess.Popen[str]
    http_port: int
    grpc_port: int
    log_path: Path
    exit_code: int | None = field(default=None)

    @classmethod
    def start(cls, database_url: str, workdir: Path, settle_seconds: float = 0.5,
              extra_env: dict[str, str] | None = None, timeout: float = 60) -> ServerProcess:
        # 2 ingest workers, not the default 4: each is a process importing the whole service,
        # and the suite starts some 30 servers; the tests that count workers set their own
        env = {"TRAJHUB_INGEST_WORKERS": "2", **os.environ, "TRAJHUB_DATABASE_URL": database_url,
               "TRAJHUB_HTTP_PORT": "0", "TRAJHUB_GRPC_PORT": "0",
               "TRAJHUB_DATA_DIR": str(workdir / "data"),
               "TRAJHUB_SETTLE_SECONDS": str(settle_seconds),
               "TRAJHUB_DERIVATION_INTERVAL_SECONDS": "0.05",
               **(extra_env or {})}
        log_path = workdir / "server.log"
        log = open(log_path, "w")  # noqa: SIM115 - the child writes to it for its whole life
        process = subprocess.Popen(
            [sys.executable, "-m", "trajhub", "serve"], env=env, stdout=subprocess.PIPE,
            stderr=log, text=True, cwd=Path(__file__).parent.parent)
        assert process.stdout is not None
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            line = process.stdout.readline()
            if not line:
                break
            ports = ready_ports(line)
            if ports:
                return cls(process, *ports, log_path)
        process.kill()
        raise RuntimeError("trajhub did not start:\n" + log_path.read_text())

    def stop(self, sig: int = signal.SIGTERM, timeout: float = 60) -> int:
        self.exit_code = stop_process(self.process, sig, timeout)
        return self.exit_code


def stop_process(process: subprocess.Popen[Any], sig: int = signal.SIGTERM, timeout: float = 60
                 ) -> int:
    """Send `sig` to `process` unless it has exited, wait up to `timeout` seconds, then kill it;
    its exit status. The benchmarks stop their servers with it too (bench/_common.py)."""
    if process.poll() is None:
        process.send_signal(sig)
        try:
            process.wait(timeout)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
    return process.returncode


def stop_threads(stop: threading.Event, threads: Iterable[threading.Thread]) -> None:
    """Set `stop` and wait for the threads that watch it (one never started is passed over)."""
    stop.set()
    for t in threads:
        if t.is_alive():
            t.join()


def proc_stat(pid: int) -> list[str] | None:
    """The fields of /proc/<pid>/stat after the command name (state is [0], ppid [1], nice [16],
    rss in pages [21]); None once the process is gone. The benchmarks read it too."""
    try:
        raw = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return raw[raw.rindex(")") + 2:].split()


def wait_for(probe: Callable[[], T | None], timeout: float = 20, interval: float = 0.05,
             what: str = "condition") -> T:
    """Poll until `probe` returns something truthy."""
    deadline = time.monotonic() + timeout
    while True:
        value = probe()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(interval)


def final_trajectories(base: str, project: str, trace_ids: Iterable[str]) -> None:
    """Wait until every one of the traces has its final trajectory."""
    with httpx.Client() as client:
        for trace_id in trace_ids:
            final_trajectory(client, base, project, trace_id)


def python_output(code: str, cwd: str | None = None) -> str:
    """What `python -c code` prints, in a process of its own (a fresh set of imported modules);
    fails the test, with the error output, when it exits with an error."""
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=cwd,
                          timeout=60)
    assert done.returncode == 0, done.stderr
    return done.stdout


def get_json(client: httpx.Client, url: str, **params: Any) -> Any:
    response = client.get(url, params=params)
    assert response.status_code == 200, response.text
    return response.json()


def final_trajectory(client: httpx.Client, base: str, project: str, trace_id: str,
                     timeout: float = 30) -> httpx.Response:
    """Wait until the trace's trajectory is final; returns the response."""
    def probe() -> httpx.Response | None:
        r = client.get(f"{base}/api/v1/trajectories/{trace_id}", params={"project": project})
        return r if r.status_code == 200 and r.headers.get("x-trajectory-status") == "final" \
            else None

    return wait_for(probe, timeout, what=f"final trajectory of {trace_id}")
