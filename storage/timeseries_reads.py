"""Reads of monitoring's time series (docs/monitoring.md): hour and day buckets sum the hourly
rollups (`run_rollups`, `run_rollup_scores`); minute buckets sum the runs' own contributions
(`rollup_contributions`), which the same corrections keep and which a minute range (at most
10,000 minutes, a week) reads through their (project, start_ns) index. Keeping a second rollup
per minute would have cost the finalize statement one more upsert for a view only short ranges
use."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from trajhub.storage.database import Connection
from trajhub.storage.sql import Params

#: the latency buckets' ratio (migration 0080, trajhub_latency_bucket)
GAMMA = 1.1

_FIGURES = ("input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens",
            "reasoning_tokens", "usd")
_LABELS = ("run_name", "agents", "models", "release", "prompt_version")

_HOURLY = ("SELECT hour_ns AS at_ns, {labels}, runs, failed_runs, latency_counts, {figures} "
           "FROM run_rollups r WHERE {where}").format(
    labels=", ".join(_LABELS), figures=", ".join(_FIGURES), where="{where}")
_PER_RUN = ("SELECT start_ns AS at_ns, {labels}, 1 AS runs, failed::integer AS failed_runs, "
            "trajhub_bucket_counts(trajhub_latency_bucket(duration_ms), 1) AS latency_counts, "
            "{figures} FROM rollup_contributions r WHERE {where}").format(
    labels=", ".join(_LABELS), figures=", ".join(_FIGURES), where="{where}")
_HOURLY_SCORES = ("SELECT hour_ns AS at_ns, {labels}, name, scores, total "
                  "FROM run_rollup_scores r WHERE {where}").format(
    labels=", ".join(_LABELS), where="{where}")
_PER_RUN_SCORES = ("SELECT r.start_ns AS at_ns, {labels}, s.name, "
                   "(s.number_value IS NOT NULL)::integer AS scores, "
                   "coalesce(s.number_value::numeric, 0) AS total FROM rollup_contributions r "
                   "JOIN scores s ON s.project = r.project AND s.trace_id = r.trace_id "
                   "WHERE {where}").format(
    labels=", ".join(f"r.{c}" for c in _LABELS), where="{where}")

#: a group's label, by group-by: a set label (models, agents) counts a run in each of its values
_GROUPS = {
    None: ("NULL::text", ""),
    "run_name": ("nullif(r.run_name, '')", ""),
    "release": ("nullif(r.release, '')", ""),
    "prompt_version": ("nullif(r.prompt_version, '')", ""),
    "model": ("g.label", " CROSS JOIN LATERAL unnest(CASE WHEN r.models = '{}' "
                         "THEN ARRAY[NULL::text] ELSE r.models END) AS g(label)"),
    "agent": ("g.label", " CROSS JOIN LATERAL unnest(CASE WHEN r.agents = '{}' "
                         "THEN ARRAY[NULL::text] ELSE r.agents END) AS g(label)"),
}

#: filter → its condition over a rollup row (agent and model as the trajectory list has them)
_FILTERS = {
    "run_name": "r.run_name = {}",
    "release": "r.release = {}",
    "prompt_version": "r.prompt_version = {}",
    "agent": "trajhub_lower_all(r.agents) @> ARRAY[lower({})]",
    "model": "trajhub_lower_all(r.models) @> ARRAY[lower({})]",
}


@dataclass(frozen=True)
class SeriesFilter:
    project: str
    start_ns: int
    end_ns: int
    width_ns: int
    group_by: str | None
    #: filter name (a key of _FILTERS) → its value
    values: Mapping[str, str]


def _sql(source: str, f: SeriesFilter, arg: Params, per_row: str, extra_group: str = ""
         ) -> str:
    time_column = "start_ns" if "rollup_contributions" in source else "hour_ns"
    where = [f"r.project = {arg(f.project)}", f"r.{time_column} >= {arg(f.start_ns)}",
             f"r.{time_column} < {arg(f.end_ns)}"]
    where += [_FILTERS[name].format(arg(value)) for name, value in sorted(f.values.items())]
    label, lateral = _GROUPS[f.group_by]
    width = arg(f.width_ns)
    return (f"SELECT r.at_ns - ((r.at_ns % {width}) + {width}) % {width} AS at_ns, "
            f"{label} AS label{extra_group and ', ' + extra_group}, {per_row} "
            f"FROM ({source.format(where=' AND '.join(where))}) r{lateral} "
            f"GROUP BY 1, 2{extra_group and ', 3'}")


async def series(conn: Connection, f: SeriesFilter) -> tuple[list[Any], list[Any]]:
    """The buckets' figures (at_ns, label, runs, failed_runs, latency_counts, tokens, usd) and
    their scores (at_ns, label, name, scores, total), each row a bucket of one group."""
    minute = f.width_ns < 3_600_000_000_000
    arg = Params()
    figures = await conn.fetch(
        _sql(_PER_RUN if minute else _HOURLY, f, arg,
             "sum(runs)::bigint AS runs, sum(failed_runs)::bigint AS failed_runs, "
             "trajhub_sum_counts(latency_counts) AS latency_counts, "
             + ", ".join(f"sum({c}) AS {c}" for c in _FIGURES))
        + " HAVING sum(runs) <> 0", *arg.values)
    arg = Params()
    scores = await conn.fetch(
        _sql(_PER_RUN_SCORES if minute else _HOURLY_SCORES, f, arg,
             "sum(scores)::bigint AS scores, sum(total) AS total", extra_group="r.name")
        + " HAVING sum(scores) <> 0", *arg.values)
    return figures, scores


def quantile(counts: Sequence[int], q: float) -> float | None:
    """The q-quantile (nearest rank) of durations counted by latency bucket (element i =
    bucket i): the bucket's representative, 2·γ^b / (γ + 1), within (γ − 1) / (γ + 1) < 4.8 %
    of every duration in it; None without any."""
    total = sum(counts)
    if total <= 0:
        return None
    rank, seen = max(1, math.ceil(q * total)), 0
    for b, n in enumerate(counts):
        seen += n
        if seen >= rank:
            return 0.0 if b == 0 else 2 * GAMMA ** b / (GAMMA + 1)
    return None


def as_float(value: Decimal | float | int | None) -> float:
    return 0.0 if value is None else float(value)
