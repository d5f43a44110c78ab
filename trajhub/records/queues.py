"""What the REST API answers to the operations on a review queue that are not records
of their own (trajhub.records.review declares the queue and its items): the trajectories
added to it, and its export to a dataset."""

from __future__ import annotations

from pydantic import BaseModel, Field

from trajhub.records.examples import example_config


class ItemsAdded(BaseModel):
    model_config = example_config({"added": ["4bf92f3577b34da6a3ce929d0e0e4736"],
                                   "already_queued": [], "not_found": []})
    added: list[str] = Field(description="the trace ids added, in order")
    already_queued: list[str] = Field(description="trace ids the queue holds already")
    not_found: list[str] = Field(description="trace ids the project has no trajectory for")


class ExportOutcome(BaseModel):
    model_config = example_config({"dataset": "reviewed", "added": 2,
                                   "skipped_duplicates": 0, "item_ids": ["6f1d0c6b"]})
    dataset: str
    added: int = Field(description="items created, one per completed item")
    skipped_duplicates: int = Field(description="completed items whose trajectory the set "
                                    "holds already (or is gone)")
    item_ids: list[str]
