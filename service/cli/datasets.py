"""`trajhub dataset …` and `trajhub eval …`: clients of a running server's REST API."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from tqdm import tqdm

from trajhub.service.cli.common import (
    CliError,
    Command,
    check_writable,
    connect,
    delete_action,
    output_file,
    read_file,
    server_options,
)
from trajhub.service.client.api import ApiError, TrajhubClient
from trajhub.service.client.models import Evaluation, EvaluationResult

#: record terminator per export format, to count items for the progress bar as bytes stream in
_TERMINATOR = {"jsonl": b"\n", "agentevals": b"\n", "atif": b"\n", "csv": b"\r\n"}


def _value(raw: str) -> Any:
    """`key=value` values: JSON when they parse (false, 3, "x"), else the plain string."""
    try:
        return json.loads(raw)
    except ValueError:
        return raw


def _pairs(items: list[str] | None, what: str) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for item in items or []:
        key, sep, raw = item.partition("=")
        if not sep or not key:
            raise CliError(f"{what} {item!r} must look like key=value")
        out[key] = _value(raw)
    return out


# --- dataset -------------------------------------------------------------------------------

def _create(args: argparse.Namespace) -> int:
    with connect(args) as hub:
        d = hub.create_dataset(args.name, args.description)
    print(f"created dataset {d.name!r}")
    return 0


def _list(args: argparse.Namespace) -> int:
    with connect(args) as hub:
        sets = hub.list_datasets()
    if args.json:
        print(json.dumps([vars(d) for d in sets], indent=2))
        return 0
    if not sets:
        print("no datasets")
    for d in sets:
        print(f"{d.name:<32} {d.item_count:>7} items  {d.description}")
    return 0


def _show(args: argparse.Namespace) -> int:
    with connect(args) as hub:
        d = hub.get_dataset(args.name)
        print(f"{d.name}: {d.item_count} items, created {d.created_time}")
        if d.description:
            print(d.description)
        for item in hub.iter_items(args.name):
            exp = item.expectations or {}
            tools = ", ".join(exp.get("tool_order") or []) or "-"
            print(f"  {item.id}  trace {item.source_trace_id or '-'}  "
                  f"agents {', '.join(exp.get('agents') or []) or '-'}  tools {tools}"
                  + (f"  tags {','.join(item.tags)}" if item.tags else "")
                  + (f"  metadata {','.join(sorted(item.metadata))}" if item.metadata else ""))
    return 0


def _rename(args: argparse.Namespace) -> int:
    with connect(args) as hub:
        hub.update_dataset(args.name, new_name=args.new_name)
    print(f"renamed {args.name!r} to {args.new_name!r}")
    return 0


_delete = delete_action(TrajhubClient.delete_dataset, "name", said="deleted dataset {name!r}")


def _fill(args: argparse.Namespace) -> int:
    with connect(args) as hub:
        out = hub.fill_dataset(
            args.name, trace_ids=args.trace_id or None,
            query=None if args.trace_id else _pairs(args.query, "--query"),
            sample_rate=args.sample_rate, limit=args.limit, tags=args.tag or [])
    print(f"added {out.added} item(s); skipped {out.skipped_duplicates} already in the "
          f"set; {out.sampled_out} sampled out")
    if out.not_found:
        print(f"not found: {', '.join(out.not_found)}")
    if out.not_final:
        print(f"not final: {', '.join(out.not_final)}")
    return 0


def _export(args: argparse.Namespace) -> int:
    check_writable(args.output)
    terminator = _TERMINATOR[args.format]
    with connect(args) as hub, hub.export_dataset(args.name, args.format) as export, \
            output_file(args.output) as out, \
            tqdm(total=export.item_count, unit="item", desc=f"export {args.name}",
                 disable=args.output == "-" or None) as bar:
        header = args.format == "csv"
        tail = b""
        for chunk in export.iter_bytes():
            out.write(chunk)
            # count record ends, including one split across two chunks
            seen = (tail + chunk).count(terminator)
            if header and seen:
                seen, header = seen - 1, False
            bar.update(seen)
            tail = chunk[-(len(terminator) - 1):] if len(terminator) > 1 else b""
    if args.output != "-":
        print(f"exported {export.item_count} item(s) to {args.output}", file=sys.stderr)
    return 0


def _import(args: argparse.Namespace) -> int:
    body = read_file(args.file)
    with connect(args) as hub:
        try:
            out = hub.import_items(args.name, body, create=args.create)
        except ApiError as exc:
            if exc.status == 404 and not args.create:
                raise CliError(f"dataset {args.name!r} does not exist; pass --create to create "
                               "it") from None
            raise
    print(f"imported {out.added} item(s); skipped {out.skipped_duplicates} already in "
          "the set")
    return 0


# --- eval ----------------------------------------------------------------------------------

def _evaluator(raw: str) -> Any:
    """`name` or `name={json options}`."""
    name, sep, options = raw.partition("=")
    if not sep:
        return name
    try:
        config = json.loads(options)
    except ValueError:
        raise CliError(f"--evaluator {raw!r}: options must be a JSON object") from None
    return {"name": name, "config": config}


def _wait(hub: TrajhubClient, evaluation: Evaluation, timeout: float) -> Evaluation:
    with tqdm(total=evaluation.item_count, unit="item", desc="evaluating", disable=None) as bar:
        def progress(run: Evaluation) -> None:
            bar.update(run.done_items - bar.n)

        return hub.wait_evaluation(evaluation.id, timeout=timeout, progress=progress)


def format_summary(run: Evaluation) -> str:
    """The summary table: pass rate and mean score per evaluator."""
    where = f"run {run.run!r}" if run.target == "live" else "snapshot"
    total, passed = (run.items.total, run.items.passed) if run.items else (run.item_count, 0)
    lines = [f"Evaluation {run.id} of set {run.dataset!r} ({where}): "
             f"{total} item(s), {passed} passed every evaluator — {run.status}", ""]
    lines.append(f"{'evaluator':<24}{'pass rate':>10}{'mean score':>12}{'passed':>8}"
                 f"{'failed':>8}{'errors':>8}")
    for a in run.aggregates:
        rate = f"{a.pass_rate * 100:.1f}%" if a.pass_rate is not None else "-"
        mean = f"{a.mean_score:.2f}" if a.mean_score is not None else "-"
        lines.append(f"{a.evaluator:<24}{rate:>10}{mean:>12}{a.passed:>8}"
                     f"{a.failed:>8}{a.errors:>8}")
    return "\n".join(lines)


def format_failures(results: list[EvaluationResult]) -> str:
    """Each failure with its reason, by item (seed 001's formatResult, docs/evaluators.md)."""
    lines: list[str] = []
    current = None
    for r in results:
        if r.item_id != current:
            current = r.item_id
            lines.append(f"\nitem {r.item_id} (trace {r.trace_id or '-'})")
        if r.error is not None:
            lines.append(f"⚠️  {r.evaluator}: error: {r.error}")
        else:
            lines.append((r.explanation or "").rstrip("\n"))
    return "\n".join(lines)


def _eval(args: argparse.Namespace) -> int:
    target = args.target or ("live" if args.run else "snapshot")
    evaluators = [_evaluator(e) for e in args.evaluator]
    with connect(args) as hub:
        started = hub.create_evaluation(args.set, evaluators, target=target, run=args.run)
        run = _wait(hub, started, args.timeout)
        failures = list(hub.iter_results(run.id, failed=True))
    print(format_summary(run))
    if run.status == "failed":
        print(f"\nthe evaluation failed: {run.error}")
        return 2
    if failures:
        print(f"\nFailures ({len(failures)}):" + format_failures(failures))
        return 1
    print("\nall items passed")
    return 0


# --- wiring --------------------------------------------------------------------------------

def register(sub: Any) -> None:
    """Add `dataset` and `eval` to the `trajhub` subcommands."""
    ds = Command(sub, "dataset", help="manage datasets on a running server",
                 description="Create, fill, export and import datasets "
                             "through a running trajhub server's REST API.")

    p = ds.action("create", _create, help="create a set")
    p.add_argument("name")
    p.add_argument("--description", default="")

    p = ds.action("list", _list, help="list the sets")
    p.add_argument("--json", action="store_true", help="print JSON instead of a table")

    p = ds.action("show", _show, help="a set and its items")
    p.add_argument("name")

    p = ds.action("rename", _rename, help="rename a set")
    p.add_argument("name")
    p.add_argument("new_name")

    p = ds.action("delete", _delete, help="delete a set and its items")
    p.add_argument("name")

    p = ds.action(
        "fill", _fill, help="add trajectories, by id or by query",
        description="Add final trajectories to a set, pre-filling each item's expectations "
                    "from what the run did. Query keys are the filters of GET "
                    "/api/v1/trajectories, e.g. --query agent=LangGraph --query "
                    "failed_tool_steps=false --query start=2025-06-01T00:00:00Z.")
    p.add_argument("name")
    p.add_argument("--trace-id", action="append", help="a trajectory to add (repeatable)")
    p.add_argument("--query", "-q", action="append", metavar="KEY=VALUE",
                   help="a trajectory filter (repeatable)")
    p.add_argument("--sample-rate", type=float, default=1.0,
                   help="fraction of the matches to add, stable across re-fills (default 1)")
    p.add_argument("--limit", type=int, default=100, help="add at most this many (default 100)")
    p.add_argument("--tag", action="append", help="tag the added items (repeatable)")

    p = ds.action("export", _export, help="export a set to a file")
    p.add_argument("name")
    p.add_argument("-o", "--output", required=True, help="the file to write; - for stdout")
    p.add_argument("--format", choices=("jsonl", "csv", "agentevals", "atif"), default="jsonl",
                   help="jsonl (re-importable), csv, agentevals message lists, or atif "
                        "(one ATIF-v1.8 trajectory per item, docs/atif.md)")

    p = ds.action("import", _import, help="import items from trajhub JSONL")
    p.add_argument("name")
    p.add_argument("file", help="trajhub JSONL, as `dataset export` writes it; - for stdin")
    p.add_argument("--create", action="store_true", help="create the set if it is missing")

    ev = sub.add_parser(
        "eval", parents=[server_options()], help="evaluate a set and print the results",
        description="Run evaluators over a set on a running server and print a summary table "
                    "(pass rate, mean score per evaluator) and each failure with its reason. "
                    "Exit status: 0 all passed, 1 some item failed or hit an error, 2 the "
                    "evaluation could not run.")
    ev.add_argument("set", help="the dataset")
    ev.add_argument("--evaluator", "-e", action="append", required=True,
                    metavar="NAME[=JSON]",
                    help="expected_agents_tools, tool_call_accuracy, trajectory_match, "
                         "graph_trajectory_match, efficiency, llm_judge, trajectory_judge, "
                         "tool_choice_judge; options as JSON, e.g. "
                         "'trajectory_match={\"mode\": \"unordered\"}' (repeatable)")
    ev.add_argument("--run", help="evaluate the live run of this name (the traces tagged "
                                  "trajhub.run=NAME) instead of the stored snapshots")
    ev.add_argument("--target", choices=("snapshot", "live"),
                    help="default: live with --run, else snapshot")
    ev.add_argument("--timeout", type=float, default=3600,
                    help="seconds to wait for the evaluation (default 3600)")
    ev.set_defaults(func=_eval)
