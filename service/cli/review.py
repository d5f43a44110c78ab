"""`trajhub review list|create|add|progress`: the project's review queues (docs/review.md).
Reviewing itself is the web UI's review screen (or the client's `next_review_item` and
`complete_review_item`)."""

from __future__ import annotations

import argparse
from typing import Any

from trajhub.records.review import ReviewQueue
from trajhub.records.trajectories import TrajectoryQuery
from trajhub.service.cli.common import CliError, Command, connect, print_json
from trajhub.service.cli.reads import add_filter_flags, add_list_action, given_filters
from trajhub.service.client.api import TrajhubClient


def _create(args: argparse.Namespace) -> int:
    with connect(args) as hub:
        queue = hub.create_review_queue(args.name, args.score or (), args.description)
    scores = ", ".join(queue.score_names) or "no scores"
    print(f"review queue {queue.name} created (reviewers give: {scores})")
    return 0


def _add(args: argparse.Namespace) -> int:
    filters = given_filters(args, TrajectoryQuery.names())
    if args.trace_id and filters:
        raise CliError("give trace ids or filters, not both")
    if not args.trace_id and not filters:
        raise CliError("give trace ids, or filters selecting trajectories (see --help)")
    with connect(args) as hub:
        out = hub.add_review_items(args.name, args.trace_id or None, limit=args.limit,
                                   **filters)
    if args.json:
        print_json(out)
    else:
        print(f"added {len(out.added)}, already queued {len(out.already_queued)}, "
              f"not found {len(out.not_found)}")
    return 0


def _progress(args: argparse.Namespace) -> int:
    with connect(args) as hub:
        queue = hub.review_queue(args.name)
    if args.json:
        print_json(queue.model_dump())
    else:
        print(f"{queue.name}: {queue.done} done, {queue.skipped} skipped, {queue.in_review} "
              f"in review, {queue.pending - queue.in_review} waiting, of {queue.total}")
    return 0


def register(sub: Any) -> None:
    """Add `review` to the `trajhub` subcommands."""
    rv = Command(sub, "review", help="review queues: runs for people to review",
                 description="Review queues: trajectories for people to review "
                             "and score (the web UI's Review screen).")

    add_list_action(rv, "list", TrajhubClient.list_review_queues, "queues", ReviewQueue,
                    "no review queues", help="the project's queues and progress")

    p = rv.action("create", _create, help="create a queue (admin key)",
                  description="Create a queue; each --score names a score config "
                              "(`trajhub scores configure`) reviewers must give.")
    p.add_argument("name")
    p.add_argument("--score", action="append", metavar="NAME",
                   help="a score reviewers must give (repeatable)")
    p.add_argument("--description", default="", help="what reviewers look for")

    p = rv.action("add", _add, help="add trajectories to a queue",
                  description="Add trajectories by trace id, or the newest --limit that "
                              "the trajectory list's filters select.")
    p.add_argument("name")
    p.add_argument("trace_id", nargs="*", help="trace ids to add")
    p.add_argument("--limit", type=int, default=100,
                   help="with filters: add at most this many (default 100)")
    add_filter_flags(p, TrajectoryQuery)
    p.add_argument("--json", action="store_true", help="print what was added as JSON")

    p = rv.action("progress", _progress, help="a queue's progress")
    p.add_argument("name")
    p.add_argument("--json", action="store_true", help="print the queue as JSON")
