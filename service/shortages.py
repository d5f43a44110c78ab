"""What the database server lacks (a full disk, memory, connections), as this process last saw
it: `/readyz` says so, `/metrics` counts it (`trajhub_database_shortages`), and the log says it
in words, once per kind and minute rather than once per failed request. A write that succeeds
again clears it; so does a quiet spell (`SEEN_FOR_SECONDS`), since a server that reported not
ready for good would get no traffic to show that space came back."""

from __future__ import annotations

import logging
import time

from trajhub.service import metrics

log = logging.getLogger("trajhub.database")

#: how long a shortage is reported after the last failure that showed it
SEEN_FOR_SECONDS = 30.0
#: how often the log repeats one kind of shortage while it lasts
LOG_EVERY_SECONDS = 60.0


class Shortages:
    def __init__(self) -> None:
        self.kind: str | None = None
        self.last_seen = 0.0
        self.logged = 0.0

    def seen(self, kind: str, where: str, detail: str) -> None:
        """A failure in `where` (ingest, api, ...) showed the database lacks `kind`."""
        now = time.monotonic()
        metrics.DATABASE_SHORTAGES.labels(kind.replace(" ", "_")).inc()
        if kind != self.kind or now - self.logged >= LOG_EVERY_SECONDS:
            log.error("database %s: writes fail until it has room again (%s: %s)",
                      kind, where, detail)
            self.logged = now
        self.kind, self.last_seen = kind, now

    def wrote(self) -> None:
        """A write succeeded: whatever was lacking is there again."""
        if self.kind is not None:
            log.warning("database writes succeed again after a shortage (%s)", self.kind)
            self.kind = None

    def current(self) -> str | None:
        """What `/readyz` says while a shortage lasts; None when there is none."""
        if self.kind is None:
            return None
        age = time.monotonic() - self.last_seen
        if age >= SEEN_FOR_SECONDS:
            return None
        return f"database {self.kind}: writes failed {age:.0f} s ago"


#: the main process's (the receivers and the REST API report here)
SHORTAGES = Shortages()
