"""Filling a dataset from stored trajectories (Coze Loop's flow-back of traces).

The query language is the one of `GET /api/v1/trajectories`: `filters.TrajectoryQuery`, the
typed model both use, so a filter added there works here too, with the same names, types and
checks.
"""

from __future__ import annotations

import dataclasses
import hashlib
import typing
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import orjson

from trajhub.evaluators import expectations_from_trajectory
from trajhub.normalizers.item_fields import item_fields
from trajhub.service.api.filters import TrajectoryQuery
from trajhub.storage import datasets, trajectory_reads
from trajhub.storage.database import Connection

_PAGE = 500


def to_filter(query: TrajectoryQuery, limit: int) -> trajectory_reads.TrajectoryFilter:
    """The TrajectoryFilter of a fill query, newest first. `status` defaults to final: an open
    trajectory is still growing, and a snapshot of half a run is not a test case."""
    if "status" not in query.model_fields_set:
        query = query.model_copy(update={"status": "final"})
    return query.to_filter(sort="start_time", descending=True, limit=limit)


def sampled(trace_id: str, rate: float) -> bool:
    """Deterministic sampling by a hash of the trace id: filling again with the same rate keeps
    the same traces, so a re-fill adds nothing new."""
    if rate >= 1:
        return True
    digest = hashlib.sha256(trace_id.encode()).digest()
    return int.from_bytes(digest[:8], "big") / 2**64 < rate


@dataclass
class FillTally:
    """What a fill did so far, added while it runs (answered as models.FillOutcome)."""

    added: list[str] = field(default_factory=list)
    skipped_duplicates: int = 0
    sampled_out: int = 0
    not_found: list[str] = field(default_factory=list)
    not_final: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {"added": len(self.added), "skipped_duplicates": self.skipped_duplicates,
                "sampled_out": self.sampled_out, "not_found": self.not_found,
                "not_final": self.not_final, "item_ids": self.added}


def item_from_trajectory(trace_id: str, document: str, tags: Sequence[str],
                         input_pointer: str | None = None, output_pointer: str | None = None
                         ) -> datasets.NewItem:
    """An item pre-filled from a trajectory: the user's request as input, the final answer as the
    reference, the rest of the run's state as metadata (`normalizers.item_fields`; the pointers
    choose fields of custom graph states), and what it did as the expectations (to be pruned by
    a human). The snapshot keeps the document's bytes."""
    doc = orjson.loads(document)
    fields = item_fields(doc, input_pointer=input_pointer, output_pointer=output_pointer)
    return datasets.NewItem(
        input=datasets.json_text(fields.input),
        reference_output=datasets.json_text(fields.reference_output),
        expectations=orjson.dumps(expectations_from_trajectory(doc).to_dict()).decode(),
        trajectory=document,
        source_trace_id=trace_id,
        tags=tags,
        metadata=orjson.dumps(fields.metadata).decode(),
    )


async def _candidates_by_query(conn: Connection, project: str,
                               f: trajectory_reads.TrajectoryFilter
                               ) -> typing.AsyncIterator[str]:
    page = dataclasses.replace(f, limit=_PAGE)
    while True:
        rows = await trajectory_reads.list_trajectories(conn, project, page)
        for row in rows:
            yield row.trace_id
        if len(rows) < _PAGE:
            return
        page = dataclasses.replace(page, cursor=(rows[-1].sort_value, rows[-1].trace_id))


async def _candidates_by_id(conn: Connection, project: str, trace_ids: Sequence[str],
                            outcome: FillTally) -> typing.AsyncIterator[str]:
    wanted = list(dict.fromkeys(t.lower() for t in trace_ids))
    rows = await trajectory_reads.list_trajectories(
        conn, project, trajectory_reads.TrajectoryFilter(trace_ids=wanted, limit=len(wanted)))
    status = {r.trace_id: r["status"] for r in rows}
    for trace_id in wanted:
        if trace_id not in status:
            outcome.not_found.append(trace_id)
        elif status[trace_id] != "final":
            outcome.not_final.append(trace_id)
        else:
            yield trace_id


async def fill(conn: Connection, project: str, dataset: int, *,
               trace_ids: Sequence[str] | None, f: trajectory_reads.TrajectoryFilter | None,
               sample_rate: float, limit: int, tags: Sequence[str],
               input_pointer: str | None = None, output_pointer: str | None = None
               ) -> FillTally:
    """Add up to `limit` sampled trajectories that the set does not hold yet."""
    outcome = FillTally()
    if trace_ids is not None:
        candidates = _candidates_by_id(conn, project, trace_ids, outcome)
    else:
        assert f is not None
        candidates = _candidates_by_query(conn, project, f)
    chosen: list[str] = []
    batch: list[str] = []

    async def take(batch: list[str]) -> None:
        present = await datasets.source_trace_ids(conn, dataset, batch)
        for trace_id in batch:
            if len(chosen) >= limit:
                return
            if trace_id in present:
                outcome.skipped_duplicates += 1
            elif len(chosen) < limit:
                chosen.append(trace_id)

    async for trace_id in candidates:
        if not sampled(trace_id, sample_rate):
            outcome.sampled_out += 1
            continue
        batch.append(trace_id)
        if len(batch) >= _PAGE:
            await take(batch)
            batch = []
            if len(chosen) >= limit:
                break
    if batch and len(chosen) < limit:
        await take(batch)

    for start in range(0, len(chosen), _PAGE):
        chunk = chosen[start:start + _PAGE]
        rows = await trajectory_reads.trajectory_documents(
            conn, project, trajectory_reads.TrajectoryFilter(trace_ids=chunk, limit=len(chunk)))
        documents = {r.trace_id: r.document for r in rows if r.document is not None}
        items = [item_from_trajectory(t, documents[t], tags, input_pointer, output_pointer)
                 for t in chunk if t in documents]
        async with conn.transaction():
            added = await datasets.insert_items(conn, dataset, items)
        outcome.added += added
        # another fill may have added the same traces meanwhile: those are duplicates too
        outcome.skipped_duplicates += len(items) - len(added)
    return outcome
