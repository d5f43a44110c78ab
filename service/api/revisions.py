"""REST: the revision history of a trajectory."""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from fastapi import APIRouter
from pydantic import BaseModel, Field

from trajhub.records.pages import Renames, deprecated_alias
from trajhub.service.api.answers import CheckedRoute
from trajhub.service.api.models import example_config
from trajhub.service.api.params import PREFIX, TraceIdPath
from trajhub.service.api.scopes import Project, Rt
from trajhub.service.api.stored import no_trajectory
from trajhub.storage import revisions as revision_reads

router = APIRouter(prefix=PREFIX, route_class=CheckedRoute, tags=["trajectories"])


class Revision(Renames):
    revision: int = Field(description="1 for the first derivation; each re-derivation adds 1")
    status: Literal["open", "final"] = Field(
        description="the status this revision reached before it was superseded (or now)")
    derived_time: datetime = Field(description="when the derivation worker derived it")
    # the stored row's name (storage/revisions.py), which fills the new one
    derived_at: datetime = deprecated_alias("derived_time", "when the derivation worker "
                                            "derived it", renamed=True)
    normalizer_version: str
    step_count: int
    input_tokens: int
    output_tokens: int
    derivation_error: str | None = Field(
        description="why the spans could not be turned into a trajectory, if they could not")


class Revisions(BaseModel):
    model_config = example_config({"revisions": [{
        "revision": 1, "status": "final", "derived_time": "2026-11-22T15:53:45.682839Z",
        "derived_at": "2026-11-22T15:53:45.682839Z",
        "normalizer_version": "1.1.0", "step_count": 6, "input_tokens": 530,
        "output_tokens": 73, "derivation_error": None}]})
    revisions: list[Revision] = Field(description="newest first")


@router.get("/trajectories/{trace_id}/revisions", response_model=Revisions,
            summary="The revision history of a trajectory, newest first",
            responses={404: {"description": "No trajectory for this trace (yet)"}})
async def trajectory_revisions(trace_id: TraceIdPath, rt: Rt, project: Project) -> Revisions:
    """A trajectory gets a new revision each time late spans or a re-derivation rebuild it;
    each entry says what that revision held and whether it had become final."""
    async with rt.db.acquire() as conn:
        rows = await revision_reads.revisions(conn, project, trace_id)
    if not rows:
        raise no_trajectory(trace_id, project)
    return Revisions(revisions=[Revision(**dict(r)) for r in rows])
