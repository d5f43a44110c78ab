"""`trajhub retention show|set|clear`: a project's retention, through a running server's REST
API (an admin operation)."""

from __future__ import annotations

import argparse
from typing import Any

from trajhub.records.retention import Retention
from trajhub.service.cli.common import Command, connect, print_json, server_options


def _days(text: str) -> float:
    """A number of days (fractions allowed), or `forever` for 0."""
    if text.lower() in ("forever", "off"):
        return 0.0
    try:
        days = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"{text!r} is not a number of days (or `forever`)") from None
    if not days >= 0:
        raise argparse.ArgumentTypeError("days must be 0 (forever) or more")
    return days


def _print(args: argparse.Namespace, answer: Retention) -> int:
    if args.json:
        print_json(answer)
        return 0
    days = answer.days
    kept = "forever" if days == 0 else f"{days:g} day(s)"
    source = ("its own setting" if answer.source == "project"
              else "the server's default, TRAJHUB_RETENTION_DAYS")
    print(f"project {answer.project}: traces are kept {kept} ({source})")
    return 0


def _show(args: argparse.Namespace) -> int:
    with connect(args) as hub:
        return _print(args, hub.get_retention())


def _set(args: argparse.Namespace) -> int:
    with connect(args) as hub:
        return _print(args, hub.set_retention(args.days))


def _clear(args: argparse.Namespace) -> int:
    with connect(args) as hub:
        return _print(args, hub.clear_retention())


def register(sub: Any) -> None:
    """Add `retention` to the `trajhub` subcommands."""
    common = server_options()
    common.add_argument("--json", action="store_true", help="print the answer as JSON")
    rc = Command(sub, "retention", help="show or change how long a project's traces are kept",
                 description="Traces whose spans last arrived longer ago than the project's "
                             "retention are deleted with their trajectories (dataset items keep "
                             "their copy). The server's TRAJHUB_RETENTION_DAYS applies unless "
                             "the project has its own setting.", parents=[common])
    rc.action("show", _show, help="the retention that applies")
    p = rc.action("set", _set, help="give the project its own retention")
    p.add_argument("days", type=_days,
                   help="days (fractions allowed), or `forever` (0) to keep everything")
    rc.action("clear", _clear, help="return the project to the server's default")
