"""Files uploaded by the cozeloop SDKs (`POST /v1/loop/files/upload`), keyed by the storage key
their spans' `object_storage` names."""

from __future__ import annotations

from trajhub.storage.database import Connection


async def put(conn: Connection, project: str, key: str, content: bytes) -> None:
    await conn.execute(
        """INSERT INTO files (project, key, content) VALUES ($1, $2, $3)
           ON CONFLICT (project, key) DO UPDATE SET content = EXCLUDED.content""",
        project, key, content)


async def get(conn: Connection, project: str, key: str) -> bytes | None:
    content: bytes | None = await conn.fetchval(
        "SELECT content FROM files WHERE project = $1 AND key = $2", project, key)
    return content
