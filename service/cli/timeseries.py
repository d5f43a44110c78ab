"""`trajhub timeseries`: a project's final runs over time, from a running server's monitoring
rollups (`GET /api/v1/timeseries`, docs/monitoring.md)."""

from __future__ import annotations

import argparse
import time
from datetime import datetime
from typing import Any, get_args

from trajhub.records.timeseries import FILTERS, Bucket, GroupBy
from trajhub.service.cli.common import (
    CliError,
    connect,
    duration,
    print_json,
    server_options,
    table,
)

_DAY_NS = 86_400_000_000_000


def _ns(text: str) -> int:
    """Unix ns from RFC 3339 or Unix ns text (the server checks the range)."""
    if text.lstrip("-").isdigit():
        return int(text)
    try:
        moment = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        raise CliError(f"{text!r} is not an RFC 3339 time or Unix nanoseconds") from None
    if moment.tzinfo is None:
        raise CliError(f"{text!r} needs a timezone (e.g. Z)")
    return int(moment.timestamp() * 1_000_000) * 1000


def _run(args: argparse.Namespace) -> int:
    end = args.end if args.end is not None else str(time.time_ns())
    start = args.start if args.start is not None else str(_ns(end) - _DAY_NS)
    filters = {name: v for name in FILTERS if (v := getattr(args, name)) is not None}
    with connect(args) as hub:
        answer = hub.timeseries(start, end, args.bucket, args.group_by, **filters)
    if args.json:
        print_json(answer)
        return 0
    rows = [[s.group if args.group_by else "", p.time.replace("T", " ")[:19], p.runs,
             p.failed_runs, duration(p.latency_p50_ms), duration(p.latency_p95_ms),
             duration(p.latency_p99_ms), p.input_tokens + p.output_tokens, f"{p.cost_usd:.4f}"]
            for s in answer.series for p in s.points]
    header = [args.group_by.upper() if args.group_by else "", "TIME", "RUNS", "FAILED", "P50",
              "P95", "P99", "TOKENS", "USD"]
    if not args.group_by:
        rows, header = [r[1:] for r in rows], header[1:]
    print(table(rows, header, right=range(2 if args.group_by else 1, len(header))))
    return 0


def register(sub: Any) -> None:
    """Add `timeseries` to the `trajhub` subcommands."""
    p = sub.add_parser(
        "timeseries", parents=[server_options()],
        help="runs, failures, latency, tokens and cost over time",
        description="The project's final runs per minute, hour or day (UTC), by when they "
                    "started, from the rollups kept as runs become final. Latency quantiles "
                    "are within 5 %; cost is priced when each run was derived.")
    p.add_argument("--start", help="RFC 3339 or Unix ns [default: a day before --end]")
    p.add_argument("--end", help="RFC 3339 or Unix ns, exclusive [default: now]")
    p.add_argument("--bucket", choices=get_args(Bucket), default="hour",
                   help="each row's width [default: %(default)s]")
    p.add_argument("--group-by", choices=get_args(GroupBy),
                   help="one series per value of this label")
    for name in FILTERS:
        p.add_argument(f"--{name.replace('_', '-')}", dest=name,
                       help=f"only runs of this {name.replace('_', ' ')}")
    p.add_argument("--json", action="store_true", help="print the answer as JSON")
    p.set_defaults(func=_run)
