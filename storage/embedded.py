"""A private PostgreSQL server in trajhub's data directory, for `trajhub serve` without a
database URL and for the test suite (the `pgserver` package ships the binaries)."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

log = logging.getLogger("trajhub.embedded")


class EmbeddedPostgres:
    """Starts (or reuses) the server whose data lives in `data_dir/pgdata`; `stop()` stops it
    when this was the last process using it."""

    def __init__(self, data_dir: Path) -> None:
        import pgserver  # imported here: only the embedded mode needs it

        self.pgdata = data_dir / "pgdata"
        self.pgdata.mkdir(parents=True, exist_ok=True)
        self._server: Any = pgserver.get_server(self.pgdata, cleanup_mode="stop")
        log.info("embedded PostgreSQL running in %s", self.pgdata)

    @property
    def url(self) -> str:
        return str(self._server.get_uri())

    def stop(self) -> None:
        self._server.cleanup()
