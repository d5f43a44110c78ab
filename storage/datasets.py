"""SQL for datasets and their items."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import asyncpg
import orjson

from trajhub.storage.database import Connection
from trajhub.storage.rows import DatasetRow, ItemRow, ItemWithTrajectoryRow
from trajhub.storage.sql import Params

DATASET_COLUMNS = DatasetRow.columns("d")


@dataclass(frozen=True)
class NewItem:
    """An item to insert. JSON fields are already-serialized JSON text (the trajectory keeps the
    exact bytes it was served with)."""

    input: str | None
    reference_output: str | None
    expectations: str
    trajectory: str | None
    source_trace_id: str | None
    tags: Sequence[str] = ()
    #: a JSON object: the rest of the run's state (see `normalizers.item_fields`)
    metadata: str = "{}"


class DuplicateName(Exception):
    """A set of that name exists in the project."""


async def create_dataset(conn: Connection, project: str, name: str, description: str
                         ) -> DatasetRow:
    try:
        row = await conn.fetchrow(
            "INSERT INTO datasets (project, name, description) VALUES ($1, $2, $3) RETURNING id",
            project, name, description)
    except asyncpg.UniqueViolationError:
        raise DuplicateName(name) from None
    assert row is not None
    found = await get_dataset(conn, project, name)
    assert found is not None
    return found


async def list_datasets(conn: Connection, project: str) -> list[DatasetRow]:
    return DatasetRow.from_records(await conn.fetch(
        f"SELECT {DATASET_COLUMNS} FROM datasets d WHERE d.project = $1 ORDER BY d.name",
        project))


async def get_dataset(conn: Connection, project: str, name: str
                      ) -> DatasetRow | None:
    return await DatasetRow.fetch_one(
        conn, f"SELECT {DATASET_COLUMNS} FROM datasets d WHERE d.project = $1 AND d.name = $2",
        project, name)


async def dataset_id(conn: Connection, project: str, name: str) -> int | None:
    value = await conn.fetchval(
        "SELECT id FROM datasets WHERE project = $1 AND name = $2", project, name)
    return int(value) if value is not None else None


async def update_dataset(conn: Connection, project: str, name: str,
                         new_name: str | None, description: str | None) -> bool:
    """Rename and/or re-describe; False if there is no such set. DuplicateName if taken."""
    try:
        status = await conn.execute(
            "UPDATE datasets SET name = coalesce($3, name), "
            "description = coalesce($4, description), updated_at = now() "
            "WHERE project = $1 AND name = $2", project, name, new_name, description)
    except asyncpg.UniqueViolationError:
        raise DuplicateName(new_name or name) from None
    return bool(status.endswith(" 1"))


async def delete_dataset(conn: Connection, project: str, name: str) -> bool:
    status = await conn.execute(
        "DELETE FROM datasets WHERE project = $1 AND name = $2", project, name)
    return bool(status.endswith(" 1"))


async def insert_items(conn: Connection, dataset: int, items: Sequence[NewItem]
                       ) -> list[str]:
    """Insert in order; an item whose source trace is already in the set is skipped. Returns
    the ids of the items inserted (so len() is the added count)."""
    added: list[str] = []
    for item in items:
        item_id = await conn.fetchval(
            """INSERT INTO dataset_items (dataset_id, input, reference_output, expectations,
                   trajectory, source_trace_id, tags, metadata)
               VALUES ($1, $2::jsonb, $3::jsonb, $4::jsonb, $5::json, $6, $7, $8::jsonb)
               ON CONFLICT (dataset_id, source_trace_id) WHERE source_trace_id IS NOT NULL
               DO NOTHING RETURNING id""",
            dataset, item.input, item.reference_output, item.expectations, item.trajectory,
            item.source_trace_id, list(item.tags), item.metadata)
        if item_id is not None:
            added.append(item_id)
    return added


async def source_trace_ids(conn: Connection, dataset: int, trace_ids: Sequence[str]
                           ) -> set[str]:
    """Which of these traces the set already holds."""
    rows = await conn.fetch(
        "SELECT source_trace_id FROM dataset_items WHERE dataset_id = $1 "
        "AND source_trace_id = ANY($2::text[])", dataset, list(trace_ids))
    return {r["source_trace_id"] for r in rows}


async def list_items(conn: Connection, dataset: int, after_seq: int, limit: int,
                     with_trajectory: bool) -> list[ItemRow]:
    row_class: type[ItemRow] = ItemWithTrajectoryRow if with_trajectory else ItemRow
    return row_class.from_records(await conn.fetch(
        f"SELECT {row_class.columns()} FROM dataset_items "
        "WHERE dataset_id = $1 AND seq > $2 ORDER BY seq LIMIT $3",
        dataset, after_seq, limit))


async def get_item(conn: Connection, dataset: int, item_id: str
                   ) -> ItemWithTrajectoryRow | None:
    return await ItemWithTrajectoryRow.fetch_one(
        conn, f"SELECT {ItemWithTrajectoryRow.columns()} FROM dataset_items "
        "WHERE dataset_id = $1 AND id = $2", dataset, item_id)


async def update_item(conn: Connection, dataset: int, item_id: str,
                      changes: dict[str, Any]) -> bool:
    """`changes` maps input / reference_output / expectations / metadata (JSON text) and tags
    (list) to their new values; absent keys are left alone."""
    arg, sets = Params(dataset, item_id), ["updated_at = now()"]
    casts = {"input": "::jsonb", "reference_output": "::jsonb", "expectations": "::jsonb",
             "metadata": "::jsonb", "tags": "::text[]"}
    for column, cast in casts.items():
        if column in changes:
            sets.append(f"{column} = {arg(changes[column])}{cast}")
    status = await conn.execute(
        f"UPDATE dataset_items SET {', '.join(sets)} WHERE dataset_id = $1 AND id = $2",
        *arg.values)
    return bool(status.endswith(" 1"))


async def delete_item(conn: Connection, dataset: int, item_id: str) -> bool:
    status = await conn.execute(
        "DELETE FROM dataset_items WHERE dataset_id = $1 AND id = $2", dataset, item_id)
    return bool(status.endswith(" 1"))


def json_text(value: Any) -> str | None:
    """A Python value as the JSON text the item columns take (None stays SQL NULL)."""
    return None if value is None else orjson.dumps(value).decode()
