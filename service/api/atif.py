"""REST: trajectories as ATIF (docs/atif.md) — export one trajectory, import an ATIF file.

The conversion is `normalizers.atif` (pure); an import is written through the ingest workers like
any OTLP request, so the imported run is stored, derived and served as an ingested one is.
"""

from __future__ import annotations

import time
from typing import Any

import orjson
from fastapi import APIRouter, HTTPException, Request
from starlette.concurrency import run_in_threadpool

from trajhub.normalizers.atif import AtifError, from_atif, to_atif
from trajhub.normalizers.document import parse_document
from trajhub.records.documents import ATIF_EXAMPLE, AtifImported, AtifTrajectory
from trajhub.service.api.answers import CheckedRoute
from trajhub.service.api.models import NOT_FOUND, ErrorDetail
from trajhub.service.api.params import PREFIX, TraceIdPath
from trajhub.service.api.scopes import Project, Rt, needs
from trajhub.service.api.stored import NOT_DERIVED, derived_document
from trajhub.service.auth import INGEST
from trajhub.service.errors import IngestError
from trajhub.service.ingest.bodies import read_body, require_media
from trajhub.service.ingest.decode import decompress
from trajhub.service.ingest.worker import KIND_OTLP_PROTOBUF, IngestJob

router = APIRouter(prefix=PREFIX, route_class=CheckedRoute, tags=["atif"])


@router.get(
    "/trajectories/{trace_id}/atif", response_model=AtifTrajectory,
    summary="One trajectory as ATIF (Agent Trajectory Interchange Format)",
    responses={**NOT_FOUND, **NOT_DERIVED})
async def export_atif(trace_id: TraceIdPath, rt: Rt, project: Project) -> Any:
    """The stored trajectory as one `ATIF-v1.8` document (docs/atif.md): model steps as agent
    steps with their tool calls and results, sub-agents as embedded trajectories, and trajhub's
    own record of each step in `extra.trajhub`."""
    text = await derived_document(rt, project, trace_id)
    document = to_atif(parse_document(orjson.loads(text)))
    return document


@router.post(
    "/trajectories/import/atif", response_model=AtifImported, status_code=201,
    summary="Import an ATIF file as a stored trajectory",
    openapi_extra={**needs(INGEST), "requestBody": {"required": True, "content": {
        "application/json": {"schema": {"type": "object", "description":
                             "one ATIF trajectory (`ATIF-v1.0` … `ATIF-v1.8`)"},
                             "example": ATIF_EXAMPLE}}}},
    responses={400: {"model": ErrorDetail, "description": "not an ATIF trajectory; the "
                     "message names the field"},
               413: {"model": ErrorDetail, "description": "body over the size limit"},
               415: {"model": ErrorDetail, "description": "not application/json"}})
async def import_atif(request: Request, rt: Rt, project: Project) -> Any:
    """The file becomes the OTel GenAI spans of one trace (docs/atif.md) and is stored through
    the ingest path, so it is derived, listed, viewed, compared and evaluated like an ingested
    run. Needs the `ingest` scope. The answer comes once the spans are committed."""
    try:
        require_media(request.headers.get("content-type", ""), "application/json")
        limit = rt.settings.max_request_bytes
        body = decompress(await read_body(request, limit),
                          request.headers.get("content-encoding", ""), limit)
    except IngestError as error:
        raise HTTPException(error.http_status, error.message) from None
    try:
        document = orjson.loads(body)
    except orjson.JSONDecodeError as exc:
        raise HTTPException(400, f"body is not valid JSON: {exc}") from None
    try:
        trace_id, otlp = await run_in_threadpool(from_atif, document, time.time_ns())
    except AtifError as exc:
        raise HTTPException(400, f"not an ATIF trajectory: {exc}") from None
    spans = sum(len(ss.spans) for rs in otlp.resource_spans for ss in rs.scope_spans)
    job = IngestJob(KIND_OTLP_PROTOBUF, otlp.SerializeToString(), "", project, limit)
    try:
        result = await rt.ingest.submit(job)
    except IngestError as error:
        raise HTTPException(error.http_status, error.message) from None
    if result.rejected:
        raise HTTPException(400, f"not an ATIF trajectory trajhub can store: "
                                 f"{result.error_message}")
    return {"project": project, "trace_id": trace_id,
                                          "spans": spans}
