"""Review by people: annotation queues and their items, declared once
(`trajhub.records`) for the `review_queues` and `review_items` tables (migration 0060), the REST
API (`/api/v1/review-queues`), the Python client and `trajhub review`.

A queue belongs to a project. It has a name, a description, and the score names reviewers must
give (each a score config's name: trajhub.records.scores, SCORE_CONFIG). Its items are
trajectories (by trace id), added by hand, by the trajectory list's filter, or by an online
rule's failures (storage/review.py, `add_items`).

An item is `pending` until a reviewer completes it (`done`) or skips it (`skipped`). A pending
item a reviewer took with `next` is held by them (`reviewer`) until `lease_until_time`: no other
reviewer is given it meanwhile. The queue's progress counts its items by state; `in_review` are
the pending items held now.
"""

from __future__ import annotations

from typing import Any, Literal

from trajhub.records import Cli, Field, Record
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


def _count(condition: str) -> str:
    return f"(SELECT count(*) FROM review_items i WHERE i.queue_id = q.id AND {condition})"


def _progress(name: str, description: str, condition: str, example: int, header: str
              ) -> Field:
    return Field(name, int, description, column=None, select=_count(condition),
                 written_by="", example=example, cli=Cli(header, right=True, order=2))


REVIEW_QUEUE = Record("ReviewQueue", "An annotation queue: trajectories for people to review, "
                      "and the scores they must give each.", (
    Field("name", str, "the queue's name (unique in the project)", written_by="key",
          example="support-triage", cli=Cli("NAME")),
    Field("description", str, "what reviewers look for", example="check the refund answers",
          cli=Cli("DESCRIPTION", "clip", order=3)),
    Field("score_names", list[str], "the scores a reviewer must give each item (each a score "
          "config's name: GET /api/v1/score-configs)", example=["correctness"],
          cli=Cli("SCORES", order=1)),
    _progress("total", "how many items it holds", "true", 3, "TOTAL"),
    _progress("done", "items reviewed (completed)", "i.status = 'done'", 1, "DONE"),
    _progress("skipped", "items a reviewer skipped", "i.status = 'skipped'", 0, "SKIPPED"),
    _progress("in_review", "pending items a reviewer holds now",
              f"i.status = 'pending' AND i.lease_until_ns > {_NOW_NS}", 1, "IN REVIEW"),
    _progress("pending", "items not reviewed yet (those in review included)",
              "i.status = 'pending'", 2, "PENDING"),
    Field("created_time", str, "RFC 3339: when it was created", column="created_ns",
          stored_type=int, convert="time", written_by="database",
          example="2026-11-22T10:00:00Z"),
))

REVIEW_ITEM = Record("ReviewItem", "A trajectory in an annotation queue, and its review.", (
    Field("trace_id", str, "the trajectory to review", written_by="key", example=TRACE_ID,
          cli=Cli("TRACE")),
    Field("id", int, "the item's id in the queue (for completing or skipping it)",
          written_by="database", example=7, cli=Cli("ID", right=True)),
    Field("status", Literal["pending", "done", "skipped"], "pending (not reviewed yet), done "
          "(completed) or skipped", example="pending", cli=Cli("STATUS")),
    Field("reviewer", str | None, "who holds or held it: the API key's name (the given "
          "`author` when the server runs without keys)", example="alice",
          cli=Cli("REVIEWER")),
    Field("lease_until_time", str | None, "RFC 3339: a pending item is held by `reviewer` "
          "until then (null: nobody took it yet)", column="lease_until_ns",
          stored_type=int | None, convert="time", example="2026-11-22T10:10:00Z"),
    Field("comment", str | None, "the reviewer's comment", example="cites the wrong policy",
          cli=Cli("COMMENT", "clip", order=2)),
    Field("expectations", dict[str, Any] | None, "the expected behaviour as the reviewer "
          "corrected it (a dataset item's expectations); null when not corrected",
          select="expectations::text", convert="json", stored_type=str, example=None),
    Field("added_time", str, "RFC 3339: when it was added", column="added_ns",
          stored_type=int, convert="time", written_by="database",
          example="2026-11-22T10:00:00Z"),
    Field("completed_time", str | None, "RFC 3339: when it was completed or skipped",
          column="completed_ns", stored_type=int | None, convert="time",
          example=None, cli=Cli("FINISHED", "when", order=1)),
))

__all__ = ["ITEM_STATES", "LEASE_SECONDS", "NAME_PATTERN", "REVIEW_ITEM", "REVIEW_QUEUE"]
