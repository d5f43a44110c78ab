"""One-shot administrative commands run from the CLI against the database."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import asyncpg

from trajhub.normalizers import NORMALIZER_VERSION
from trajhub.service.api.params import time_ns
from trajhub.service.cli.common import CliError
from trajhub.service.config import Settings
from trajhub.storage import compression, compression_dictionaries, derivation_store
from trajhub.storage.database import connect
from trajhub.storage.embedded import EmbeddedPostgres
from trajhub.storage.migrate import migrate


def database_label(settings: Settings) -> str:
    """Which database a command works on, without the password: `PostgreSQL database 'db' on
    host:5432` or `the embedded PostgreSQL in /data/dir`."""
    if not settings.database_url:
        return f"the embedded PostgreSQL in {settings.data_dir}"
    url = urlsplit(settings.database_url)
    # a Unix socket directory comes as ?host=/path, with no host in the netloc
    host = url.hostname or parse_qs(url.query).get("host", ["localhost"])[0]
    port = f":{url.port}" if url.port else ""
    database = url.path.lstrip("/") or url.username or "postgres"
    return f"PostgreSQL database {database!r} on {host}{port}"


@asynccontextmanager
async def database(settings: Settings, purpose: str) -> AsyncIterator[asyncpg.Connection]:
    """A migrated connection to the server's database (the embedded one started for the
    command, and stopped after it); CliError when there is none, naming `purpose`."""
    if not settings.database_url and not (Path(settings.data_dir) / "pgdata").is_dir():
        raise CliError(f"no embedded PostgreSQL in {settings.data_dir}: nothing to {purpose} "
                       "(pass the server's --data-dir or --database-url)")
    embedded = None if settings.database_url else EmbeddedPostgres(Path(settings.data_dir))
    url = settings.database_url or (embedded.url if embedded else "")
    try:
        conn = await connect(url, timeout=10)
    except (OSError, asyncpg.PostgresError, TimeoutError) as exc:
        if embedded is not None:
            embedded.stop()
        raise CliError(f"cannot connect to {database_label(settings)}: {exc}") from None
    # what it reads may be compressed with the store's dictionaries
    compression.set_loader(compression_dictionaries.loader(url))
    try:
        await migrate(conn)
        yield conn
    finally:
        await conn.close()
        if embedded is not None:
            embedded.stop()


async def rederive(settings: Settings, project: str | None, since: str | None,
                   outdated: bool) -> int:
    try:
        since_ns = time_ns(since, "--since")
    except ValueError as exc:
        raise CliError(str(exc)) from None
    async with database(settings, "re-derive") as conn:
        return await derivation_store.queue_rederive(
            conn, project, since_ns,
            NORMALIZER_VERSION if outdated else None)
