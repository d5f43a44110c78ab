"""Reads of a trajectory's revision history: the superseded revisions the trigger of migration
0063 keeps, and the current one, which is the trajectory row itself."""

from __future__ import annotations

import asyncpg

from trajhub.storage.database import Connection
from trajhub.storage.sql import in_trace_partition

_COLUMNS = ("revision, status, derived_at, normalizer_version, step_count, input_tokens, "
            "output_tokens, derivation_error")


async def revisions(conn: Connection, project: str, trace_id: str
                    ) -> list[asyncpg.Record]:
    """Newest first; empty when the project has no trajectory for the trace."""
    where = f"project = $1 AND trace_id = $2 AND {in_trace_partition()}"
    return await conn.fetch(
        f"SELECT {_COLUMNS} FROM trajectories WHERE {where} "
        f"UNION ALL SELECT {_COLUMNS} FROM trajectory_revisions WHERE {where} "
        "ORDER BY revision DESC", project, trace_id)
