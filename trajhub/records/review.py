"""Review by people: review queues and their items, declared once
(`trajhub.records`) for the `review_queues` and `review_items` tables (migration 0060), the REST
API (`/api/v1/review-queues`), the Python client and `trajhub review`.

A queue belongs to a project. It has a name, a description, and the score names reviewers must
give (each a score config's name: trajhub.records.scores, ScoreConfig). Its items are
trajectories (by trace id), added by hand, by the trajectory list's filter, or by an online
rule's failures (storage/review.py, `add_items`).

An item is `pending` until a reviewer completes it (`done`) or skips it (`skipped`). A pending
item a reviewer took with `next` is held by them (`reviewer`) until `lease_until_time`: no other
reviewer is given it meanwhile. The queue's progress counts its items by state; `in_review` are
the pending items held now.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import Field

from trajhub.records import Cli, Example, Record, Stored, computed, json_column
from trajhub.records.times import Created, written_ns
from trajhub.records.trajectories import TRACE_ID

#: a queue's name: as a score's (letters, digits and `_.:-`), so it reads well in a path
NAME_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9_.:-]*$"
NAME_MAX = 100
DESCRIPTION_MAX = 10_000
ITEM_STATES = ("pending", "done", "skipped")
#: how long `next` holds an item for its reviewer unless told otherwise, and the bounds
LEASE_SECONDS = 600
LEASE_MIN, LEASE_MAX = 30, 3600

# the progress of a queue: its items counted by state (over the queue's row `q`)
_NOW_NS = "(extract(epoch FROM clock_timestamp()) * 1000000)::bigint * 1000"


def _count(condition: str) -> Stored:
    return computed(
        f"(SELECT count(*) FROM review_items i WHERE i.queue_id = q.id AND {condition})")


class ReviewQueue(Record):
    """A review queue: trajectories for people to review, and the scores they must give
    each."""

    name: Annotated[str, Stored(written_by="key"), Cli("NAME"), Example("support-triage")] = Field(
        description="the queue's name (unique in the project)")
    description: Annotated[
        str,
        Cli("DESCRIPTION", "clip", order=3),
        Example("check the refund answers"),
    ] = Field(default="", description="what reviewers look for")
    score_names: Annotated[list[str], Cli("SCORES", order=1), Example(["correctness"])] = Field(
        default_factory=list, description="the scores a reviewer must give each item (each a "
        "score config's name: GET /api/v1/score-configs)")
    total: Annotated[
        int,
        _count("true"),
        Cli("TOTAL", right=True, order=2),
        Example(3),
    ] = Field(default=0, description="how many items it holds")
    done: Annotated[
        int,
        _count("i.status = 'done'"),
        Cli("DONE", right=True, order=2),
        Example(1),
    ] = Field(default=0, description="items reviewed (completed)")
    skipped: Annotated[
        int,
        _count("i.status = 'skipped'"),
        Cli("SKIPPED", right=True, order=2),
        Example(0),
    ] = Field(default=0, description="items a reviewer skipped")
    in_review: Annotated[
        int,
        _count(f"i.status = 'pending' AND i.lease_until_ns > {_NOW_NS}"),
        Cli("IN REVIEW", right=True, order=2),
        Example(1),
    ] = Field(default=0, description="pending items a reviewer holds now")
    pending: Annotated[
        int,
        _count("i.status = 'pending'"),
        Cli("PENDING", right=True, order=2),
        Example(2),
    ] = Field(default=0, description="items not reviewed yet (those in review included)")
    created_time: Created = Field(default="", description="RFC 3339: when it was created")


class ReviewItem(Record):
    """A trajectory in a review queue, and its review."""

    trace_id: Annotated[str, Stored(written_by="key"), Cli("TRACE"), Example(TRACE_ID)] = Field(
        description="the trajectory to review")
    id: Annotated[int, Stored(written_by="database"), Cli("ID", right=True), Example(7)] = Field(
        default=0, description="the item's id in the queue (for completing or skipping it)")
    status: Annotated[
        Literal["pending", "done", "skipped"],
        Cli("STATUS"),
        Example("pending"),
    ] = Field(default="pending", description="pending (not reviewed yet), done (completed) or "
              "skipped")
    reviewer: Annotated[str | None, Cli("REVIEWER"), Example("alice")] = Field(
        default=None, description="who holds or held it: the API key's name (the given `author` "
        "when the server runs without keys)")
    lease_until_time: Annotated[
        str | None,
        Stored(column="lease_until_ns", convert="time", stored_type=int | None),
        Example("2026-11-22T10:10:00Z"),
    ] = Field(default=None, description="RFC 3339: a pending item is held by `reviewer` until "
              "then (null: nobody took it yet)")
    comment: Annotated[
        str | None,
        Cli("COMMENT", "clip", order=2),
        Example("cites the wrong policy"),
    ] = Field(default=None, description="the reviewer's comment")
    expectations: Annotated[dict[str, Any] | None, json_column("expectations")] = Field(
        default=None, description="the expected behaviour as the reviewer corrected it (a "
        "dataset item's expectations); null when not corrected")
    added_time: Annotated[
        str,
        written_ns("added_ns"),
        Example("2026-11-22T10:00:00Z"),
    ] = Field(default="", description="RFC 3339: when it was added")
    completed_time: Annotated[
        str | None,
        Stored(column="completed_ns", convert="time", stored_type=int | None),
        Cli("FINISHED", "when", order=1),
    ] = Field(default=None, description="RFC 3339: when it was completed or skipped")


__all__ = ["ITEM_STATES", "LEASE_SECONDS", "NAME_PATTERN", "ReviewItem", "ReviewQueue"]
