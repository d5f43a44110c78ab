"""SQL of scores (migration 0035): add, list per trajectory or per set of trajectories, the
per-name means of a set, and delete. The columns are those trajhub.records.scores declares."""

from __future__ import annotations

import typing
from collections.abc import Mapping, Sequence
from typing import Any

from trajhub.records import Column, is_optional
from trajhub.records.scores import Score, ScoreConfig
from trajhub.storage import rollups, session_rows, trace_locks
from trajhub.storage.database import Connection
from trajhub.storage.rows import IdRow, RecordRow

#: the columns an insert takes from its caller, in declaration order (the key `trace_id`
#: first); `revision`, `id` and `created_ns` are the insert's own
WRITTEN: tuple[str, ...] = Score.write_columns("key", "service")


class ScoreRow(IdRow):
    """A stored score, as trajhub.records.scores declares it."""

    __slots__ = ()
    record = Score


def _pg_type(f: Column) -> str:
    """The PostgreSQL type of a written column, from its declared (stored) type."""
    annotation = f.stored_type if f.stored_type is not None else f.type
    if is_optional(annotation):
        annotation = next(a for a in typing.get_args(annotation) if a is not type(None))
    if typing.get_origin(annotation) is typing.Literal or annotation is str:
        return "text"
    return {int: "bigint", float: "double precision", bool: "boolean"}[annotation]


_FIELDS = {f.stored_column: f for f in Score.writes("key", "service")}
_TYPES = {c: _pg_type(_FIELDS[c]) for c in WRITTEN}
# a JSON column (served through the "json" converter) travels as text and is cast on insert
_CASTS = {c: "::jsonb" for c in WRITTEN if _FIELDS[c].convert == "json"}

_VALUES = ", ".join(f"v.{c}{_CASTS.get(c, '')}" for c in WRITTEN)
_SELECTED = ", ".join(key for key, _ in Score.select_items())
# A score of a final trajectory counts in monitoring's rollups at once (storage/rollups.py),
# and in its session's scores (storage/session_rows.py) when it is the run's latest whole-run
# score of its name, in the statement that stores it.
_INSERT = (
    f"WITH stored AS (INSERT INTO scores (project, {', '.join(WRITTEN)}, revision) "
    f"SELECT $1, {_VALUES}, t.revision "
    f"FROM unnest({', '.join(f'${i}::{_TYPES[c]}[]' for i, c in enumerate(WRITTEN, 2))}) "
    f"WITH ORDINALITY AS v({', '.join(WRITTEN)}, n) "
    "JOIN trajectories t ON t.project = $1 AND t.trace_id = v.trace_id "
    # ids in the order given (a batch lists as it was sent)
    f"ORDER BY v.n RETURNING {Score.select_list()}, project AS rollup_project, "
    "name AS rollup_name, number_value AS rollup_number), "
    "rollup_changed AS (SELECT rollup_project AS project, trace_id, rollup_name AS name, "
    "rollup_number AS number_value FROM stored)"
    + rollups.score_ctes("rollup_changed", "1")
    + session_rows.score_added_ctes(
        "(SELECT rollup_project AS project, trace_id, id, step_id, rollup_name AS name, "
        "rollup_number AS number_value FROM stored)")
    + f" SELECT {_SELECTED} FROM stored")


async def add(conn: Connection, project: str, rows: Sequence[Mapping[str, Any]]
              ) -> list[ScoreRow]:
    """Store scores (each a mapping of WRITTEN's columns; a missing one is NULL), each on the
    current revision of its trajectory; a score of a trace the project has no trajectory for
    is not stored. Returns the stored ones in the order given."""
    if not rows:
        return []
    columns = [[row.get(c) for row in rows] for c in WRITTEN]
    async with conn.transaction():
        # a score of a run being finalized or stored again waits for that, and then counts in
        # the rollups as the run now stands (storage/trace_locks.py)
        await trace_locks.wait_for(conn, project, (str(row.get("trace_id")) for row in rows))
        stored = ScoreRow.from_records(await conn.fetch(_INSERT, project, *columns))
    return sorted(stored, key=lambda r: r.id)


