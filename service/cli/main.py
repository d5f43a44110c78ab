"""The `trajhub` command."""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import sys

from trajhub import __version__
from trajhub.service import config
from trajhub.service.cli import datasets as cli_datasets
from trajhub.service.cli import replay as cli_replay


def _serve(args: argparse.Namespace) -> int:
    # trajhub never forks a process that uses gRPC (its workers are spawned); without this,
    # gRPC logs a warning each time the embedded PostgreSQL's tooling forks
    os.environ.setdefault("GRPC_ENABLE_FORK_SUPPORT", "false")
    from trajhub.service.server import serve

    settings = config.settings_from(args)
    logging.basicConfig(level=settings.log_level.upper(),
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    asyncio.run(serve(settings))
    return 0


def _rederive(args: argparse.Namespace) -> int:
    from trajhub.service.cli.admin import rederive

    settings = config.settings_from(args)
    logging.basicConfig(level=settings.log_level.upper())
    count = asyncio.run(rederive(settings, args.project, args.since, args.outdated))
    print(f"queued {count} trace(s) for re-derivation; a running `trajhub serve` derives them")
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="trajhub",
        description="OpenTelemetry trace ingestion for LLM agents: spans in, trajectories out.")
    parser.add_argument("--version", action="version", version=f"trajhub {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    serve = sub.add_parser(
        "serve", help="run the receivers, the REST API and the trajectory worker",
        description="Receive OTLP over gRPC and HTTP and the Coze Loop ingest API, store every "
                    "span in PostgreSQL, derive trajectories, and serve the REST API "
                    "(/api/v1, docs at /docs). Every setting below can also be set through "
                    "the environment variable named with it.")
    config.add_arguments(serve)
    serve.set_defaults(func=_serve)

    rederive = sub.add_parser(
        "rederive", help="rebuild stored trajectories from the raw spans",
        description="Queue stored traces for re-derivation (e.g. after upgrading trajhub's "
                    "normalizers); a running `trajhub serve` on the same database derives them.")
    config.add_arguments(rederive, only=("database_url", "data_dir", "log_level"))
    rederive.add_argument("--project", help="only this project (default: all)")
    rederive.add_argument("--since", help="only traces starting at or after this time "
                          "(RFC 3339 or Unix ns)")
    rederive.add_argument("--outdated", action="store_true",
                          help="only trajectories built by another normalizer version")
    rederive.set_defaults(func=_rederive)

    cli_datasets.register(sub)
    cli_replay.register(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    return int(args.func(args))


if __name__ == "__main__":
    sys.exit(main())
