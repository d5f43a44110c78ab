"""A private PostgreSQL server in trajhub's data directory, for `trajhub serve` without a
database URL and for the test suite (the `pgserver` package ships the binaries).

pgserver runs the server as a daemon shared by every process that opens the same data
directory; a handle file lists those processes, and the last one to close stops the server. A
process that was killed (kill -9) never removes itself, which would keep the server running
for good: `EmbeddedPostgres` removes dead processes from the list before it opens the server.
`ensure_running()` starts the server again when it died (crash recovery is PostgreSQL's own).
"""

from __future__ import annotations

import json
import logging
import os
from pathlib import Path
from typing import Any

log = logging.getLogger("trajhub.embedded")

#: Settings for an ingest-heavy server on a small machine, applied once to a data directory
#: that lacks them (a new one, or one tuned by an older version). At full ingest speed the
#: defaults spend their time creating and zero-filling WAL segments (wait event WALInitWrite)
#: and fighting over the default WAL buffer (LWLock WALWrite) (bench/README.md, "Decoding and
#: storing spans"). Durability is untouched: fsync, synchronous_commit and full_page_writes stay
#: on.
#: wal_compression: the first change to a page after a checkpoint writes the whole page to the
#: WAL (full_page_writes); on the random-keyed B-trees (span, trace and trajectory keys) those
#: images are a part of a pipeline run's WAL after a checkpoint, and pglz (the only method the
#: embedded build has) shrinks them (bench/README.md, "WAL").
TUNING = {
    "shared_buffers": "512MB",
    "wal_buffers": "64MB",
    "max_wal_size": "4GB",
    "min_wal_size": "1GB",
    "wal_init_zero": "off",
    "checkpoint_timeout": "15min",
    "checkpoint_completion_target": "0.9",
    "wal_compression": "pglz",
}


def ensure_runtime_dir() -> None:
    """pgserver keeps its inter-process lock file in the user's runtime directory
    (platformdirs' user_runtime_path, read when pgserver is imported). Where XDG_RUNTIME_DIR is
    unset (containers, CI, services without a login session) platformdirs falls back to
    /tmp/runtime-<uid> and warns about it at every start. Set the variable to that same
    directory, made private as the XDG spec wants, so the lock stays where every process
    (server, tests, older versions) looks for it, and nothing needs to warn."""
    if os.environ.get("XDG_RUNTIME_DIR"):
        return
    path = Path(f"/tmp/runtime-{os.getuid()}")
    path.mkdir(mode=0o700, exist_ok=True)
    if path.stat().st_uid == os.getuid() and path.stat().st_mode & 0o777 != 0o700:
        path.chmod(0o700)  # e.g. made by an older platformdirs fallback with mode 0755
    os.environ["XDG_RUNTIME_DIR"] = str(path)


class EmbeddedPostgres:
    """Starts (or reuses) the server whose data lives in `data_dir/pgdata`; `stop()` stops it
    when this was the last process using it."""

    def __init__(self, data_dir: Path) -> None:
        self.pgdata = data_dir / "pgdata"
        self.pgdata.mkdir(parents=True, exist_ok=True)
        self._server = self._start()
        untuned = self._untuned()
        if untuned:
            # ALTER SYSTEM persists in the data directory; shared_buffers and wal_buffers take
            # effect at the next start, so a new data directory pays one restart, once (and a
            # directory tuned by an older version, once per setting added since).
            for name in untuned:
                self._server.psql(f"ALTER SYSTEM SET {name} = '{TUNING[name]}'")
            self._server.cleanup()
            self._server = self._start()
        log.info("embedded PostgreSQL running in %s", self.pgdata)

    def _start(self) -> Any:
        ensure_runtime_dir()
        from pgserver.postgres_server import PostgresServer, get_server

        logging.getLogger("pgserver").setLevel(logging.WARNING)
        with PostgresServer._lock:
            self._prune_stale_handles()
        return get_server(self.pgdata, cleanup_mode="stop")

    def _prune_stale_handles(self) -> None:
        """Drop the processes that died without closing their handle from pgserver's list."""
        path = self.pgdata / ".handle_pids.json"
        try:
            pids = json.loads(path.read_text())
        except (OSError, ValueError):
            return
        if not isinstance(pids, list):
            return
        alive = [pid for pid in pids if isinstance(pid, int) and _alive(pid)]
        if alive != pids:
            log.warning("embedded PostgreSQL: dropping stale handle(s) of dead process(es) %s",
                        sorted(set(pids) - set(alive)))
            path.write_text(json.dumps(alive))

    def running(self) -> bool:
        """The server process is alive."""
        from pgserver.utils import PostmasterInfo

        info = PostmasterInfo.read_from_pgdata(self.pgdata)
        return info is not None and bool(info.is_running())

    def ensure_running(self) -> None:
        """Start the server again if it died (blocking: call it from a thread)."""
        from pgserver.postgres_server import PostgresServer

        with PostgresServer._lock:
            self._server.ensure_postgres_running()

    def _untuned(self) -> list[str]:
        """The settings of `TUNING` the data directory has no value for yet, read from the
        file ALTER SYSTEM writes (`name = 'value'` lines). A value set there otherwise, e.g. an
        operator's larger shared_buffers, is theirs and stays."""
        try:
            lines = (self.pgdata / "postgresql.auto.conf").read_text().splitlines()
        except OSError:
            lines = []
        written = {line.split("=", 1)[0].strip() for line in lines if "=" in line}
        return [name for name in TUNING if name not in written]

    @property
    def url(self) -> str:
        return str(self._server.get_uri())

    def stop(self) -> None:
        self._server.cleanup()


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # alive, another user's
        return True
    return True
