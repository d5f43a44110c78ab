"""SQL of review queues and their items (migration 0060; the records are declared in
trajhub.records.review): create, list, delete a queue; add items (by trace id: `add_items`,
which the API's hand and filter additions use, and an online rule's failures may too); claim
the next item for a reviewer; complete or skip it."""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import ClassVar

import asyncpg

from trajhub.records.review import ReviewItem, ReviewQueue
from trajhub.storage.database import Connection
from trajhub.storage.rows import IdRow, RecordRow

#: now, as Unix ns (the clock of the statement, not of the transaction's start)
#: the time a claim or a finish is made, in Unix ns: taken in Python and passed as a value (Citus
#: runs no VOLATILE function, clock_timestamp() included, in an UPDATE of a reference table)
NOW_NS = "$4::bigint"


class QueueRow(RecordRow):
    """A stored queue with its progress, as trajhub.records.review declares it."""

    __slots__ = ()
    record = ReviewQueue
    extra: ClassVar[Mapping[str, str]] = {"queue_id": "q.id"}

    @property
    def queue_id(self) -> int:
        return int(self["queue_id"])

    @property
    def score_names(self) -> list[str]:
        return list(self["score_names"])


class ItemRow(IdRow):
    """A stored queue item, as trajhub.records.review declares it."""

    __slots__ = ()
    record = ReviewItem


class DuplicateQueue(Exception):
    """The project has a queue of that name."""


async def create_queue(conn: Connection, project: str, name: str, description: str,
                       score_names: Sequence[str]) -> QueueRow:
    try:
        await conn.execute(
            "INSERT INTO review_queues (project, name, description, score_names) "
            "VALUES ($1, $2, $3, $4::text[])", project, name, description, list(score_names))
    except asyncpg.UniqueViolationError:
        raise DuplicateQueue(name) from None
    found = await queue(conn, project, name)
    assert found is not None
    return found


async def queues(conn: Connection, project: str) -> list[QueueRow]:
    """The project's queues with their progress, by name."""
    return QueueRow.from_records(await conn.fetch(
        f"SELECT {QueueRow.columns('q')} FROM review_queues q WHERE q.project = $1 "
        "ORDER BY q.name", project))


async def queue(conn: Connection, project: str, name: str) -> QueueRow | None:
    return await QueueRow.fetch_one(
        conn, f"SELECT {QueueRow.columns('q')} FROM review_queues q "
        "WHERE q.project = $1 AND q.name = $2", project, name)


async def delete_queue(conn: Connection, project: str, name: str) -> bool:
    status = await conn.execute(
        "DELETE FROM review_queues WHERE project = $1 AND name = $2", project, name)
    return bool(status != "DELETE 0")


@dataclass
class Added:
    """What adding trajectories to a queue did."""

    added: list[str] = field(default_factory=list)
    already_queued: list[str] = field(default_factory=list)
    not_found: list[str] = field(default_factory=list)


async def add_items(conn: Connection, project: str, queue: str, trace_ids: Sequence[str]
                    ) -> Added:
    """Add the trajectories of these trace ids to the project's queue named `queue`, in order,
    each once: one the queue holds already, or the project has no trajectory for, is not
    added (the answer says which). KeyError when there is no such queue."""
    queue_id = await conn.fetchval(
        "SELECT id FROM review_queues WHERE project = $1 AND name = $2", project, queue)
    if queue_id is None:
        raise KeyError(queue)
    wanted = list(dict.fromkeys(trace_ids))
    known = {r["trace_id"] for r in await conn.fetch(
        "SELECT trace_id FROM trajectories WHERE project = $1 AND trace_id = ANY($2::text[])",
        project, wanted)}
    inserted = {r["trace_id"] for r in await conn.fetch(
        "INSERT INTO review_items (queue_id, project, trace_id) "
        "SELECT $1, $3, t FROM unnest($2::text[]) WITH ORDINALITY AS v(t, n) ORDER BY v.n "
        "ON CONFLICT (queue_id, trace_id) DO NOTHING RETURNING trace_id",
        queue_id, [t for t in wanted if t in known], project)}
    out = Added()
    for trace_id in wanted:
        if trace_id not in known:
            out.not_found.append(trace_id)
        elif trace_id in inserted:
            out.added.append(trace_id)
        else:
            out.already_queued.append(trace_id)
    return out


