"""`trajhub traces …`, `trajhub trajectories …` and `trajhub projects`: reading a running
server's stored traces and trajectories, as tables for people and `--json` for machines."""

from __future__ import annotations

import argparse
import re
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from trajhub.normalizers.document import parse_document
from trajhub.normalizers.trajectory import BasicInfo, ModelInfo
from trajhub.records import Cli, Column, Param, Query, Record
from trajhub.records.spans import SpanNode, SpanView
from trajhub.records.traces import TraceSummary
from trajhub.records.trajectories import (
    SCORE_SORT,
    SORT_PATTERN,
    TRAJECTORY_SORTS,
    TrajectoryQuery,
    TrajectorySummary,
)
from trajhub.service.cli.common import (
    Command,
    Handler,
    clip,
    connect,
    duration,
    print_json,
    server_options,
    table,
    when,
)
from trajhub.service.client.api import TrajhubClient
from trajhub.service.client.models import Page


def given_filters(args: argparse.Namespace, names: Iterable[str]) -> dict[str, Any]:
    """The filters among `names` that the command line gives (a flag left out is None)."""
    return {name: value for name in names if (value := getattr(args, name, None)) is not None}


def _cell(item: Any, f: Column, cli: Cli) -> Any:
    value = getattr(item, f.name)
    if cli.format == "when":
        return when(value)
    if cli.format == "duration":
        return duration(value)
    if cli.format == "yes":
        return "yes" if value else ""
    if cli.format == "clip":
        return clip(value, 40)
    if cli.format == "sum":
        return value + sum(getattr(item, other) for other in cli.plus)
    if cli.format == "value":
        return str(value).lower() if isinstance(value, bool) else \
            f"{value:g}" if isinstance(value, float) else value
    return value


def record_table(record: type[Record], items: list[Any]) -> str:
    """A list as a table of the columns its declaration shows in the CLI (its fields' `Cli`)."""
    columns = record.cli_columns()
    return table([[_cell(item, f, cli) for f, cli in columns] for item in items],
                 [cli.header for _, cli in columns],
                 right=[i for i, (_, cli) in enumerate(columns) if cli.right])


def print_records(args: argparse.Namespace, key: str, record: type[Record], items: list[Any],
                  none: str) -> None:
    """A list command's answer: `{key: items}` as JSON with --json, else a table of the
    items, or the sentence `none` when there are none."""
    if args.json:
        print_json({key: [item.model_dump() for item in items]})
    elif not items:
        print(none)
    else:
        print(record_table(record, items))


def add_list_action(command: Command, name: str, fetch: Callable[..., list[Any]],
                    key: str, record: type[Record], none: str, *, help: str,
                    description: str | None = None, of: str | None = None,
                    of_type: Callable[[str], Any] = str) -> None:
    """Add a list ACTION that takes no arguments but `--json`, and the argument `of` (of
    type `of_type`) when it lists what belongs to one record: what `fetch(client)` (or
    `fetch(client, that argument)`) reads from the server, printed by print_records; `none`
    is formatted with the arguments (`{trace_id}`)."""
    def run(args: argparse.Namespace) -> int:
        owner = () if of is None else (getattr(args, of),)
        with connect(args) as hub:
            items = fetch(hub, *owner)
        print_records(args, key, record, items, none.format(**vars(args)))
        return 0
    p = command.action(name, run, help=help, description=description)
    if of is not None:
        p.add_argument(of, type=of_type)
    p.add_argument("--json", action="store_true", help="print JSON instead of a table")


def add_filter_flags(parser: argparse.ArgumentParser, filter_: type[Query]) -> None:
    """One flag per declared filter: `--session-id` for `session_id` (`-q` for a one-letter
    name), typed as the filter is."""
    for param in filter_.params():
        parser.add_argument(param.flag, dest=param.name, metavar=param.metavar,
                            help=param.cli_help or param.description, **_flag_type(param))


def _flag_type(param: Param) -> dict[str, Any]:
    choices = param.choices()
    if choices is not None:
        return {"choices": choices}
    if param.type is bool:
        return {"type": _bool}
    if param.type is int:
        return {"type": int}
    return {}


def page_action(fetch: Callable[..., Page[Any]], filters: Iterable[str], record: type[Record],
                what: str) -> Handler:
    """The handler of a list ACTION read a page at a time (its flags: add_paging's and the
    filters'): the page `fetch(client, limit=, cursor=, the filters among `filters` given)`
    reads, printed by print_page."""
    def run(args: argparse.Namespace) -> int:
        with connect(args) as hub:
            page = fetch(hub, limit=args.limit, cursor=args.cursor,
                         **given_filters(args, filters))
        print_page(record, page, args.json, what)
        return 0
    return run


