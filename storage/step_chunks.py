"""Reads of a trajectory in pages (migration 0061, normalizers/pages.py): its row, and either its
head and the chunks a page needs (a large trajectory) or its whole document (any other).

A large trajectory's chunks are numbered: -1 its playback order, 0 its head, k ≥ 1 its steps
(k−1)·CHUNK_STEPS … k·CHUNK_STEPS − 1."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace
from typing import Any

import orjson

from trajhub.storage.database import Connection
from trajhub.storage.sql import in_trace_partition
from trajhub.storage.stored_documents import DOCUMENT, HAS_DOCUMENT, unpack


@dataclass(frozen=True)
class PagedRead:
    status: str
    revision: int
    normalizer_version: str
    derivation_error: str | None
    #: false: the derivation failed (`derivation_error` says why); nothing else is read
    derived: bool
    #: a large trajectory's head (normalizers/pages.py), else None
    head: dict[str, Any] | None = None
    #: and its playback order, when asked for
    order: dict[str, Any] | None = None
    #: the chunks read, by chunk number (0 holds the first CHUNK_STEPS steps)
    chunks: dict[int, list[Any]] = field(default_factory=dict)
    #: the whole document, when the trajectory is not stored in chunks
    document: dict[str, Any] | None = None
    #: with `raw`: the chunks read as stored (compressed; `loads` reads one), by chunk number
    stored: dict[int, bytes] = field(default_factory=dict)


def loads(stored: bytes) -> Any:
    """A chunk's (or the document's) content, from its stored bytes."""
    return orjson.loads(unpack(stored) or "null")


ORDER, HEAD = -1, 0


async def read(conn: Connection, project: str, trace_id: str,
               wanted: Callable[[dict[str, Any], dict[str, Any] | None], Iterable[int]],
               order: bool = False, raw: bool = False) -> PagedRead | None:
    """The trajectory as of one snapshot: its head (and its playback order with `order`) and
    the step chunks `wanted(head, order)` names (left compressed with `raw`: to read one at a
    time), or its document when it has no chunks. None: no trajectory of this trace."""
    async with conn.transaction(isolation="repeatable_read", readonly=True):
        rows = await conn.fetch(
            f"SELECT t.status, t.revision, t.normalizer_version, t.derivation_error, "
            f"{HAS_DOCUMENT} AS derived, c.chunk, c.body FROM trajectories t "
            "LEFT JOIN trajectory_chunks c ON c.project = t.project "
            "AND c.trace_id = t.trace_id AND c.chunk = ANY($3::integer[]) "
            f"WHERE t.project = $1 AND t.trace_id = $2 AND {in_trace_partition('t.')}",
            project, trace_id, [HEAD, ORDER] if order else [HEAD])
        if not rows:
            return None
        row = rows[0]
        base = PagedRead(row["status"], int(row["revision"]), row["normalizer_version"],
                         row["derivation_error"], bool(row["derived"]))
        if not base.derived:
            return base
        bodies = {r["chunk"]: r["body"] for r in rows if r["chunk"] is not None}
        if HEAD not in bodies:
            document = await conn.fetchval(
                f"SELECT {DOCUMENT} FROM trajectories WHERE project = $1 AND trace_id = $2 "
                f"AND {in_trace_partition()}", project, trace_id)
            return replace(base, document=loads(document))
        head = loads(bodies[HEAD])
        playback = loads(bodies[ORDER]) if order else None
        numbers = sorted(set(wanted(head, playback)))
        chunk_rows = await conn.fetch(
            "SELECT chunk, body FROM trajectory_chunks WHERE project = $1 AND trace_id = $2 "
            "AND chunk = ANY($3::integer[])", project, trace_id, [n + 1 for n in numbers])
    if raw:
        return replace(base, head=head, order=playback,
                       stored={int(r["chunk"]) - 1: r["body"] for r in chunk_rows})
    chunks = {int(r["chunk"]) - 1: loads(r["body"]) for r in chunk_rows}
    return replace(base, head=head, order=playback, chunks=chunks)
