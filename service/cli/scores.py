"""`trajhub scores list|add|delete|configs|configure`: a trajectory's scores, scoring it (or one
of its steps) from the command line, and the project's score configs."""

from __future__ import annotations

import argparse
from typing import Any

from trajhub.records.scores import Score, ScoreConfig, number_of
from trajhub.service.cli.common import CliError, Command, connect, delete_action, print_json
from trajhub.service.cli.reads import add_list_action
from trajhub.service.client.api import TrajhubClient


def score_value(raw: str, data_type: str | None) -> bool | float | str:
    """VALUE as the API takes it: `true`/`false` a boolean, a number a number, anything else a
    category; `--type` says which when the text could be read more than one way."""
    if data_type == "category":
        return raw
    if data_type in (None, "boolean") and raw in ("true", "false"):
        return raw == "true"
    number = number_of(raw)
    if data_type in (None, "number") and number is not None:
        return number
    if data_type is None:
        return raw
    raise CliError(f"{raw!r} is not a {data_type}")


def _add(args: argparse.Namespace) -> int:
    fields: dict[str, Any] = {"step_id": args.step, "comment": args.comment,
                              "source": args.source, "data_type": args.type}
    with connect(args) as hub:
        score = hub.add_score(args.trace_id, args.name, score_value(args.value, args.type),
                              **fields)
    if args.json:
        print_json(score.model_dump())
    else:
        where = f"step {score.step_id}" if score.step_id else "the trajectory"
        print(f"score {score.id}: {score.name} = {score.value} on {where} "
              f"(revision {score.revision})")
    return 0


_delete = delete_action(TrajhubClient.delete_score, "trace_id", "score_id",
                        said="deleted score {score_id}")


def _configure(args: argparse.Namespace) -> int:
    with connect(args) as hub:
        config = hub.set_score_config(args.name, args.type, min=args.min, max=args.max,
                                      categories=args.category, description=args.description)
    print(f"scores named {config.name} must now be a {config.data_type}")
    return 0


def register(sub: Any) -> None:
    """Add `scores` to the `trajhub` subcommands."""
    sc = Command(sub, "scores", help="list and add scores of a trajectory",
                 description="Scores judge a trajectory, or one step of it: a "
                             "number, a boolean or a category, with a comment.")

    add_list_action(sc, "list", TrajhubClient.list_scores, "scores", Score,
                    "trajectory {trace_id} has no scores", of="trace_id",
                    help="a trajectory's scores",
                    description="A trajectory's scores (its steps' included), oldest first, "
                                "each with the revision it was made on.")

    p = sc.action("add", _add, help="score a trajectory or one of its steps",
                  description="Add a score. VALUE is a number, true or false, or a "
                              "category (any other text).")
    p.add_argument("trace_id")
    p.add_argument("name", help="what it measures (letters, digits and _.:/-)")
    p.add_argument("value", help="a number, true/false, or a category")
    p.add_argument("--step", metavar="STEP_ID",
                   help="score this step (its id in the trajectory) instead of the whole run")
    p.add_argument("--comment", help="why, in words")
    p.add_argument("--source", choices=("api", "human"), default=None,
                   help="who scores: api (the default) or human (a reviewer)")
    p.add_argument("--type", choices=("number", "boolean", "category"),
                   help="read VALUE as this type (e.g. a category spelled like a number)")
    p.add_argument("--json", action="store_true", help="print the stored score as JSON")

    add_list_action(sc, "configs", TrajhubClient.list_score_configs, "configs", ScoreConfig,
                    "no score configs: scores of any name and type are taken",
                    help="the project's score configs",
                    description="What the project's scores of each name must be: a type, a "
                                "number's range, a category's list.")

    p = sc.action("configure", _configure, help="set what scores of a name must be",
                  description="Create or replace the config of a score name (an admin "
                              "key's work); a new score of that name outside it is "
                              "refused.")
    p.add_argument("name")
    p.add_argument("type", choices=("number", "boolean", "category"))
    p.add_argument("--min", type=float, help="the least number allowed")
    p.add_argument("--max", type=float, help="the greatest number allowed")
    p.add_argument("--category", action="append",
                   help="a category allowed (repeatable; none: any category)")
    p.add_argument("--description", default="", help="what it measures, for people")

    p = sc.action("delete", _delete, help="delete one score",
                  description="Delete one score of a trajectory, by the id `scores list` "
                              "shows (--json).")
    p.add_argument("trace_id")
    p.add_argument("score_id", type=int)
