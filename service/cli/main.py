"""The `trajhub` command: argument parsing and the one place where errors become exit codes."""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import sys
from pathlib import Path

from trajhub import __version__
from trajhub.service import config, logs
from trajhub.service.cli import alerts as cli_alerts
from trajhub.service.cli import atif as cli_atif
from trajhub.service.cli import datasets as cli_datasets
from trajhub.service.cli import keys as cli_keys
from trajhub.service.cli import reads as cli_reads
from trajhub.service.cli import replay as cli_replay
from trajhub.service.cli import retention as cli_retention
from trajhub.service.cli import review as cli_review
from trajhub.service.cli import rules as cli_rules
from trajhub.service.cli import scores as cli_scores
from trajhub.service.cli import sessions as cli_sessions
from trajhub.service.cli import timeseries as cli_timeseries
from trajhub.service.cli.common import USAGE_ERROR, ArgumentParser, CliError
from trajhub.service.client.api import TrajhubError


def _serve(args: argparse.Namespace) -> int:
    # trajhub never forks a process that uses gRPC (its workers are spawned); without this,
    # gRPC logs a warning each time the embedded PostgreSQL's tooling forks
    os.environ.setdefault("GRPC_ENABLE_FORK_SUPPORT", "false")
    settings = config.settings_from(args)
    if not settings.database_url:
        _check_data_dir(settings.data_dir)
    from trajhub.service.server import serve

    logs.configure(settings.log_level, settings.log_format)
    for line in config.deprecated_env_in_use():
        logging.getLogger("trajhub").warning("%s", line)
    asyncio.run(serve(settings))
    return 0


def _check_data_dir(path: str) -> None:
    """The embedded PostgreSQL's directory must be creatable and writable; say so up front
    rather than fail inside its startup."""
    try:
        Path(path).mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise CliError(f"cannot use the data directory {path}: {exc.strerror or exc}") from None
    if not os.access(path, os.W_OK | os.X_OK):
        raise CliError(f"cannot use the data directory {path}: permission denied")


def _rederive(args: argparse.Namespace) -> int:
    settings = config.settings_from(args)
    from trajhub.service.cli.admin import database_label, rederive

    logs.configure(settings.log_level, settings.log_format)
    count = asyncio.run(rederive(settings, args.project, args.since, args.outdated))
    print(f"queued {count} trace(s) for re-derivation in {database_label(settings)}; a running "
          "`trajhub serve` on that database derives them")
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = ArgumentParser(
        prog="trajhub",
        description="OpenTelemetry trace ingestion for LLM agents: spans in, trajectories out.")
    parser.add_argument("--version", action="version", version=f"trajhub {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    serve = sub.add_parser(
        "serve", help="run the receivers, the REST API and the derivation worker",
        description="Receive OTLP over gRPC and HTTP and the Coze Loop ingest API, store every "
                    "span in PostgreSQL, derive trajectories, and serve the REST API "
                    "(/api/v1, docs at /docs) and the web UI (at /; its address is printed "
                    "when the server is ready). Every setting below can also be set through "
                    "the environment variable named with it; a flag wins over the variable.")
    config.add_arguments(serve)
    serve.set_defaults(func=_serve)

    rederive = sub.add_parser(
        "rederive", help="rebuild stored trajectories from the raw spans",
        description="Queue stored traces for re-derivation (e.g. after upgrading trajhub's "
                    "normalizers); a running `trajhub serve` on the same database derives them. "
                    "Works on the database directly, not through a server; it prints which "
                    "database it used.")
    config.add_arguments(rederive, only=("database_url", "data_dir", "log_level", "log_format"))
    rederive.add_argument("--project", help="only this project (default: all)")
    rederive.add_argument("--since", help="only traces starting at or after this time "
                          "(RFC 3339 or Unix ns)")
    rederive.add_argument("--outdated", action="store_true",
                          help="only trajectories built by another normalizer version")
    rederive.set_defaults(func=_rederive)

    cli_reads.register(sub)
    cli_sessions.register(sub)
    cli_datasets.register(sub)
    cli_replay.register(sub)
    cli_keys.register(sub)
    cli_retention.register(sub)
    cli_timeseries.register(sub)
    cli_scores.register(sub)
    cli_review.register(sub)
    cli_atif.register(sub)
    cli_rules.register(sub)
    cli_alerts.register(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Run one command. A user mistake (a bad flag or value, a missing file, an unreachable
    server, an error answer from it) is one line on stderr and exit status 2."""
    args = build_parser().parse_args(argv)
    try:
        return int(args.func(args))
    except (CliError, TrajhubError, config.SettingsError) as exc:
        print(f"trajhub: {exc}", file=sys.stderr)
        return USAGE_ERROR
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        # the reader went away (`trajhub traces list | head`): stop quietly, as cat does
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1


if __name__ == "__main__":
    sys.exit(main())
