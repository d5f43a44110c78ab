"""REST: the trajectory JSON Schema, as shipped in the package."""

from __future__ import annotations

from functools import cache
from importlib import resources

from fastapi import APIRouter, Response

from trajhub.service.api.answers import CheckedRoute
from trajhub.service.api.params import PREFIX

router = APIRouter(prefix=PREFIX, route_class=CheckedRoute, tags=["trajectories"])


@cache
def trajectory_schema() -> bytes:
    """normalizers/trajectory.schema.json: the contract every trajectory document meets."""
    return resources.files("trajhub.normalizers").joinpath("trajectory.schema.json").read_bytes()


@router.get(
    "/schema/trajectory", summary="The JSON Schema of trajectory documents",
    response_class=Response,
    responses={200: {"description": "JSON Schema (draft-07) of what "
                     "`GET /api/v1/trajectories/{trace_id}` serves",
                     "content": {"application/schema+json": {"schema": {
                         "type": "object", "description": "a JSON Schema",
                         "required": ["$schema", "type", "properties"]}}}}})
async def get_trajectory_schema() -> Response:
    return Response(trajectory_schema(), media_type="application/schema+json")
