"""Reading a stored trajectory for a REST route: 404 when there is none (yet), 422 when its
derivation failed."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from fastapi import HTTPException

from trajhub.service.api.models import ErrorDetail
from trajhub.service.runtime import Runtime
from trajhub.storage import step_chunks, trajectory_reads
from trajhub.storage.rows import TrajectoryRow


def no_trajectory(trace_id: str, project: str) -> HTTPException:
    """404: the trace has no trajectory (yet)."""
    return HTTPException(404, f"no trajectory for trace {trace_id} in project {project!r} (yet)")


#: the OpenAPI entry of `not_derived`'s answer, for the `responses` of a route that raises it
NOT_DERIVED: dict[int | str, dict[str, Any]] = {
    422: {"model": ErrorDetail, "description": "The trace's spans could not be turned into a "
          "trajectory (the message says why)"}}


def not_derived(error: str | None) -> HTTPException:
    """422: the trace's spans could not be turned into a trajectory; `error` says why."""
    return HTTPException(422, f"trajectory could not be derived: {error}")


async def derived_trajectory(rt: Runtime, project: str, trace_id: str
                             ) -> tuple[TrajectoryRow, str]:
    """The trace's stored trajectory row and its document's JSON text: 404 when there is no
    trajectory (yet), 422 when its derivation failed."""
    async with rt.db.acquire() as conn:
        row = await trajectory_reads.trajectory(conn, project, trace_id)
    if row is None:
        raise no_trajectory(trace_id, project)
    if row.document is None:
        raise not_derived(row.derivation_error)
    return row, row.document


async def derived_document(rt: Runtime, project: str, trace_id: str) -> str:
    """The stored trajectory document's JSON text of the trace (404 / 422 as
    `derived_trajectory`)."""
    return (await derived_trajectory(rt, project, trace_id))[1]


async def paged_read(rt: Runtime, project: str, trace_id: str,
                     wanted: Callable[[dict[str, Any], dict[str, Any] | None], Iterable[int]],
                     order: bool = False, raw: bool = False) -> step_chunks.PagedRead:
    """The trajectory's row and what a page of it needs (storage/step_chunks.py): 404 when
    there is none yet, 422 when it could not be derived."""
    async with rt.db.acquire() as conn:
        read = await step_chunks.read(conn, project, trace_id, wanted, order, raw)
    if read is None:
        raise no_trajectory(trace_id, project)
    if not read.derived:
        raise not_derived(read.derivation_error)
    return read