async def items(conn: Connection, queue_id: int, status: str | None, limit: int
                ) -> list[ItemRow]:
    """A queue's items in the order they were added (only those of `status` when given)."""
    return ItemRow.from_records(await conn.fetch(
        f"SELECT {ReviewItem.select_list()} FROM review_items WHERE queue_id = $1 "
        "AND ($2::text IS NULL OR status = $2) ORDER BY id LIMIT $3",
        queue_id, status, limit))


async def item(conn: Connection, queue_id: int, item_id: int) -> ItemRow | None:
    return await ItemRow.fetch_one(
        conn, f"SELECT {ReviewItem.select_list()} FROM review_items "
        "WHERE queue_id = $1 AND id = $2", queue_id, item_id)


# One statement: the pending item the reviewer holds already (its lease renewed), else the
# first pending item nobody holds (never taken, or its lease ran out). FOR UPDATE SKIP LOCKED
# passes over a row another reviewer's claim is taking at this moment, and the outer UPDATE
# re-checks that the row is still free (`_FREE`), so two reviewers never hold one item.
_FREE = f"(reviewer = $2 OR lease_until_ns IS NULL OR lease_until_ns <= {NOW_NS})"
_CLAIM = (
    f"UPDATE review_items SET reviewer = $2, lease_until_ns = {NOW_NS} + $3::bigint "
    "WHERE id = (SELECT id FROM review_items "
    f"WHERE queue_id = $1 AND status = 'pending' AND {_FREE} "
    # the reviewer's own held item first
    "ORDER BY (reviewer = $2 AND lease_until_ns > " + NOW_NS + ") IS TRUE DESC, id "
    "LIMIT 1 FOR UPDATE SKIP LOCKED) "
    f"AND status = 'pending' AND {_FREE} "
    f"RETURNING {ReviewItem.select_list()}")


async def claim_next(conn: Connection, queue_id: int, reviewer: str, lease_seconds: int
                     ) -> ItemRow | None:
    """The item the reviewer now holds for `lease_seconds`: the one they held (renewed), else
    the next free pending one; None when no pending item is free."""
    return await ItemRow.fetch_one(conn, _CLAIM, queue_id, reviewer, lease_seconds * 1_000_000_000,
                                   time.time_ns())


async def held_by(conn: Connection, queue_id: int, item_id: int, reviewer: str
                  ) -> ItemRow | None:
    """The item, locked for this transaction, if `reviewer` took it last and it is still
    pending: their lease keeps others off it, and once it has run out they may still finish
    it as long as nobody else has taken it (a claim sets `reviewer`, under the same lock)."""
    return await ItemRow.fetch_one(
        conn, f"SELECT {ReviewItem.select_list()} FROM review_items WHERE queue_id = $1 "
        "AND id = $2 AND status = 'pending' AND reviewer = $3 FOR UPDATE",
        queue_id, item_id, reviewer)


async def finish(conn: Connection, item_id: int, status: str, comment: str | None,
                 expectations: str | None) -> ItemRow:
    """Mark a held item done or skipped (its lease ends), with the reviewer's comment and
    corrected expectations (JSON text)."""
    row = await conn.fetchrow(
        f"UPDATE review_items SET status = $2, comment = $3, expectations = $4::jsonb, "
        f"lease_until_ns = NULL, completed_ns = $5::bigint WHERE id = $1 "
        f"RETURNING {ReviewItem.select_list()}", item_id, status, comment, expectations,
        time.time_ns())
    assert row is not None
    return ItemRow.from_record(row)


async def done_items(conn: Connection, queue_id: int) -> list[ItemRow]:
    """The completed items, in the order they were added."""
    return await items(conn, queue_id, "done", 1_000_000)
