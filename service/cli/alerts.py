"""`trajhub alerts list|create|mute|unmute|delete|events`: monitoring alert rules from the command
line (docs/alerts.md)."""

from __future__ import annotations

import argparse
from typing import Any

from trajhub.records.alerts import FILTERS, METRICS, AlertEvent, AlertRule
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


def _say(rule: AlertRule, verb: str) -> None:
    warn = f", warning {rule.warning_threshold}" if rule.warning_threshold is not None else ""
    muted = ", muted" if rule.muted else ""
    print(f"alert rule {rule.id} ({rule.name}) {verb}: {rule.metric} {rule.condition} "
          f"{rule.alert_threshold}{warn} over {rule.window_seconds} s, state {rule.state}"
          f"{muted}")


def _create(args: argparse.Namespace) -> int:
    if (args.above is None) == (args.below is None):
        raise CliError("give the alert threshold as --above X or --below X (one of them)")
    condition, threshold = ("above", args.above) if args.above is not None else (
        "below", args.below)
    filters = {name: getattr(args, name) for name in FILTERS if getattr(args, name)}
    with connect(args) as hub:
        created = hub.create_alert(
            args.name, args.metric, alert_threshold=threshold, condition=condition,
            warning_threshold=args.warning, window_seconds=args.window,
            webhook_url=args.webhook, score_name=args.score, filter=filters,
            secret=args.secret, muted=args.muted)
    if args.json:
        print_json({**created.rule.model_dump(), "secret": created.secret})
        return 0
    _say(created.rule, "created")
    print(f"signing secret (shown once): {created.secret}")
    return 0


_mute, _unmute = switch_actions(TrajhubClient.mute_alert, "alert_id", _say, ("muted", "unmuted"))


_delete = delete_action(TrajhubClient.delete_alert, "alert_id",
                        said="deleted alert rule {alert_id} and its history")


def register(sub: Any) -> None:
    """Add `alerts` to the `trajhub` subcommands."""
    ac = Command(sub, "alerts", help="monitoring alert rules",
                 description="An alert rule measures the project's final runs over a window "
                             "(error rate, p95 latency, cost, runs, a score's mean), and "
                             "POSTs each change of its state (resolved, warning, firing) "
                             "to a webhook (docs/alerts.md).")

    add_list_action(ac, "list", TrajhubClient.list_alerts, "alerts", AlertRule,
                    "no alert rules: `trajhub alerts create NAME METRIC --above X --window S "
                    "--webhook URL` creates one",
                    help="the project's alert rules and their state")

    p = ac.action("create", _create, help="create an alert rule (admin)",
                  description="Create an alert rule: METRIC is " + "; ".join(
                      f"{k}: {v}" for k, v in METRICS.items()) + ".")
    p.add_argument("name")
    p.add_argument("metric", choices=sorted(METRICS))
    p.add_argument("--above", type=float, metavar="X", help="firing when the value is over X")
    p.add_argument("--below", type=float, metavar="X",
                   help="firing when the value is under X")
    p.add_argument("--warning", type=float, metavar="X",
                   help="warning past X (before the alert threshold)")
    p.add_argument("--window", type=int, required=True, metavar="SECONDS",
                   help="the runs that started in the last SECONDS (60 to 604800)")
    p.add_argument("--webhook", required=True, metavar="URL",
                   help="where each change of state is POSTed (http or https)")
    p.add_argument("--score", metavar="NAME", help="score_mean: the score's name")
    for name, text in FILTERS.items():
        p.add_argument("--" + name.replace("_", "-"), dest=name, metavar="VALUE",
                       help=f"only runs with {text}")
    p.add_argument("--secret", help="the signing secret (default: the server makes one)")
    p.add_argument("--muted", action="store_true", help="create it muted")
    p.add_argument("--json", action="store_true", help="print the rule (and secret) as JSON")

    p = ac.action("mute", _mute, help="mute an alert rule: not evaluated, nothing sent")
    p.add_argument("alert_id", type=int)
    p = ac.action("unmute", _unmute, help="unmute an alert rule")
    p.add_argument("alert_id", type=int)

    p = ac.action("delete", _delete, help="delete an alert rule and its history (admin)")
    p.add_argument("alert_id", type=int)

    add_list_action(ac, "events", TrajhubClient.alert_events, "events", AlertEvent,
                    "alert rule {alert_id} has not changed state yet", of="alert_id",
                    of_type=int, help="an alert rule's changes of state, newest first")
