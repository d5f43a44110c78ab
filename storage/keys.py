"""API keys: create, list, revoke, and find the key a request presents.

A key reads `thk_<key_id>_<secret>`: `key_id` (12 hex digits) is public and names the key in
listings; `secret` carries 256 random bits. Only the SHA-256 digest of the whole key is stored,
so the table never holds a usable key; a presented key is looked up by its id and its digest
compared in constant time (`hmac.compare_digest`).
"""

from __future__ import annotations

import hashlib
import hmac
import re
import secrets
from dataclasses import dataclass
from datetime import datetime

from trajhub.storage.database import Connection
from trajhub.storage.rows import Row

PREFIX = "thk_"
SCOPES = ("ingest", "read", "admin", "metrics")

_KEY = re.compile(r"thk_([0-9a-f]{12})_([A-Za-z0-9_-]{43})")


@dataclass(frozen=True)
class KeyRow(Row):
    """A stored key, without anything that would let one use it."""

    key_id: str
    project: str
    scope: str
    name: str
    created_at: datetime
    revoked_at: datetime | None


def digest(key: str) -> bytes:
    return hashlib.sha256(key.encode()).digest()


def key_id_of(key: str) -> str | None:
    """The public id of a well-formed key, else None (then no row can match)."""
    match = _KEY.fullmatch(key)
    return match.group(1) if match else None


def new_key() -> tuple[str, str]:
    """(key_id, key): a fresh key and its public id."""
    key_id = secrets.token_hex(6)
    return key_id, f"{PREFIX}{key_id}_{secrets.token_urlsafe(32)}"


async def create(conn: Connection, project: str, scope: str, name: str = ""
                 ) -> tuple[KeyRow, str]:
    """Store a new key; returns its row and the key itself (never stored, shown once)."""
    while True:
        key_id, key = new_key()
        record = await conn.fetchrow(
            f"INSERT INTO api_keys (key_id, project, scope, name, digest) "
            f"VALUES ($1, $2, $3, $4, $5) ON CONFLICT (key_id) DO NOTHING "
            f"RETURNING {KeyRow.columns()}", key_id, project, scope, name, digest(key))
        if record is not None:  # else a 48-bit id collided: draw again
            return KeyRow.from_record(record), key


async def list_keys(conn: Connection, project: str | None) -> list[KeyRow]:
    """The keys of `project` (of every project when None), oldest first, revoked ones too."""
    return KeyRow.from_records(await conn.fetch(
        f"SELECT {KeyRow.columns()} FROM api_keys WHERE $1::text IS NULL OR project = $1 "
        "ORDER BY created_at, key_id", project))


async def revoke(conn: Connection, key_id: str, project: str | None) -> KeyRow | None:
    """Revoke the key (of `project`, when given); None when there is no such key. Revoking a
    revoked key keeps its first revocation time."""
    # the time as a value: Citus takes no now() in a COALESCE of an UPDATE of a reference table
    record = await conn.fetchrow(
        f"UPDATE api_keys SET revoked_at = coalesce(revoked_at, $3::timestamptz) "
        f"WHERE key_id = $1 AND ($2::text IS NULL OR project = $2) "
        f"RETURNING {KeyRow.columns()}", key_id, project, await conn.fetchval("SELECT now()"))
    return KeyRow.from_record(record) if record is not None else None


async def find(conn: Connection, key: str) -> KeyRow | None:
    """The row of the key presented, revoked or not; None for a key that was never issued."""
    key_id = key_id_of(key)
    if key_id is None:
        return None
    record = await conn.fetchrow(
        f"SELECT {KeyRow.columns()}, digest FROM api_keys WHERE key_id = $1", key_id)
    if record is None or not hmac.compare_digest(bytes(record["digest"]), digest(key)):
        return None
    return KeyRow(**{name: record[name] for name in KeyRow.__dataclass_fields__})
