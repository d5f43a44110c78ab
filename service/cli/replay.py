"""`trajhub replay TRACE_ID` (a run's timeline in the terminal) and `trajhub regress BASELINE
CANDIDATE` (a regression report as a table): clients of a running server's REST API."""

from __future__ import annotations

import argparse
import json
import os
import sys
from datetime import datetime
from typing import Any, TextIO

from trajhub.records.regressions import RegressionReport
from trajhub.records.replay import StepEventView
from trajhub.service.cli.common import connect, server_options

PREVIEW = 160  # characters of input / output shown per step unless --full

_COLORS = {"model": "36", "tool": "33", "agent": "35", "graph": "35", "error": "31",
           "dim": "2", "bold": "1", "better": "32", "worse": "31"}


class Paint:
    def __init__(self, enabled: bool) -> None:
        self.enabled = enabled

    def __call__(self, text: str, style: str) -> str:
        return f"\033[{_COLORS[style]}m{text}\033[0m" if self.enabled else text


def _use_color(choice: str, stream: TextIO) -> bool:
    if choice == "always":
        return True
    if choice == "never" or os.environ.get("NO_COLOR"):
        return False
    return stream.isatty()


def _short(text: str, full: bool) -> str:
    text = text.replace("\n", "\\n")
    return text if full or len(text) <= PREVIEW else text[:PREVIEW - 1] + "…"


def _seconds(time: str) -> float:
    """An RFC 3339 time (the API's `start_time`) as Unix seconds."""
    return datetime.fromisoformat(time).timestamp()


def timeline(events: list[StepEventView], paint: Paint, full: bool = False) -> list[str]:
    """The lines of a run's timeline: offset from the first step, agent, step, timing, tokens,
    cost and error, then the step's input and output."""
    if not events:
        return ["(no steps)"]
    t0 = min(_seconds(e.start_time) for e in events)
    lines = []
    for e in events:
        offset = f"+{_seconds(e.start_time) - t0:.3f}s"
        head = (f"{paint(f'{offset:<9}', 'dim')} {e.seq:>3} "
                f"[{e.agent}] {paint(e.type, e.type)} {paint(e.name, 'bold')} "
                f"{e.duration_ms}ms")
        if e.tokens is not None:
            head += f"  {e.tokens.input}→{e.tokens.output} tok"
        if e.model:
            head += f"  {e.model}"
        if e.cost is not None and e.cost.usd is not None:
            head += f"  ${e.cost.usd:.6f}"
        if e.error is not None:
            head += "  " + paint(f"ERROR {e.error.code}: {e.error.msg}", "error")
        lines.append(head)
        if e.type in ("model", "tool"):
            lines.append(f"      in:  {_short(e.input, full)}")
            lines.append(f"      out: {_short(e.output, full)}")
    return lines


def _replay(args: argparse.Namespace) -> int:
    with connect(args) as hub:
        run = hub.events(args.trace_id)
    paint = Paint(_use_color(args.color, sys.stdout))
    print(paint(f"trace {run.trace_id}  revision {run.revision}  ({run.status})", "bold"))
    for line in timeline(run.events, paint, args.full):
        print(line)
    return 0


def _side(value: str) -> dict[str, Any]:
    return {"evaluation": int(value)} if value.isdigit() else {"run": value}


def _fmt(value: Any) -> str:
    if value is None:
        return "?"
    if isinstance(value, float) and not value.is_integer():
        return f"{value:+.6f}"
    return f"{int(value):+d}" if isinstance(value, (int, float)) else str(value)


def report_table(report: RegressionReport, paint: Paint) -> list[str]:
    metrics = ["path_length", "tool_calls", "retries", "tokens", "cost_usd", "duration_ms",
               "failed_steps"]
    lines = [paint(f"regression report over set {report.dataset!r}", "bold"),
             f"{'metric':<28}{'verdict':<9}{'better':>7}{'same':>7}{'worse':>7}{'missing':>9}"]
    for v in report.verdicts:
        style = v.verdict if v.verdict in ("better", "worse") else "dim"
        verdict = paint(f"{v.verdict:<9}", style)
        lines.append(f"{v.metric:<28}{verdict}{v.better:>7}"
                     f"{v.same:>7}{v.worse:>7}{v.missing:>9}")
    lines.append("")
    lines.append(f"{'item':<38}" + "".join(f"{m[:11]:>12}" for m in metrics)
                 + "  first divergence")
    for item in report.items:
        first = item.first_divergence
        where = "-"
        if first is not None:
            a, b = first.a, first.b
            where = (f"#{first.position} {first.op}: "
                     f"{a.name if a else '∅'} → {b.name if b else '∅'}")
        if item.problems:
            where = "; ".join(item.problems)
        lines.append(f"{item.item_id[:37]:<38}"
                     + "".join(f"{_fmt(item.deltas.get(m)):>12}" for m in metrics)
                     + f"  {where}")
    return lines


def _regress(args: argparse.Namespace) -> int:
    with connect(args) as hub:
        report = hub.regression(_side(args.baseline), _side(args.candidate), args.dataset)
    if args.json:
        print(json.dumps(report.model_dump(mode="json"), indent=2))
        return 0
    for line in report_table(report, Paint(_use_color(args.color, sys.stdout))):
        print(line)
    return 0


def register(sub: Any) -> None:
    common = server_options()
    common.add_argument("--color", choices=("auto", "always", "never"), default="auto",
                        help="colour output (auto: when stdout is a terminal)")

    p = sub.add_parser("replay", parents=[common], help="play a run back as a timeline",
                       description="Print a run's steps (model and tool calls, agents) in the "
                                   "order they happened, with timing, tokens, cost and "
                                   "errors. Re-runs nothing.")
    p.add_argument("trace_id")
    p.add_argument("--full", action="store_true", help="show whole inputs and outputs")
    p.set_defaults(func=_replay)

    p = sub.add_parser("regress", parents=[common],
                       help="compare a candidate run with a baseline over a dataset",
                       description="Per item: path-length, token, cost, duration and failure "
                                   "deltas and where the runs diverged; per metric: better / "
                                   "same / worse. BASELINE and CANDIDATE are evaluation ids "
                                   "(numbers) or run names (with --dataset).")
    p.add_argument("baseline")
    p.add_argument("candidate")
    p.add_argument("--dataset", help="the dataset of run names")
    p.add_argument("--json", action="store_true", help="print the report as JSON")
    p.set_defaults(func=_regress)
