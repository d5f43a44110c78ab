"""Reads of a trajectory's revision history (kept by the triggers of migration 0010)."""

from __future__ import annotations

import asyncpg

from trajhub.storage.database import Connection
from trajhub.storage.sql import in_trace_partition


async def revisions(conn: Connection, project: str, trace_id: str
                    ) -> list[asyncpg.Record]:
    """Newest first; empty when the project has no trajectory for the trace."""
    return await conn.fetch(
        "SELECT revision, status, derived_at, normalizer_version, step_count, input_tokens, "
        "output_tokens, derivation_error FROM trajectory_revisions "
        f"WHERE project = $1 AND trace_id = $2 AND {in_trace_partition()} "
        "ORDER BY revision DESC", project, trace_id)
