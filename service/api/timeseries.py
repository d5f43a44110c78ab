"""REST: monitoring's time series (`GET /api/v1/timeseries`), read from the rollups kept as runs
become final (storage/timeseries_reads.py, docs/monitoring.md)."""

from __future__ import annotations

from collections import defaultdict
from typing import Annotated, Any

from fastapi import APIRouter, HTTPException, Query

from trajhub.records.times import rfc3339
from trajhub.records.timeseries import (
    BUCKET_NS,
    FILTERS,
    MAX_POINTS,
    QUANTILES,
    TimeSeries,
    TimeSeriesQuery,
)
from trajhub.service.api.answers import CheckedRoute
from trajhub.service.api.params import PREFIX, parse_time
from trajhub.service.api.scopes import Project, Rt
from trajhub.storage import timeseries_reads
from trajhub.storage.timeseries_reads import SeriesFilter, as_float, quantile

router = APIRouter(prefix=PREFIX, route_class=CheckedRoute, tags=["monitoring"])

def series_filter(project: str, query: TimeSeriesQuery) -> SeriesFilter:
    """The query's range rounded out to whole buckets, checked: a 400 names what is wrong."""
    start, end = parse_time(query.start, "start"), parse_time(query.end, "end")
    assert start is not None and end is not None
    if end <= start:
        raise HTTPException(400, f"end ({query.end}) must be later than start ({query.start})")
    width = BUCKET_NS[query.bucket]
    start -= start % width
    end += -end % width
    points = (end - start) // width
    if points > MAX_POINTS:
        raise HTTPException(400, f"the range spans {points:,} {query.bucket} buckets; at most "
                                 f"{MAX_POINTS:,}: narrow the range or take a wider bucket")
    values = {name: v for name in FILTERS if (v := getattr(query, name)) is not None}
    return SeriesFilter(project, start, end, width, query.group_by, values)


def _answer(query: TimeSeriesQuery, f: SeriesFilter, figures: list[Any], scores: list[Any]
            ) -> dict[str, Any]:
    by_point: dict[tuple[int, str | None], list[dict[str, Any]]] = defaultdict(list)
    for s in scores:
        total = as_float(s["total"])
        by_point[(s["at_ns"], s["label"])].append({
            "name": s["name"], "count": s["scores"], "sum": total,
            "mean": total / s["scores"] if s["scores"] else None})
    groups: dict[str | None, list[tuple[int, dict[str, Any]]]] = defaultdict(list)
    for r in figures:
        counts = list(r["latency_counts"])
        groups[r["label"]].append((r["at_ns"], {
            "time": rfc3339(r["at_ns"]), "runs": r["runs"], "failed_runs": r["failed_runs"],
            **{f"latency_{name}_ms": quantile(counts, q) for name, q in QUANTILES.items()},
            **{c: int(r[c]) for c in ("input_tokens", "output_tokens", "cache_read_tokens",
                                      "cache_write_tokens", "reasoning_tokens")},
            "cost_usd": as_float(r["usd"]),
            "scores": sorted(by_point.get((r["at_ns"], r["label"]), []),
                             key=lambda p: p["name"])}))
    # by group, the runs without the label last; each group's points oldest first
    series = [{"group": label, "points": [p for _, p in sorted(points, key=lambda p: p[0])]}
              for label, points in sorted(groups.items(),
                                          key=lambda g: (g[0] is None, g[0] or ""))]
    return {"bucket": query.bucket, "start_time": rfc3339(f.start_ns),
            "end_time": rfc3339(f.end_ns), "group_by": query.group_by, "series": series}


@router.get("/timeseries", response_model=TimeSeries,
            summary="Runs, failures, latency, tokens, cost and scores over time")
async def timeseries(rt: Rt, project: Project,
                     query: Annotated[TimeSeriesQuery, Query()]) -> Any:
    """The project's final runs in buckets of a minute, an hour or a day, by when they started,
    from the rollups kept as runs become final (a run counts once it is final). Filters:
    run name, agent, model, release (the resource's `service.version`) and prompt version;
    the trajectory list's other filters are not rollup labels. Latency quantiles are within
    5 %; cost is priced when each run was derived."""
    f = series_filter(project, query)
    async with rt.db.acquire() as conn:
        figures, scores = await timeseries_reads.series(conn, f)
    return _answer(query, f, figures, scores)
