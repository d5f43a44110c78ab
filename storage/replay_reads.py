"""Reads for playback, compare and regression reports: a trajectory with its raw spans, and the
runs and evaluation results of a dataset."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import asyncpg

from trajhub.storage.database import Connection
from trajhub.storage.sql import in_trace_partition
from trajhub.storage.stored_documents import DOCUMENT, unpack
from trajhub.storage.trace_reads import SPAN_FIELDS


def _with_document(record: asyncpg.Record) -> dict[str, Any]:
    """A trajectory record with its document as text (storage/stored_documents.py)."""
    row = dict(record.items())
    row["document"] = unpack(row["document"])
    return row


async def trajectory_with_spans(conn: Connection, project: str, trace_id: str
                                ) -> tuple[Mapping[str, Any] | None, list[asyncpg.Record],
                                           dict[int, bytes]]:
    """The trajectory row, its trace's span rows and their resource envelopes, read in one
    snapshot so the spans are the ones the document was derived from or newer."""
    async with conn.transaction(isolation="repeatable_read", readonly=True):
        record = await conn.fetchrow(
            f"SELECT status, revision, normalizer_version, {DOCUMENT} AS document, "
            "derivation_error FROM trajectories WHERE project = $1 AND trace_id = $2 "
            f"AND {in_trace_partition()}", project, trace_id)
        if record is None:
            return None, [], {}
        row = _with_document(record)
        spans = await conn.fetch(
            f"SELECT {SPAN_FIELDS} FROM spans s WHERE s.project = $1 AND s.trace_id = $2 "
            f"AND {in_trace_partition('s.')}",
            project, trace_id)
        ids = sorted({r["resource_id"] for r in spans if r["resource_id"] is not None})
        envelopes = await conn.fetch("SELECT id, body FROM resources WHERE id = ANY($1::bigint[])",
                                     ids)
    return row, spans, {r["id"]: r["body"] for r in envelopes}


async def evaluation(conn: Connection, project: str, evaluation_id: int
                     ) -> asyncpg.Record | None:
    return await conn.fetchrow(
        "SELECT id, dataset_id, dataset_name, run_name, status FROM evaluations "
        "WHERE project = $1 AND id = $2", project, evaluation_id)


async def latest_evaluation_of_run(conn: Connection, project: str, dataset_name: str,
                                   run_name: str) -> int | None:
    """The newest finished evaluation of a live run over a set, if any."""
    value = await conn.fetchval(
        "SELECT id FROM evaluations WHERE project = $1 AND dataset_name = $2 AND run_name = $3 "
        "AND status = 'done' ORDER BY id DESC LIMIT 1", project, dataset_name, run_name)
    return int(value) if value is not None else None


async def evaluation_results(conn: Connection, evaluation_id: int
                             ) -> list[asyncpg.Record]:
    return await conn.fetch(
        "SELECT item_id, seq, evaluator, trace_id, score, passed, error "
        "FROM evaluation_results WHERE evaluation_id = $1 ORDER BY seq, evaluator",
        evaluation_id)


async def dataset_items(conn: Connection, project: str, dataset_name: str
                        ) -> list[asyncpg.Record] | None:
    """(id, seq) of every item of a set, in set order; None when there is no such set."""
    dataset = await conn.fetchval(
        "SELECT id FROM datasets WHERE project = $1 AND name = $2", project, dataset_name)
    if dataset is None:
        return None
    return await conn.fetch(
        "SELECT id, seq FROM dataset_items WHERE dataset_id = $1 ORDER BY seq", dataset)


async def documents(conn: Connection, project: str, trace_ids: Sequence[str]
                    ) -> dict[str, Mapping[str, Any]]:
    rows = await conn.fetch(
        f"SELECT trace_id, status, revision, {DOCUMENT} AS document, derivation_error, "
        "model_usage::text AS model_usage "
        "FROM trajectories WHERE project = $1 AND trace_id = ANY($2::text[])",
        project, list(trace_ids))
    return {r["trace_id"]: _with_document(r) for r in rows}
