"""What an alert rule measures (docs/alerts.md): one aggregate of a project's final runs over a
window, read from the rollups' contributions (migration 0080: one row per final trajectory) and,
for a score's mean, the scores. The only SQL of the alerts that reads trace-keyed tables, in a
statement of its own (the alert tables are coordinator-local on Citus and never joined to them).
"""

from __future__ import annotations

from collections.abc import Mapping

from trajhub.storage.database import Connection

#: the conditions of a rule's filter over rollup_contributions (`c`), by filter name; each
#: takes one text parameter
_FILTERS = {
    "run_name": "c.run_name = {}",
    "agent": "{} = ANY(c.agents)",
    "model": "{} = ANY(c.models)",
    "release": "c.release = {}",
}
#: each metric's aggregate over the window's contributions (NULL when there is nothing to
#: measure: no runs, or no numeric score of that name)
_AGGREGATES = {
    "error_rate": "(count(*) FILTER (WHERE c.failed))::float8 / nullif(count(*), 0)",
    "p95_latency_ms": "percentile_cont(0.95) WITHIN GROUP (ORDER BY c.duration_ms)",
    "cost_usd": "CASE WHEN count(*) > 0 THEN sum(c.usd)::float8 END",
    "runs": "count(*)::float8",
    "score_mean": "avg(s.number_value)",
}


async def measure(conn: Connection, project: str, metric: str, score_name: str | None,
                  filters: Mapping[str, str], start_ns: int, end_ns: int) -> float | None:
    """The metric over the project's final runs that started in [start_ns, end_ns) and match
    `filters`; None when there is nothing to measure."""
    args: list[object] = [project, start_ns, end_ns]
    where = ["c.project = $1", "c.start_ns >= $2", "c.start_ns < $3"]
    for name, value in sorted(filters.items()):
        args.append(value)
        where.append(_FILTERS[name].format(f"${len(args)}"))
    source = "rollup_contributions c"
    if metric == "score_mean":
        args.append(score_name)
        # every numeric score of that name on the run (its steps' too), as the rollups count
        source += (" JOIN scores s ON s.project = c.project AND s.trace_id = c.trace_id "
                   f"AND s.name = ${len(args)} AND s.number_value IS NOT NULL")
    value = await conn.fetchval(
        f"SELECT {_AGGREGATES[metric]} FROM {source} WHERE {' AND '.join(where)}", *args)
    return None if value is None else float(value)