def print_page(record: type[Record], page: Page[Any], as_json: bool, what: str) -> None:
    """A list's page: as JSON ({items, next_cursor, total when counted}), or the record's
    table (or that no `what` match), its total when counted, and how to get the next page."""
    if as_json:
        print_json({"items": [i.model_dump() for i in page.items], "next_cursor": page.next_cursor,
                    **({"total": page.total} if page.total is not None else {})})
        return
    if not page.items:
        print(f"no {what} match")
        return
    if page.total is not None:
        print(f"{page.total} {what} match")
    print(record_table(record, page.items))
    if page.next_cursor:
        print(f"\nmore: --cursor {page.next_cursor}")


# --- projects ------------------------------------------------------------------------------

def _projects(args: argparse.Namespace) -> int:
    with connect(args) as hub:
        projects = hub.list_projects()
    if args.json:
        print_json({"projects": [p.model_dump() for p in projects]})
        return 0
    if not projects:
        print("no projects yet: no spans stored")
        return 0
    print(table([(p.name, p.trace_count, p.span_count, when(p.first_span_time),
                  when(p.last_span_time)) for p in projects],
                ("PROJECT", "TRACES", "SPANS", "FIRST SPAN", "LAST SPAN"), right=(1, 2)))
    return 0


# --- traces --------------------------------------------------------------------------------

_TRACE_FILTERS = ("start", "end", "service", "span_name", "has_error", "attribute",
                  "min_duration_ms")


_traces_list = page_action(TrajhubClient.list_traces, _TRACE_FILTERS, TraceSummary, "traces")


def _span_failed(span: SpanView) -> bool:
    # an OTLP span says so in its status; a Coze Loop native span in its own status code
    return span.status.code == "ERROR" \
        or (span.cozeloop is not None and span.cozeloop.status_code != 0)


def _span_lines(nodes: Sequence[SpanView], depth: int, out: list[str]) -> None:
    for span in nodes:
        message = span.status.message
        failed = ("  ERROR" + (f": {clip(message, 80)}" if message else "")
                  if _span_failed(span) else "")
        out.append(f"{'  ' * depth}{span.name}  {span.span_id}  "
                   f"{duration(span.duration_ms)}{failed}")
        _span_lines(span.children if isinstance(span, SpanNode) else [], depth + 1, out)


def _traces_show(args: argparse.Namespace) -> int:
    with connect(args) as hub:
        if args.otlp:
            print_json(hub.get_trace(args.trace_id, view="flat" if args.flat else "tree",
                                     format="otlp"))
            return 0
        trace = hub.get_trace(args.trace_id, view="flat" if args.flat else "tree")
    if args.json:
        print_json(trace)
        return 0
    lines: list[str] = []
    _span_lines(trace.spans, 0, lines)
    print(f"trace {trace.trace_id}")
    print("\n".join(lines))
    return 0


# --- trajectories --------------------------------------------------------------------------

_trajectories_list = page_action(TrajhubClient.list_trajectories,
                                 (*TrajectoryQuery.names(), "sort", "order", "count"),
                                 TrajectorySummary, "trajectories")


def _step_line(kind: str, name: str, info: BasicInfo, model: ModelInfo | None,
               depth: int) -> str:
    tokens = f"  {model.input_tokens}+{model.output_tokens} tokens" if model is not None else ""
    error = info.error
    # an error without a message shows as the document holds it
    failed = (f"  ERROR: {clip(error.msg or str({'code': error.code, 'msg': error.msg}), 80)}"
              if error is not None else "")
    ms = info.duration_ms
    return (f"{'  ' * depth}{kind:<6} {name}  "
            f"{duration(float(ms)) if ms is not None else '-'}{tokens}{failed}")


def _trajectories_show(args: argparse.Namespace) -> int:
    with connect(args) as hub:
        if args.explain:
            explanation = hub.explain_trajectory(args.trace_id)
            print_json(explanation)
            return 0
        stored = hub.get_trajectory(args.trace_id)
    if args.json:
        print_json(stored.document)
        return 0
    trajectory = parse_document(stored.document)
    root = trajectory.root_step
    print(f"trajectory {args.trace_id}: {stored.status}, revision {stored.revision}")
    ms = root.basic_info.duration_ms
    print(f"root {root.name}  {duration(float(ms) if ms is not None else None)}  "
          f"{root.metrics_info.input_tokens}+{root.metrics_info.output_tokens} tokens")
    for field, text in (("input", root.input), ("output", root.output)):
        if text:
            print(f"  {field}: {clip(text, 100)}")
    for agent in trajectory.agent_steps:
        print(_step_line("agent", agent.name, agent.basic_info, None, 1))
        for step in agent.steps:
            model = (step.model_info or ModelInfo()) if step.type == "model" else None
            print(_step_line(step.type or "agent", step.name, step.basic_info, model, 2))
    return 0


