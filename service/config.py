"""Settings of `trajhub serve`: each has a flag and an environment variable (flags win)."""

from __future__ import annotations

import argparse
import functools
import os
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

MIB = 1024 * 1024


def _default_data_dir() -> str:
    return str(Path.home() / ".trajhub")


@dataclass(frozen=True)
class Settings:
    host: str = field(default="127.0.0.1", metadata={
        "env": "TRAJHUB_HOST", "help": "address both servers listen on"})
    http_port: int = field(default=4318, metadata={
        "env": "TRAJHUB_HTTP_PORT",
        "help": "HTTP port: OTLP /v1/traces, Coze Loop /v1/loop/*, REST /api/v1, /docs; "
                "0 picks a free port (logged)"})
    grpc_port: int = field(default=4317, metadata={
        "env": "TRAJHUB_GRPC_PORT", "help": "OTLP/gRPC port; 0 picks a free port (logged)"})
    database_url: str = field(default="", metadata={
        "env": "TRAJHUB_DATABASE_URL",
        "help": "PostgreSQL URL; empty starts an embedded PostgreSQL in the data directory"})
    data_dir: str = field(default_factory=_default_data_dir, metadata={
        "env": "TRAJHUB_DATA_DIR", "help": "where the embedded PostgreSQL keeps its data"})
    max_request_bytes: int = field(default=64 * MIB, metadata={
        "env": "TRAJHUB_MAX_REQUEST_BYTES",
        "help": "largest request body after decompression (HTTP 413 / gRPC RESOURCE_EXHAUSTED "
                "beyond)"})
    ingest_workers: int = field(default=4, metadata={
        "env": "TRAJHUB_INGEST_WORKERS", "help": "processes that decode and store spans"})
    max_inflight_requests: int = field(default=32, metadata={
        "env": "TRAJHUB_MAX_INFLIGHT_REQUESTS",
        "help": "ingest requests in progress before new ones get 503 / UNAVAILABLE"})
    settle_seconds: float = field(default=3.0, metadata={
        "env": "TRAJHUB_SETTLE_SECONDS",
        "help": "quiet time after a trace's last span before its trajectory is final"})
    assembly_workers: int = field(default=1, metadata={
        "env": "TRAJHUB_ASSEMBLY_WORKERS",
        "help": "processes that derive trajectories, at low CPU priority; more derive faster "
                "but take PostgreSQL time from ingestion"})
    assembly_interval_seconds: float = field(default=0.2, metadata={
        "env": "TRAJHUB_ASSEMBLY_INTERVAL_SECONDS",
        "help": "how often the trajectory worker looks for new spans when idle"})
    shutdown_timeout: float = field(default=10.0, metadata={
        "env": "TRAJHUB_SHUTDOWN_TIMEOUT",
        "help": "seconds a shutdown waits for requests in flight; then slow clients are cut off "
                "(a body still arriving gets no answer, never a 200)"})
    cors_origins: str = field(default="", metadata={
        "env": "TRAJHUB_CORS_ORIGINS",
        "help": "comma-separated origins allowed to POST from a browser (CORS off when empty)"})
    judge_url: str = field(default="", metadata={
        "env": "TRAJHUB_JUDGE_URL",
        "help": "OpenAI-compatible base URL for the llm_judge evaluator (off when empty)"})
    judge_model: str = field(default="", metadata={
        "env": "TRAJHUB_JUDGE_MODEL", "help": "model name for the llm_judge evaluator"})
    judge_api_key: str = field(default="", metadata={
        "env": "TRAJHUB_JUDGE_API_KEY", "help": "API key for the llm_judge evaluator"})
    log_level: str = field(default="info", metadata={
        "env": "TRAJHUB_LOG_LEVEL", "help": "debug, info, warning or error"})

    @property
    def cors_origin_list(self) -> list[str]:
        return [o.strip() for o in self.cors_origins.split(",") if o.strip()]


def _convert(kind: Any, raw: str) -> Any:
    if kind in (int, "int"):
        return int(raw)
    if kind in (float, "float"):
        return float(raw)
    return raw


def add_arguments(parser: argparse.ArgumentParser, only: tuple[str, ...] | None = None) -> None:
    """One --flag per setting, its default taken from the environment."""
    defaults = Settings()
    for f in fields(Settings):
        if only is not None and f.name not in only:
            continue
        env = f.metadata["env"]
        default = getattr(defaults, f.name)
        shown = default if f.name != "judge_api_key" else "(hidden)"
        parser.add_argument(
            "--" + f.name.replace("_", "-"),
            dest=f.name,
            default=None,
            type=functools.partial(_convert, f.type),
            help=f"{f.metadata['help']} [env {env}; default {shown!s}]",
        )


def settings_from(args: argparse.Namespace | None = None, env: dict[str, str] | None = None
                  ) -> Settings:
    """Flags, else environment variables, else defaults."""
    env = dict(os.environ) if env is None else env
    values: dict[str, Any] = {}
    for f in fields(Settings):
        flag = getattr(args, f.name, None) if args is not None else None
        if flag is not None:
            values[f.name] = flag
        elif f.metadata["env"] in env:
            try:
                values[f.name] = _convert(f.type, env[f.metadata["env"]])
            except ValueError:
                raise SystemExit(
                    f"trajhub: {f.metadata['env']}={env[f.metadata['env']]!r} is not a valid "
                    f"{f.type}") from None
    return Settings(**values)
