"""A private PostgreSQL server in trajhub's data directory, for `trajhub serve` without a
database URL and for the test suite (the `pgserver` package ships the binaries)."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

log = logging.getLogger("trajhub.embedded")

#: Settings for an ingest-heavy server on a small machine, applied once to a new data
#: directory. At ~100 MB/s of WAL the defaults spend their time creating and zero-filling WAL
#: segments (wait event WALInitWrite) and fighting over the 4 MB WAL buffer (LWLock WALWrite).
#: Durability is untouched: fsync, synchronous_commit and full_page_writes stay on.
TUNING = {
    "shared_buffers": "512MB",
    "wal_buffers": "64MB",
    "max_wal_size": "4GB",
    "min_wal_size": "1GB",
    "wal_init_zero": "off",
    "checkpoint_timeout": "15min",
    "checkpoint_completion_target": "0.9",
}


class EmbeddedPostgres:
    """Starts (or reuses) the server whose data lives in `data_dir/pgdata`; `stop()` stops it
    when this was the last process using it."""

    def __init__(self, data_dir: Path) -> None:
        self.pgdata = data_dir / "pgdata"
        self.pgdata.mkdir(parents=True, exist_ok=True)
        self._server = self._start()
        if not self._tuned():
            # ALTER SYSTEM persists in the data directory; shared_buffers and wal_buffers take
            # effect at the next start, so a new data directory pays one restart, once.
            for name, value in TUNING.items():
                self._server.psql(f"ALTER SYSTEM SET {name} = '{value}'")
            self._server.cleanup()
            self._server = self._start()
        log.info("embedded PostgreSQL running in %s", self.pgdata)

    def _start(self) -> Any:
        import pgserver  # imported here: only the embedded mode needs it

        logging.getLogger("pgserver").setLevel(logging.WARNING)
        return pgserver.get_server(self.pgdata, cleanup_mode="stop")

    def _tuned(self) -> bool:
        shown = str(self._server.psql("SHOW wal_buffers"))
        return TUNING["wal_buffers"] in shown

    @property
    def url(self) -> str:
        return str(self._server.get_uri())

    def stop(self) -> None:
        self._server.cleanup()
