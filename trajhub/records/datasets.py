"""An evaluation set (a row of `GET /api/v1/datasets`, of the `datasets` table, and of the
client's `list_datasets`), and what filling or importing one did, declared once
(`trajhub.records`) for the API's models, the client's and storage's select list. Its items
are not declared here yet (service/api/models.py `Item`, storage/rows.py `ItemRow`)."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated

from pydantic import Field

from trajhub.records import SERVED_ONLY, Record, Stored, StoredOnly, computed

_WHEN = Stored(written_by="database", convert="timestamp", stored_type=datetime)


class Dataset(Record):
    """An evaluation set: its name, description and how many items it holds."""

    stored_only = (StoredOnly("id", int, Stored(written_by="database")),)

    name: Annotated[str, Stored(written_by="key")]
    description: str = ""
    # over the set's row `d` (storage/datasets.py)
    item_count: Annotated[
        int, computed("(SELECT count(*) FROM dataset_items i WHERE i.dataset_id = d.id)")] = 0
    created_at: Annotated[str, _WHEN] = ""
    updated_at: Annotated[str, _WHEN] = ""


class FillOutcome(Record):
    """What filling an evaluation set from trajectories did (the client's `FillResult`)."""

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
    """What importing items into an evaluation set did (the client's `ImportResult`)."""

    added: Annotated[int, SERVED_ONLY] = 0
    skipped_duplicates: Annotated[int, SERVED_ONLY] = 0
