"""`trajhub atif`: trajectories as ATIF files (docs/atif.md) — export one, import files."""

from __future__ import annotations

import argparse
import json
from typing import Any

from trajhub.service.cli.common import (
    CliError,
    Command,
    connect,
    output_file,
    read_file,
)


def _export(args: argparse.Namespace) -> int:
    with connect(args) as hub:
        document = hub.trajectory_atif(args.trace_id)
    with output_file(args.output) as out:
        out.write(json.dumps(document.model_dump(mode="json"), indent=2,
                             ensure_ascii=False).encode() + b"\n")
    return 0


def _import(args: argparse.Namespace) -> int:
    documents: list[tuple[str, Any]] = []
    for path in args.files:
        try:
            documents.append((path, json.loads(read_file(path))))
        except ValueError as exc:
            raise CliError(f"{path} is not JSON: {exc}") from None
    with connect(args) as hub:
        for path, document in documents:
            stored = hub.import_atif(document)
            print(f"{path}: trace {stored.trace_id} in project {stored.project} "
                  f"({stored.spans} spans)")
    return 0


def register(sub: Any) -> None:
    """Add `atif export` and `atif import` to the `trajhub` subcommands."""
    sub_atif = Command(
        sub, "atif", help="export and import trajectories as ATIF files",
        description="ATIF (Agent Trajectory Interchange Format, ATIF-v1.8) is Harbor's "
                    "trajectory format, which Phoenix imports. Export a stored trajectory as "
                    "one ATIF document, or import ATIF files as stored trajectories of a "
                    "project (viewed, compared and evaluated like ingested runs).")
    p = sub_atif.action("export", _export, help="one trajectory as an ATIF file")
    p.add_argument("trace_id")
    p.add_argument("-o", "--output", default="-", help="the file to write; - for stdout "
                                                       "(default)")
    p = sub_atif.action("import", _import, help="store ATIF files as trajectories",
                        description="Each file (one ATIF trajectory, ATIF-v1.0 to v1.8) "
                                    "becomes one stored trajectory; importing the same "
                                    "file again stores it once. Prints each trace id.")
    p.add_argument("files", nargs="+", help="ATIF JSON files; - for stdin")