# --- wiring --------------------------------------------------------------------------------

def _bool(raw: str) -> bool:
    if raw.lower() in ("true", "1", "yes"):
        return True
    if raw.lower() in ("false", "0", "no"):
        return False
    raise argparse.ArgumentTypeError(f"{raw!r} is not true or false")


def _sort(raw: str) -> str:
    if re.fullmatch(SORT_PATTERN, raw) is None:
        raise argparse.ArgumentTypeError(
            f"{raw!r} is not one of {', '.join(TRAJECTORY_SORTS)} or {SCORE_SORT}")
    return raw


def add_paging(p: argparse.ArgumentParser) -> None:
    """The flags of a list read a page at a time."""
    p.add_argument("--limit", type=int, default=50, help="at most this many (default 50)")
    p.add_argument("--cursor", help="the `more: --cursor …` of the previous page")
    p.add_argument("--json", action="store_true",
                   help="print the page as JSON ({items, next_cursor})")


def register(sub: Any) -> None:
    """Add `projects`, `traces` and `trajectories` to the `trajhub` subcommands."""
    p = sub.add_parser("projects", parents=[server_options()], help="list the projects on a server",
                       description="Every project with stored spans, with its trace and span "
                                   "counts and the time of its first and last span.")
    p.add_argument("--json", action="store_true", help="print JSON instead of a table")
    p.set_defaults(func=_projects)

    ts = Command(sub, "traces", help="list and show stored traces",
                 description="Read the raw traces a running server stored.")
    p = ts.action("list", _traces_list, help="traces, newest first",
                  description="Traces, newest first; the flags are the filters of "
                              "GET /api/v1/traces.")
    p.add_argument("--start", help="starting at or after (RFC 3339 or Unix ns)")
    p.add_argument("--end", help="starting before (RFC 3339 or Unix ns)")
    p.add_argument("--service", help="resource service.name")
    p.add_argument("--span-name", help="has a span with this name")
    p.add_argument("--has-error", type=_bool, metavar="true|false",
                   help="has (true) or lacks (false) a failed span")
    p.add_argument("--attribute", action="append", metavar="KEY=VALUE",
                   help="has a span with this attribute (repeatable)")
    p.add_argument("--min-duration-ms", type=float)
    add_paging(p)
    p = ts.action("show", _traces_show, help="one trace's spans",
                  description="One trace's spans as an indented tree (name, span id, "
                              "duration, error).")
    p.add_argument("trace_id")
    p.add_argument("--flat", action="store_true", help="in start order instead of a tree")
    p.add_argument("--json", action="store_true", help="trajhub's span view as JSON")
    p.add_argument("--otlp", action="store_true",
                   help="the spans as received, as OTLP/JSON")

    tj = Command(sub, "trajectories", help="list and show derived trajectories",
                 description="Read the trajectories a running server derived from its "
                             "traces.")
    p = tj.action("list", _trajectories_list, help="trajectory summaries, filtered",
                  description="Trajectory summaries; the flags are the filters of "
                              "GET /api/v1/trajectories.")
    add_filter_flags(p, TrajectoryQuery)
    p.add_argument("--sort", type=_sort, metavar="|".join((*TRAJECTORY_SORTS, SCORE_SORT)),
                   help="sort by this (score:<name>: by that score, listing only the "
                        "trajectories that have it)")
    p.add_argument("--order", choices=("desc", "asc"))
    # None unless given: a list not asked to count leaves `count` out of its query
    p.add_argument("--count", action="store_true", default=None,
                   help="also print how many trajectories match in all")
    add_paging(p)
    p = tj.action("show", _trajectories_show, help="one trajectory",
                  description="One trajectory: the root, then each agent step with its "
                              "model and tool steps.")
    p.add_argument("trace_id")
    p.add_argument("--json", action="store_true",
                   help="the trajectory document (trajectory.schema.json's format)")
    p.add_argument("--explain", action="store_true",
                   help="how each span was classified, kept or dropped (JSON)")