async def for_trajectory(conn: Connection, project: str, trace_id: str) -> list[ScoreRow]:
    """A trajectory's scores, oldest first."""
    return await for_trajectories(conn, project, [trace_id])


async def for_trajectories(conn: Connection, project: str, trace_ids: Sequence[str]
                           ) -> list[ScoreRow]:
    """The scores of a set of trajectories (e.g. a session's turns), by trajectory (in the
    order of `trace_ids`), then oldest first."""
    rows = ScoreRow.from_records(await conn.fetch(
        f"SELECT {Score.select_list()} FROM scores "
        "WHERE project = $1 AND trace_id = ANY($2::text[]) ORDER BY trace_id, id",
        project, list(trace_ids)))
    order = {t: i for i, t in enumerate(trace_ids)}
    return sorted(rows, key=lambda r: (order.get(r.trace_id, len(order)), r.id))


async def delete(conn: Connection, project: str, trace_id: str, score_id: int) -> bool:
    """Delete one score of the trajectory; False when it has none of that id."""
    async with conn.transaction():
        await trace_locks.wait_for(conn, project, [trace_id])  # as add() does
        deleted = await conn.fetchval(_DELETE, project, trace_id, score_id)
    return bool(deleted)


# taken back from monitoring's rollups and its session's scores in the statement that deletes it
_DELETE = (
    "WITH rollup_changed AS (DELETE FROM scores WHERE project = $1 AND trace_id = $2 AND id = $3 "
    "RETURNING project, trace_id, id, step_id, name, number_value)"
    + rollups.score_ctes("rollup_changed", "-1")
    + session_rows.score_deleted_ctes("rollup_changed") + " SELECT count(*) FROM rollup_changed")


async def key_name(conn: Connection, key_id: str) -> str:
    """The name of an API key (its id when it has none): the author of what it writes."""
    name = await conn.fetchval("SELECT name FROM api_keys WHERE key_id = $1", key_id)
    return str(name) if name else key_id


# ----------------------------------------------------------------------------- score configs

class ScoreConfigRow(RecordRow):
    """A stored score config, as trajhub.records.scores declares it (ScoreConfig)."""

    __slots__ = ()
    record = ScoreConfig


_CONFIG_COLUMNS = ScoreConfig.write_columns("key", "service")


async def configs(conn: Connection, project: str, names: Sequence[str] | None = None
                  ) -> list[ScoreConfigRow]:
    """The project's score configs (only those of `names` when given), by name."""
    return ScoreConfigRow.from_records(await conn.fetch(
        f"SELECT {ScoreConfig.select_list()} FROM score_configs WHERE project = $1 "
        "AND ($2::text[] IS NULL OR name = ANY($2::text[])) ORDER BY name",
        project, list(names) if names is not None else None))


async def put_config(conn: Connection, project: str, values: Mapping[str, Any]
                     ) -> ScoreConfigRow:
    """Create or replace the config of `values["name"]` (values by column)."""
    columns = ", ".join(_CONFIG_COLUMNS)
    placeholders = ", ".join(f"${i}" for i in range(2, len(_CONFIG_COLUMNS) + 2))
    updates = ", ".join(f"{c} = EXCLUDED.{c}" for c in _CONFIG_COLUMNS if c != "name")
    row = await conn.fetchrow(
        f"INSERT INTO score_configs (project, {columns}) VALUES ($1, {placeholders}) "
        f"ON CONFLICT (project, name) DO UPDATE SET {updates} "
        f"RETURNING {ScoreConfig.select_list()}",
        project, *(values.get(c) for c in _CONFIG_COLUMNS))
    assert row is not None
    return ScoreConfigRow.from_record(row)


async def delete_config(conn: Connection, project: str, name: str) -> bool:
    status = await conn.execute(
        "DELETE FROM score_configs WHERE project = $1 AND name = $2", project, name)
    return bool(status != "DELETE 0")
