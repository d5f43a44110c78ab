"""What the request handlers share: settings, the database pool and the ingest workers."""

from __future__ import annotations

from dataclasses import dataclass

import asyncpg
from fastapi import Request

from trajhub.service.config import Settings
from trajhub.service.ingest.pool import IngestPool


@dataclass
class Runtime:
    settings: Settings
    db: asyncpg.Pool
    ingest: IngestPool


def runtime(request: Request) -> Runtime:
    """FastAPI dependency."""
    state: Runtime = request.app.state.runtime
    return state
