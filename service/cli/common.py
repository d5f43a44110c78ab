"""What every `trajhub` subcommand shares: one-line errors, the server options, tables."""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Any, NoReturn, TypeVar

from pydantic import BaseModel

from trajhub.service.client.api import DEFAULT_URL, TrajhubClient

T = TypeVar("T")

#: exit status of a user mistake (argparse's own, for usage errors)
USAGE_ERROR = 2


class CliError(Exception):
    """A user mistake or an unmet precondition: printed as `trajhub: <message>`, exit 2."""


class ArgumentParser(argparse.ArgumentParser):
    """argparse, with a usage error on one line (plus where to get help) instead of the usage
    block and the error."""

    def error(self, message: str) -> NoReturn:
        self.exit(USAGE_ERROR, f"{self.prog}: {message} (see {self.prog} --help)\n")


def server_options() -> argparse.ArgumentParser:
    """The parent parser of every subcommand that talks to a running server."""
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--url", default=os.environ.get("TRAJHUB_URL", DEFAULT_URL),
                        help="the trajhub server [env TRAJHUB_URL; default %(default)s]")
    common.add_argument("--project", default=os.environ.get("TRAJHUB_PROJECT"),
                        help="project [env TRAJHUB_PROJECT; default: the server's `default`]")
    common.add_argument("--api-key", default=os.environ.get("TRAJHUB_API_KEY"),
                        help="API key (`trajhub keys create`), sent as a bearer token; needed "
                             "when the server runs with TRAJHUB_AUTH on [env TRAJHUB_API_KEY]")
    return common


class Command:
    """A `trajhub NAME ACTION` command: each ACTION's parser has the options of `parents`
    (default: the server options, for actions that talk to a running server) and runs its
    handler."""

    def __init__(self, sub: Any, name: str, *, help: str, description: str,
                 parents: Sequence[argparse.ArgumentParser] | None = None) -> None:
        self._parents = [server_options()] if parents is None else list(parents)
        command = sub.add_parser(name, help=help, description=description)
        self._actions = command.add_subparsers(dest=f"{name}_command", required=True,
                                               metavar="ACTION")

    def action(self, name: str, run: Handler, *, help: str, description: str | None = None
               ) -> argparse.ArgumentParser:
        """Add ACTION `name`, run by `run`; its own arguments go on the parser returned."""
        parser: argparse.ArgumentParser = self._actions.add_parser(
            name, parents=self._parents, help=help, description=description)
        parser.set_defaults(func=run)
        return parser


def connect(args: argparse.Namespace) -> TrajhubClient:
    return TrajhubClient(args.url, project=args.project, api_key=args.api_key)


def delete_action(delete: Callable[..., None], *keys: str, said: str) -> Handler:
    """The handler of a delete ACTION: `delete(client, *the arguments named by keys)`, then
    `said` printed, formatted with the arguments (`{name!r}`)."""
    def run(args: argparse.Namespace) -> int:
        with connect(args) as hub:
            delete(hub, *(getattr(args, key) for key in keys))
        print(said.format(**vars(args)))
        return 0
    return run


def switch_actions(switch: Callable[[TrajhubClient, Any, bool], T], key: str,
                   say: Callable[[T, str], None], verbs: tuple[str, str]
                   ) -> tuple[Handler, Handler]:
    """The handlers of the two ACTIONs that switch what the argument `key` names on and off
    (`switch(client, its value, True or False)`), each then saying what it is now
    (`say(what switch returned, verbs[0] for on or verbs[1] for off)`)."""
    def action(on: bool, verb: str) -> Handler:
        def run(args: argparse.Namespace) -> int:
            with connect(args) as hub:
                record = switch(hub, getattr(args, key), on)
            say(record, verb)
            return 0
        return run
    return action(True, verbs[0]), action(False, verbs[1])


def read_file(path: str) -> bytes:
    """The file's bytes; `-` reads standard input."""
    if path == "-":
        return sys.stdin.buffer.read()
    try:
        return Path(path).read_bytes()
    except OSError as exc:
        raise CliError(f"cannot read {path}: {exc.strerror or exc}") from None


@contextmanager
def output_file(path: str) -> Iterator[IO[bytes]]:
    """`path` opened for writing; `-` is standard output."""
    if path == "-":
        yield sys.stdout.buffer
        return
    try:
        out = Path(path).open("wb")  # noqa: SIM115 - closed by the with below
    except OSError as exc:
        raise CliError(f"cannot write {path}: {exc.strerror or exc}") from None
    with out:
        try:
            yield out
        except OSError as exc:  # e.g. the disk filled up while writing
            raise CliError(f"cannot write {path}: {exc.strerror or exc}") from None


def check_writable(path: str) -> None:
    """Fail before any work is done when `path` cannot be written."""
    if path == "-":
        return
    target = Path(path)
    parent = target.parent if str(target.parent) else Path(".")
    if target.is_dir():
        raise CliError(f"cannot write {path}: it is a directory")
    if not parent.is_dir():
        raise CliError(f"cannot write {path}: no directory {parent}")
    if not os.access(target if target.exists() else parent, os.W_OK):
        raise CliError(f"cannot write {path}: permission denied")


def print_json(value: Any) -> None:
    """`value` as indented JSON; an answer read into its model (trajhub.records) as the fields
    the server sent."""
    if isinstance(value, BaseModel):
        value = value.model_dump(mode="json", exclude_unset=True)
    print(json.dumps(value, indent=2, ensure_ascii=False, default=str))


def table(rows: Sequence[Sequence[Any]], header: Sequence[str],
          right: Sequence[int] = ()) -> str:
    """Columns padded to their widest cell; the columns in `right` (numbers) right-aligned."""
    cells = [[_cell(c) for c in row] for row in rows]
    widths = [max([len(h)] + [len(r[i]) for r in cells]) for i, h in enumerate(header)]

    def line(row: Sequence[str]) -> str:
        padded = [c.rjust(w) if i in right else c.ljust(w)
                  for i, (c, w) in enumerate(zip(row, widths, strict=True))]
        return "  ".join(padded).rstrip()

    return "\n".join([line(list(header)), *(line(r) for r in cells)])


def _cell(value: Any) -> str:
    if value is None or value == "" or value == []:
        return "-"
    if isinstance(value, list | tuple):
        return ",".join(str(v) for v in value)
    if isinstance(value, float):
        return f"{value:.1f}"
    return str(value).replace("\n", " ")


def clip(text: str | None, width: int) -> str | None:
    if text is None or len(text) <= width:
        return text
    return text[:width - 1] + "…"


def duration(ms: float | None) -> str:
    if ms is None:
        return "-"
    return f"{ms:.0f}ms" if ms < 1000 else f"{ms / 1000:.2f}s"


def when(iso: str | None) -> str:
    """An RFC 3339 time, short: `2025-06-01 12:00:03`."""
    if not iso:
        return "-"
    return iso.replace("T", " ")[:19]


Handler = Callable[[argparse.Namespace], int]
