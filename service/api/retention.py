"""REST: a project's retention (an admin operation: it decides when data is deleted)."""

from __future__ import annotations

from fastapi import APIRouter
from pydantic import BaseModel, Field

from trajhub.records.retention import Retention
from trajhub.service.api.answers import CheckedRoute
from trajhub.service.api.models import BODY_CONFIG
from trajhub.service.api.params import PREFIX
from trajhub.service.api.scopes import Project, Rt, needs
from trajhub.service.auth import ADMIN
from trajhub.service.retention import policy
from trajhub.storage import retention

router = APIRouter(prefix=PREFIX, route_class=CheckedRoute, tags=["retention"])

#: about 1000 years: beyond it a retention is "forever" (0) in all but name
MAX_DAYS = 365_000.0


class RetentionChange(BaseModel):
    model_config = BODY_CONFIG

    days: float = Field(ge=0, le=MAX_DAYS, description=(
        "this project's retention in days (fractions allowed); 0 keeps its data forever "
        "whatever the server's default"))


async def _current(rt: Rt, project: str) -> Retention:
    async with rt.db.acquire() as conn:
        override = await retention.get_override(conn, project)
    default = rt.settings.retention_days
    chosen = policy(default, override)
    return Retention(project=project, days=chosen.days, source=chosen.source,
                     default_days=default)


@router.get("/retention", response_model=Retention, summary="The project's retention")
async def get_retention(rt: Rt, project: Project) -> Retention:
    """What applies to the project: its own setting, else the server's default."""
    return await _current(rt, project)


@router.put("/retention", response_model=Retention, summary="Set the project's retention",
            openapi_extra=needs(ADMIN))
async def set_retention(change: RetentionChange, rt: Rt, project: Project) -> Retention:
    """Overrides TRAJHUB_RETENTION_DAYS for this project. The next sweep (every
    TRAJHUB_RETENTION_INTERVAL_SECONDS) deletes what it makes expire; dataset items keep their
    own copy and stay."""
    async with rt.db.acquire() as conn:
        await retention.set_override(conn, project, change.days)
    return await _current(rt, project)


@router.delete("/retention", response_model=Retention, openapi_extra=needs(ADMIN),
               summary="Return the project to the server's default retention")
async def clear_retention(rt: Rt, project: Project) -> Retention:
    async with rt.db.acquire() as conn:
        await retention.clear_override(conn, project)
    return await _current(rt, project)
