"""A dataset (a row of `GET /api/v1/datasets`, of the `datasets` table, and of the
client's `list_datasets`), its items, and what filling or importing one did, declared once
(`trajhub.records`) for the API's models, the client's and storage's select lists. The API
serves an item's snapshot as its own model of a trajectory document (service/api/models.py,
`Item`)."""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import Field

from trajhub.records import SERVED_ONLY, Record, Stored, StoredOnly, computed, json_column
from trajhub.records.pages import deprecated_alias
from trajhub.records.times import CreatedAt, UpdatedAt


class Dataset(Record):
    """A dataset: its name, description and how many items it holds."""

    stored_only = (StoredOnly("id", int, Stored(written_by="database")),)

    name: Annotated[str, Stored(written_by="key")]
    description: str = ""
    # over the set's row `d` (storage/datasets.py)
    item_count: Annotated[
        int, computed("(SELECT count(*) FROM dataset_items i WHERE i.dataset_id = d.id)")] = 0
    created_time: CreatedAt = ""
    updated_time: UpdatedAt = ""
    created_at: CreatedAt = deprecated_alias("created_time", default="", renamed=True)
    updated_at: UpdatedAt = deprecated_alias("updated_time", default="", renamed=True)


class FillOutcome(Record):
    """What filling a dataset from trajectories did (the client's `FillResult`)."""

    added: Annotated[int, SERVED_ONLY] = 0
    skipped_duplicates: Annotated[int, SERVED_ONLY] = Field(
        default=0, description="traces the set already held")
    sampled_out: Annotated[int, SERVED_ONLY] = 0
    not_found: Annotated[list[str], SERVED_ONLY] = Field(
        default_factory=list, description="trace ids with no trajectory")
    not_final: Annotated[list[str], SERVED_ONLY] = Field(
        default_factory=list, description="trace ids whose trajectory is still open")
    item_ids: Annotated[list[str], SERVED_ONLY] = Field(default_factory=list)


class ImportOutcome(Record):
    """What importing items into a dataset did (the client's `ImportResult`)."""

    added: Annotated[int, SERVED_ONLY] = 0
    skipped_duplicates: Annotated[int, SERVED_ONLY] = 0


class Item(Record):
    """An item of a dataset: a test case (from a run, or given), what it should do,
    and where it came from. Its trajectory snapshot is `ItemWithTrajectory`'s."""

    stored_only = (StoredOnly("seq", int, Stored(written_by="database")),)

    id: Annotated[str, Stored(written_by="key")]
    dataset: Annotated[str, SERVED_ONLY] = ""
    input: Annotated[Any, json_column("input")] = None
    reference_output: Annotated[Any, json_column("reference_output")] = None
    expectations: Annotated[dict[str, Any], json_column("expectations")] = Field(
        default_factory=dict)
    metadata: Annotated[dict[str, Any], json_column("metadata")] = Field(
        default_factory=dict, description="the rest of the run's state: what its input and "
        "output held besides the request and the final answer (filled items), or what was "
        "given")
    source_trace_id: str | None = None
    tags: list[str] = Field(default_factory=list)
    created_time: CreatedAt = ""
    updated_time: UpdatedAt = ""
    created_at: CreatedAt = deprecated_alias("created_time", default="", renamed=True)
    updated_at: UpdatedAt = deprecated_alias("updated_time", default="", renamed=True)


#: the API leaves a snapshot out unless it was asked for: never required in /openapi.json
def _absent(value: object) -> bool:
    return value is None


TRAJECTORY_DESCRIPTION = "the trajectory snapshot (single items, or `include_trajectory`)"


class ItemWithTrajectory(Item):
    """An item of a dataset with its trajectory snapshot (a trajectory document) when
    one was asked for (the client's `DatasetItem`)."""

    trajectory: Annotated[dict[str, Any] | None, json_column("trajectory")] = Field(
        default=None, exclude_if=_absent, description=TRAJECTORY_DESCRIPTION)
