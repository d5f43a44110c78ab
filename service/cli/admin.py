"""One-shot administrative commands run from the CLI against the database."""

from __future__ import annotations

from pathlib import Path

import asyncpg

from trajhub.normalizers import NORMALIZER_VERSION
from trajhub.service.api.common import time_ns
from trajhub.service.config import Settings
from trajhub.storage import assembly_store
from trajhub.storage.embedded import EmbeddedPostgres
from trajhub.storage.migrate import migrate


async def rederive(settings: Settings, project: str | None, since: str | None,
                   outdated: bool) -> int:
    try:
        since_ns = time_ns(since, "--since")
    except ValueError as exc:
        raise SystemExit(f"trajhub: {exc}") from None
    embedded = None if settings.database_url else EmbeddedPostgres(Path(settings.data_dir))
    url = settings.database_url or (embedded.url if embedded else "")
    conn = await asyncpg.connect(url, timeout=10)
    try:
        await migrate(conn)
        return await assembly_store.queue_rederive(
            conn, project, since_ns,
            NORMALIZER_VERSION if outdated else None)
    finally:
        await conn.close()
        if embedded is not None:
            embedded.stop()
