"""Autovacuum's work done ahead of it, while the derivation has no backlog.

Autovacuum looks at each database about once a minute and vacuums or analyzes a table whose
changes since the last time passed a threshold. Rows arrive in bursts here, so the threshold is
mostly passed during a burst, and autovacuum then reads the day's partitions (the analyze of a
`trajectories` partition alone is 2-3 CPU-s) while the burst is being derived: in the benchmark
the runs it met cost a third more CPU per span (bench/README.md, "Autovacuum in the pipeline
runs, and a claim that took the whole queue"). An idle derivation worker therefore does that
work before autovacuum must: a table more than `AHEAD` of the way to one of autovacuum's
thresholds is vacuumed or analyzed, with the statement autovacuum would run and at its pace,
so that a burst seldom finds one passed. It is the same work done earlier, never work
autovacuum would not do: a table whose autovacuum is off (or every table, when it is off for
the server) is left alone. The thresholds are PostgreSQL's, per table (its storage parameters,
else the server's settings):

- vacuum, for dead rows: `n_dead_tup` > `autovacuum_vacuum_threshold` +
  `autovacuum_vacuum_scale_factor` × rows;
- vacuum, for inserted rows: `n_ins_since_vacuum` > `autovacuum_vacuum_insert_threshold` +
  `autovacuum_vacuum_insert_scale_factor` × rows (a threshold of -1 turns it off);
- analyze: `n_mod_since_analyze` > `autovacuum_analyze_threshold` +
  `autovacuum_analyze_scale_factor` × rows (never for a TOAST table, whose vacuum is its
  table's).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from trajhub.storage.database import Connection

#: a table is taken once its changes are this share of the way to autovacuum's threshold
AHEAD = 0.5

#: the server settings of the thresholds, which a table's storage parameters override
SETTINGS = ("autovacuum_vacuum_threshold", "autovacuum_vacuum_scale_factor",
            "autovacuum_vacuum_insert_threshold", "autovacuum_vacuum_insert_scale_factor",
            "autovacuum_analyze_threshold", "autovacuum_analyze_scale_factor")

# Every plain table (a partition is one) of the schema trajhub's tables are in that its role may
# vacuum (it owns them, or is a superuser), with its TOAST table's counters; the names are
# quoted as SQL needs them (regclass), so they go into the statement as they are.
_TABLES = """
SELECT c.oid::regclass::text AS name,
       greatest(c.reltuples, 0) AS rows, coalesce(c.reloptions, '{}') AS options,
       s.n_dead_tup AS dead, s.n_ins_since_vacuum AS inserted,
       s.n_mod_since_analyze AS modified,
       greatest(coalesce(tc.reltuples, 0), 0) AS toast_rows,
       coalesce(tc.reloptions, '{}') AS toast_options,
       coalesce(ts.n_dead_tup, 0) AS toast_dead,
       coalesce(ts.n_ins_since_vacuum, 0) AS toast_inserted
FROM pg_class c
JOIN pg_stat_all_tables s ON s.relid = c.oid
LEFT JOIN pg_class tc ON tc.oid = c.reltoastrelid
LEFT JOIN pg_stat_all_tables ts ON ts.relid = c.reltoastrelid
WHERE c.relkind = 'r' AND c.relnamespace = current_schema()::regnamespace
  AND pg_has_role(c.relowner, 'USAGE')  -- VACUUM skips, with a warning, tables it may not touch
"""

# autovacuum's pace (its cost delay and limit; -1: those of a manual VACUUM), so that the work
# done ahead weighs on the reads beside it no more than autovacuum's would
_PACE = """
SELECT set_config('vacuum_cost_delay', current_setting('autovacuum_vacuum_cost_delay'), false)
WHERE current_setting('autovacuum_vacuum_cost_delay') <> '-1'
UNION ALL
SELECT set_config('vacuum_cost_limit', current_setting('autovacuum_vacuum_cost_limit'), false)
WHERE current_setting('autovacuum_vacuum_cost_limit') <> '-1'
"""


@dataclass(frozen=True)
class Counters:
    """A table's (or its TOAST table's) changes since its last vacuum and analyze, with what
    its thresholds are computed from."""

    rows: float
    options: Mapping[str, str]
    dead: int
    inserted: int
    modified: int = 0


def options(reloptions: Sequence[str]) -> dict[str, str]:
    """Storage parameters as PostgreSQL lists them (`name=value`), by name."""
    return dict(o.split("=", 1) for o in reloptions if "=" in o)


def _share(count: int, counters: Counters, settings: Mapping[str, str], kind: str) -> float:
    """How far `count` is on the way to the `kind` threshold (1.0: autovacuum's is passed)."""
    def setting(name: str) -> float:
        return float(counters.options.get(name, settings[name]))

    base = setting(f"autovacuum_{kind}_threshold")
    if base < 0:  # autovacuum_vacuum_insert_threshold = -1: no vacuum for inserts
        return 0.0
    return count / (base + setting(f"autovacuum_{kind}_scale_factor") * counters.rows
                    or 1.0)


def _enabled(counters: Counters) -> bool:
    return counters.options.get("autovacuum_enabled", "true").lower() not in (
        "false", "off", "no", "0")


def due(table: Counters, toast: Counters, settings: Mapping[str, str]) -> tuple[float, float]:
    """How far `table` is on the way to its vacuum and to its analyze (1.0: autovacuum's
    threshold is passed); a vacuum's share is the larger of its table's and its TOAST
    table's, and 0 where autovacuum is off (a VACUUM of the table is a vacuum of both)."""
    if not _enabled(table):
        return 0.0, 0.0
    vacuum = max((max(_share(c.dead, c, settings, "vacuum"),
                      _share(c.inserted, c, settings, "vacuum_insert"))
                  for c in (table, toast) if _enabled(c)), default=0.0)
    return vacuum, _share(table.modified, table, settings, "analyze")


def statement(name: str, vacuum: float, analyze: float, ahead: float = AHEAD) -> str | None:
    """The statement that does what is `ahead` of the way for the table `name`, if any."""
    if vacuum >= ahead:
        # SKIP_LOCKED: another trajhub process (or autovacuum) is at it already
        return f"VACUUM (SKIP_LOCKED{', ANALYZE' if analyze >= ahead else ''}) {name}"
    if analyze >= ahead:
        return f"ANALYZE (SKIP_LOCKED) {name}"
    return None


async def step(conn: Connection, ahead: float = AHEAD) -> str | None:
    """Vacuum or analyze the table furthest on its way to autovacuum, if it is more than
    `ahead` of the way; returns the statement it ran. One table a step, so that a worker
    looks for new work between tables."""
    settings = {r["name"]: r["setting"] for r in await conn.fetch(
        "SELECT name, setting FROM pg_settings WHERE name = ANY($1::text[])",
        ["autovacuum", *SETTINGS])}
    if settings.get("autovacuum") != "on":
        return None
    best: tuple[float, str] | None = None
    for r in await conn.fetch(_TABLES):
        table = Counters(r["rows"], options(r["options"]), r["dead"], r["inserted"],
                         r["modified"])
        toast = Counters(r["toast_rows"], options(r["toast_options"]), r["toast_dead"],
                         r["toast_inserted"])
        vacuum, analyze = due(table, toast, settings)
        sql = statement(r["name"], vacuum, analyze, ahead)
        if sql is not None and (best is None or max(vacuum, analyze) > best[0]):
            best = (max(vacuum, analyze), sql)
    if best is None:
        return None
    await conn.execute(_PACE)
    await conn.execute(best[1])
    return best[1]
