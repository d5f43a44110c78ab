"""`trajhub rules list|add|edit|enable|disable|delete|backfill`: online evaluation rules from the
command line (docs/rules.md)."""

from __future__ import annotations

import argparse
import json
import time
from typing import Any

from trajhub.records.rules import Rule
from trajhub.service.cli.common import (
    CliError,
    Command,
    connect,
    delete_action,
    print_json,
    switch_actions,
)
from trajhub.service.cli.reads import add_list_action
from trajhub.service.client.api import TrajhubClient


def _object(raw: str | None, what: str) -> dict[str, Any] | None:
    """A JSON object given on the command line (None when not given)."""
    if raw is None:
        return None
    try:
        value = json.loads(raw)
    except ValueError as exc:
        raise CliError(f"{what} is not JSON: {exc}") from None
    if not isinstance(value, dict):
        raise CliError(f"{what} must be a JSON object, e.g. '{{\"agent\": \"planner\"}}'")
    return value


def _say(rule: Any, verb: str) -> None:
    state = "on" if rule.enabled else "off"
    print(f"rule {rule.id} ({rule.name}) {verb}: {rule.evaluator}, filter "
          f"{json.dumps(rule.filter)}, sample {rule.sample_rate}, {state}")


def _add(args: argparse.Namespace) -> int:
    with connect(args) as hub:
        rule = hub.add_rule(args.name, args.evaluator,
                            config=_object(args.config, "--config") or {},
                            filter=_object(args.filter, "--filter") or {},
                            sample_rate=args.sample, enabled=not args.off,
                            expectations=_object(args.expectations, "--expectations"),
                            max_judge_calls_per_minute=args.max_judge_calls,
                            review_queue=args.review_queue,
                            fail_below=1.0 if args.fail_below is None else args.fail_below)
    if args.json:
        print_json(rule.model_dump())
    else:
        _say(rule, "created")
    return 0


def _edit(args: argparse.Namespace) -> int:
    changes: dict[str, Any] = {}
    for key, value in (("name", args.rename), ("evaluator", args.evaluator),
                       ("config", _object(args.config, "--config")),
                       ("filter", _object(args.filter, "--filter")),
                       ("sample_rate", args.sample),
                       ("expectations", _object(args.expectations, "--expectations")),
                       ("max_judge_calls_per_minute", args.max_judge_calls),
                       ("review_queue", args.review_queue), ("fail_below", args.fail_below)):
        if value is not None:
            changes[key] = value
    if not changes:
        raise CliError("nothing to change: give at least one option")
    with connect(args) as hub:
        rule = hub.edit_rule(args.rule_id, **changes)
    _say(rule, "changed")
    return 0


_enable, _disable = switch_actions(TrajhubClient.enable_rule, "rule_id", _say,
                                  ("switched on", "switched off"))


_delete = delete_action(TrajhubClient.delete_rule, "rule_id",
                        said="deleted rule {rule_id} (its scores stay)")


def _backfill(args: argparse.Namespace) -> int:
    with connect(args) as hub:
        job = hub.backfill_rule(args.rule_id, since=args.since)
        print(f"backfill {job.id}: {job.total} trajectories queued")
        while args.wait and job.status != "done":
            time.sleep(0.5)
            job = hub.get_backfill(args.rule_id, job.id)
            print(f"  {job.done}/{job.total} done", flush=True)
    if args.wait:
        print(f"backfill {job.id} done: {job.done} of {job.total}")
    return 0


def register(sub: Any) -> None:
    """Add `rules` to the `trajhub` subcommands."""
    rc = Command(sub, "rules", help="online evaluation rules",
                 description="A rule runs an evaluator on every new final "
                             "trajectory of the project that matches its filter, and "
                             "stores the verdict as a score (docs/rules.md).")

    add_list_action(rc, "list", TrajhubClient.list_rules, "rules", Rule,
                    "no rules: `trajhub rules add NAME EVALUATOR` creates one",
                    help="the project's rules")

    def options(p: argparse.ArgumentParser, editing: bool) -> None:
        p.add_argument("--config", metavar="JSON", help="the evaluator's options, a JSON object")
        p.add_argument("--filter", metavar="JSON",
                       help="the trajectory list's filters by name, a JSON object, e.g. "
                            "'{\"agent\": \"planner\", \"has_error\": false}'")
        p.add_argument("--sample", type=float, default=None if editing else 1.0,
                       metavar="RATE", help="the share of matching trajectories, 0 to 1")
        p.add_argument("--expectations", metavar="JSON",
                       help="what each trajectory should have done (an item's expectations)")
        p.add_argument("--max-judge-calls", type=int, metavar="N",
                       help="LLM judges: at most N judge calls a minute")
        p.add_argument("--review-queue", metavar="QUEUE",
                       help="the review queue its failures go to (docs/review.md)")
        p.add_argument("--fail-below", type=float, metavar="SCORE",
                       help="a score below this is a failure (default 1.0: short of full)")

    p = rc.action("add", _add, help="create a rule (admin)",
                  description="Create a rule: EVALUATOR (any of `POST /api/v1/evaluations`'"
                              " evaluators, the LLM judges included) runs on each new "
                              "final trajectory matching --filter.")
    p.add_argument("name")
    p.add_argument("evaluator")
    options(p, editing=False)
    p.add_argument("--off", action="store_true", help="create it switched off")
    p.add_argument("--json", action="store_true", help="print the rule as JSON")

    p = rc.action("edit", _edit, help="change a rule (admin)",
                  description="Change the options given; the others stay.")
    p.add_argument("rule_id", type=int)
    p.add_argument("--rename", metavar="NAME", help="a new name")
    p.add_argument("--evaluator", help="another evaluator")
    options(p, editing=True)

    p = rc.action("enable", _enable, help="switch a rule on (admin)")
    p.add_argument("rule_id", type=int)

    p = rc.action("disable", _disable, help="switch a rule off (admin)",
                  description="Switch a rule off: new trajectories are not queued for it, "
                              "and its queued runs wait until it is on again.")
    p.add_argument("rule_id", type=int)

    p = rc.action("delete", _delete, help="delete a rule (admin)",
                  description="Delete a rule and its queued runs; its scores stay.")
    p.add_argument("rule_id", type=int)

    p = rc.action("backfill", _backfill,
                  help="run a rule over the stored trajectories matching its filter",
                  description="Queue the rule over the stored final trajectories that "
                              "match its filter and sample, and (with --wait) follow its "
                              "progress.")
    p.add_argument("rule_id", type=int)
    p.add_argument("--since", metavar="TIME",
                   help="only trajectories starting at or after (RFC 3339 or Unix ns)")
    p.add_argument("--wait", action="store_true", help="print progress until it is done")
