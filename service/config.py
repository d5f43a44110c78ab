"""Settings of `trajhub serve`: one typed object; each setting has a flag and an environment
variable `TRAJHUB_<NAME>` (flags win over the environment, which wins over the default)."""

from __future__ import annotations

import argparse
import os
from datetime import timedelta
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BeforeValidator, Field, ValidationError
from pydantic_settings import BaseSettings, SettingsConfigDict

MIB = 1024 * 1024
ENV_PREFIX = "TRAJHUB_"

Port = Annotated[int, Field(ge=0, le=65535)]


def _default_data_dir() -> str:
    return str(Path.home() / ".trajhub")


def _derive_mode(value: object) -> object:
    """`TRAJHUB_DERIVE_AT_INGEST` was a boolean: its spellings still mean always / never."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        lowered = value.strip().lower()
        if lowered in ("1", "yes", "on", "true"):
            return "true"
        if lowered in ("0", "no", "off", "false"):
            return "false"
        return lowered
    return value


#: TRAJHUB_DERIVE_AT_INGEST: "auto" (by load), "true" (always) or "false" (never)
DeriveAtIngest = Annotated[Literal["auto", "true", "false"], BeforeValidator(_derive_mode)]


class SettingsError(ValueError):
    """A setting's value is invalid; the message names the flag or variable and the problem."""


class Settings(BaseSettings):
    """Every setting of the server. The field's description is its `--help` text."""

    model_config = SettingsConfigDict(env_prefix=ENV_PREFIX, frozen=True, extra="ignore")

    host: str = Field("127.0.0.1", description="address both servers listen on")
    http_port: Port = Field(4318, description=(
        "HTTP port: OTLP /v1/traces, /v1/logs and /v1/metrics, Coze Loop /v1/loop/*, REST "
        "/api/v1, /docs; 0 picks a free port (logged)"))
    grpc_port: Port = Field(4317, description="OTLP/gRPC port; 0 picks a free port (logged)")
    database_url: str = Field("", description=(
        "PostgreSQL URL; empty starts an embedded PostgreSQL in the data directory"))
    data_dir: str = Field(default_factory=_default_data_dir,
                          description="where the embedded PostgreSQL keeps its data")
    max_request_bytes: int = Field(64 * MIB, gt=0, description=(
        "largest request body after decompression (HTTP 413 / gRPC RESOURCE_EXHAUSTED beyond)"))
    ingest_workers: int = Field(4, ge=1, description="processes that decode and store spans")
    max_inflight_requests: int = Field(32, ge=1, description=(
        "ingest requests in progress before new ones get 503 / UNAVAILABLE"))
    settle_seconds: float = Field(3.0, ge=0, description=(
        "quiet time after a trace's last span before its trajectory is final"))
    derive_at_ingest: DeriveAtIngest = Field("auto", description=(
        "auto: ingest workers derive the traces a request carries whole before acknowledging it "
        "while ingest has headroom, and queue them for the derivation workers while it is "
        "saturated (README, Ingest); true: always derive at ingest, so trajectories never lag "
        "the spans; false: always queue (true/false also accept 1/0, yes/no, on/off)"))
    derivation_workers: int = Field(1, ge=1, description=(
        "processes that derive trajectories of traces split across requests (all traces with "
        "TRAJHUB_DERIVE_AT_INGEST=false), at low CPU priority"))
    derivation_interval_seconds: float = Field(0.2, gt=0, description=(
        "how often the derivation worker looks for new spans when idle"))
    shutdown_timeout: float = Field(10.0, ge=0, description=(
        "seconds a shutdown waits for requests in flight; then slow clients are cut off (a body "
        "still arriving gets no answer, never a 200)"))
    cors_origins: str = Field("", description=(
        "comma-separated origins allowed to POST from a browser (CORS off when empty)"))
    judge_url: str = Field("", description=(
        "default OpenAI-compatible base URL of the LLM judges (llm_judge, trajectory_judge, "
        "tool_choice_judge); an evaluation may give its own"))
    judge_model: str = Field("", description="default model name of the LLM judges")
    judge_api_key: str = Field("", description=(
        "API key sent to TRAJHUB_JUDGE_URL only (an evaluation with another endpoint names its "
        "key's variable, TRAJHUB_JUDGE_KEY_<NAME>)"), repr=False)
    prices: str = Field("", description=(
        "JSON model price table (USD per 1M tokens) whose entries win over genai-prices' "
        "bundled prices (docs/costs.md §2)"))
    auth: Literal["auto", "on", "off"] = Field("auto", description=(
        "API keys: on, off, or auto = on when HOST is not a loopback address (see `trajhub keys`)"
    ))
    bootstrap_key: str = Field("", description=(
        "a key accepted as an admin key of every project (the operator's, from a secret); "
        "use it to create per-project keys"), repr=False)
    metrics_public: bool = Field(False, description=(
        "true serves /metrics to anyone, also with auth on (for a Prometheus that scrapes "
        "without credentials); false: with auth on, a scrape needs a key of scope `metrics`"))
    log_level: str = Field("info", pattern=r"(?i)^(debug|info|warning|error)$",
                           description="debug, info, warning or error")
    retention_days: float = Field(0, ge=0, description=(
        "delete traces (spans, trajectories, derivation state) whose spans last arrived more "
        "than this many days ago (fractions allowed); 0 keeps everything; a project may "
        "override it (`trajhub retention set`)"))
    retention_interval_seconds: float = Field(300, gt=0, description=(
        "how often the retention sweep runs (it also creates the time partitions ahead)"))
    partition_minutes: float = Field(1440, ge=1 / 60, description=(
        "the width of the time partitions of spans, traces and trajectories, in minutes "
        "(1440: daily); retention drops whole partitions. A change applies to the partitions "
        "created from then on"))
    alert_interval_seconds: float = Field(60, gt=0, le=86400, description=(
        "how often each enabled, unmuted alert rule is evaluated (docs/alerts.md)"))
    public_url: str = Field("", description=(
        "this server's address as people and alert webhooks' receivers reach it, for the links "
        "in alert notifications (empty: the address it listens on)"))
    log_format: str = Field("text", pattern=r"^(text|json)$", description=(
        "text (one line per record) or json (one JSON object per line); trajhub, its workers "
        "and uvicorn all log in it"))

    @property
    def partition_width(self) -> timedelta:
        # whole seconds: partitions are named after their start to the second
        return timedelta(seconds=max(1, round(self.partition_minutes * 60)))

    @property
    def cors_origin_list(self) -> list[str]:
        return [o.strip() for o in self.cors_origins.split(",") if o.strip()]


def env_name(name: str) -> str:
    """The environment variable of setting `name`."""
    return ENV_PREFIX + name.upper()


def flag_name(name: str) -> str:
    """The command-line flag of setting `name`."""
    return "--" + name.replace("_", "-")


def _shown_default(name: str) -> str:
    field = Settings.model_fields[name]
    if not field.repr:  # a secret: never printed
        return "(hidden)"
    if name == "data_dir":
        return "~/.trajhub"
    default = field.get_default(call_default_factory=True)
    return "(empty)" if default == "" else str(default)


def add_arguments(parser: argparse.ArgumentParser, only: tuple[str, ...] | None = None) -> None:
    """One --flag per setting (or per setting named in `only`). Values stay strings here so that
    `settings_from` validates flags and environment variables alike, with the same messages."""
    for name, field in Settings.model_fields.items():
        if only is not None and name not in only:
            continue
        parser.add_argument(
            flag_name(name), dest=name, default=None,
            help=f"{field.description} [env {env_name(name)}; default {_shown_default(name)}]")


#: settings renamed when the trajectory job got one name, derivation: old environment variable
#: → the setting it now sets. The old names keep working for one version, with a warning;
#: docs/glossary.md, "Deprecated names", is the one place the docs name them.
DEPRECATED_ENV = {
    "TRAJHUB_ASSEMBLY_WORKERS": "derivation_workers",
    "TRAJHUB_ASSEMBLY_INTERVAL_SECONDS": "derivation_interval_seconds",
}


def deprecated_env_in_use() -> list[str]:
    """One line per deprecated environment variable that is set, naming its replacement."""
    return [f"{old} is deprecated and will be removed; use {env_name(new)}"
            for old, new in DEPRECATED_ENV.items() if old in os.environ]


def settings_from(args: argparse.Namespace | None = None) -> Settings:
    """Flags, else environment variables, else defaults. An invalid value raises SettingsError
    naming where it came from: `--http-port 'x': …` or `TRAJHUB_HTTP_PORT='x': …`. A deprecated
    variable (`DEPRECATED_ENV`) sets its new setting unless the new variable or flag is given."""
    flags: dict[str, Any] = {}
    if args is not None:
        flags = {name: getattr(args, name) for name in Settings.model_fields
                 if getattr(args, name, None) is not None}
    for old, new in DEPRECATED_ENV.items():
        if old in os.environ and new not in flags and env_name(new) not in os.environ:
            flags[new] = os.environ[old]
    try:
        return Settings(**flags)
    except ValidationError as exc:
        raise SettingsError(_describe(exc, set(flags))) from None


def _describe(exc: ValidationError, from_flags: set[str]) -> str:
    problems = []
    for error in exc.errors(include_url=False):
        name = str(error["loc"][0]) if error["loc"] else "?"
        where = flag_name(name) if name in from_flags else env_name(name)
        value = error.get("input")
        shown = f"{where} {value!r}" if name in from_flags else f"{where}={value!r}"
        problems.append(f"{shown}: {_lower_first(error['msg'])}")
    return "; ".join(problems)


def _lower_first(text: str) -> str:
    return text[:1].lower() + text[1:]


__all__ = ["DEPRECATED_ENV", "Settings", "SettingsError", "add_arguments", "deprecated_env_in_use",
           "env_name", "flag_name", "settings_from"]
