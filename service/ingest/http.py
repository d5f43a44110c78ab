"""Ingest over HTTP: OTLP `/v1/traces` and the Coze Loop endpoints the cozeloop SDKs post to."""

from __future__ import annotations

from typing import Annotated

import orjson
from fastapi import APIRouter, Depends, Request, Response
from google.protobuf import json_format
from starlette.datastructures import UploadFile
from starlette.formparsers import MultiPartException, MultiPartParser

from trajhub.service.access import note_spans
from trajhub.service.api.models import COZELOOP_RESPONSES, OTLP_RESPONSES
from trajhub.service.auth import INGEST, Principal, authenticate, scoped_project
from trajhub.service.errors import (
    BadRequest,
    Forbidden,
    IngestError,
    PayloadTooLarge,
    ingest_error,
    retry_headers,
    rpc_status_proto,
)
from trajhub.service.ingest.bodies import (
    JSON,
    MULTIPART,
    PROTOBUF,
    limited_stream,
    otlp_kind,
    read_body,
    request_project,
    require_media,
)
from trajhub.service.ingest.signal_docs import (
    LOGS_200,
    METRICS_200,
    signal_body,
    signal_responses,
)
from trajhub.service.ingest.signals import LOGS, METRICS, TRACES, Signal
from trajhub.service.ingest.worker import (
    KIND_COZELOOP,
    KIND_OTLP_JSON,
    KIND_OTLP_PROTOBUF,
    IngestJob,
    IngestResult,
)
from trajhub.service.projects import DEFAULT_PROJECT, InvalidProject, validate_project
from trajhub.service.runtime import Runtime, runtime
from trajhub.storage import files

router = APIRouter()

#: the longest file name (storage key) an upload may have: keeps the key within PostgreSQL's
#: btree row limit
MAX_FILE_KEY_LENGTH = 1024

#: the `project` query parameter every ingest route reads (service/ingest/bodies.py), as the
#: REST API's `project` says it
PROJECT_QUERY = {"name": "project", "in": "query", "required": False, "schema": {
    "type": "string", "pattern": "^[A-Za-z0-9._:-]{0,128}$"}, "description": (
    "the project to store under; default: the `trajhub-project` (or `cozeloop-workspace-id`) "
    "header, else the resource's or span's, else `default`. With API keys on, the key's "
    "project; naming another one gets 403")}

_OTLP_BODY = {
    "parameters": [PROJECT_QUERY],
    "requestBody": {
        "required": True,
        "description": "An OTLP ExportTraceServiceRequest. gzip or deflate Content-Encoding.",
        "content": {
            PROTOBUF: {"schema": {"type": "string", "format": "binary"}},
            JSON: {"schema": {"type": "object", "description": "OTLP/JSON (hex ids)"}},
        },
    }
}


def error_headers(error: IngestError) -> dict[str, str]:
    """Retry-After on 503; on 413, `Connection: close`, so the server stops reading the rest of
    an oversized body instead of draining it to keep the connection."""
    headers = retry_headers(error)
    if isinstance(error, PayloadTooLarge):
        headers["Connection"] = "close"
    return headers


def otlp_error(error: IngestError, kind: str) -> Response:
    """A google.rpc.Status in the request's encoding (docs/otlp.md A5)."""
    status = rpc_status_proto(error)
    if kind == KIND_OTLP_PROTOBUF:
        body, media = status.SerializeToString(), PROTOBUF
    else:
        body, media = json_format.MessageToJson(status, indent=None).encode(), JSON
    return Response(body, status_code=error.http_status, media_type=media,
                    headers=error_headers(error))


def otlp_success(result: IngestResult, kind: str, signal: Signal = TRACES) -> Response:
    response = signal.response(result)
    if kind == KIND_OTLP_PROTOBUF:
        return Response(response.SerializeToString(), media_type=PROTOBUF)
    return Response(json_format.MessageToJson(response, indent=None).encode(), media_type=JSON)


async def _ingest_key(request: Request, rt: Runtime) -> Principal | None:
    """The request's API key, if it may ingest (see service/auth.py; None when auth is off)."""
    return await authenticate(rt.db, rt.settings, request.headers.get("authorization"), INGEST)


async def ingest(request: Request, rt: Runtime, kind: str) -> IngestResult:
    """Check the API key, read the body (bounded) and have an ingest worker store it under the
    key's project; IngestError otherwise."""
    project = scoped_project(await _ingest_key(request, rt), request_project(request))
    limit = rt.settings.max_request_bytes
    body = await read_body(request, limit)
    job = IngestJob(kind, body, request.headers.get("content-encoding", ""), project, limit)
    result = await rt.ingest.submit(job)
    note_spans(request.state, result.accepted, result.rejected)
    return result


async def _export_otlp(request: Request, rt: Runtime, signal: Signal = TRACES) -> Response:
    kind = KIND_OTLP_JSON
    try:
        kind = otlp_kind(request.headers.get("content-type", ""))
        result = await ingest(request, rt, signal.kinds[kind])
    except Exception as exc:
        return otlp_error(ingest_error(exc), kind)
    return otlp_success(result, kind, signal)


@router.post("/v1/traces", tags=["ingest"], openapi_extra=_OTLP_BODY, responses=OTLP_RESPONSES,
             summary="OTLP/HTTP trace export (protobuf or JSON)")
async def otlp_traces(request: Request, rt: Annotated[Runtime, Depends(runtime)]) -> Response:
    """Stores the spans, answering only after they are committed, under the API key's project
    when the server requires keys. Invalid spans are rejected through `partial_success` while
    the rest are stored. 503 with Retry-After when the database
    is unreachable or ingestion is saturated."""
    return await _export_otlp(request, rt)


@router.post("/v1/logs", tags=["ingest"],
             openapi_extra=signal_body("ExportLogsServiceRequest", PROJECT_QUERY),
             responses=signal_responses(LOGS_200),
             summary="OTLP/HTTP log export (protobuf or JSON)")
async def otlp_logs(request: Request, rt: Annotated[Runtime, Depends(runtime)]) -> Response:
    """Stores the log records (the events GenAI instrumentations put message content in) as
    received, answering only after they are committed; a record sent again is stored once.
    Projects, API keys, size limits, partial success and 503 are as for `/v1/traces`. Stored
    records do not yet show in trajectories."""
    return await _export_otlp(request, rt, LOGS)


@router.post("/v1/metrics", tags=["ingest"],
             openapi_extra=signal_body("ExportMetricsServiceRequest", PROJECT_QUERY),
             responses=signal_responses(METRICS_200),
             summary="OTLP/HTTP metric export: counted and dropped")
async def otlp_metrics(request: Request, rt: Annotated[Runtime, Depends(runtime)]) -> Response:
    """Answers success, so that an SDK exporting all three signals to trajhub logs no error;
    the data points are counted (`trajhub_metric_points_dropped_total` on `/metrics`) and not
    stored. API keys and size limits are as for `/v1/traces`."""
    return await _export_otlp(request, rt, METRICS)


@router.post("/v1/loop/opentelemetry/v1/traces", tags=["coze loop"], openapi_extra=_OTLP_BODY,
             responses=OTLP_RESPONSES,
             summary="OTLP/HTTP export at Coze Loop's path (@cozeloop/langchain)")
async def cozeloop_otlp_traces(request: Request,
                               rt: Annotated[Runtime, Depends(runtime)]) -> Response:
    """The same handler as `/v1/traces`; the `cozeloop-workspace-id` header names the project
    (with an API key, the key's project: naming another one is a 403)."""
    return await _export_otlp(request, rt)


def _loop_reply(code: int, msg: str, status: int = 200,
                headers: dict[str, str] | None = None) -> Response:
    return Response(orjson.dumps({"code": code, "msg": msg}), status_code=status,
                    media_type=JSON, headers=headers)


@router.post(
    "/v1/loop/traces/ingest", tags=["coze loop"], responses=COZELOOP_RESPONSES,
    summary="Coze Loop native span ingest (cozeloop-python, cozeloop-go / Eino)",
    openapi_extra={"parameters": [PROJECT_QUERY], "requestBody": {
        "required": True, "content": {JSON: {"schema": {
        "type": "object", "properties": {"spans": {"type": "array", "items": {
            "type": "object", "description": "UploadSpan"}}}}}}}},
)
async def cozeloop_ingest(request: Request, rt: Annotated[Runtime, Depends(runtime)]) -> Response:
    """Answers `{"code": 0, "msg": ""}` once stored; invalid spans are named in `msg` while the
    valid ones are stored. Bad input gets a non-zero `code` and a message; a body that is not
    `application/json` gets 415."""
    try:
        require_media(request.headers.get("content-type", ""), JSON)
        result = await ingest(request, rt, KIND_COZELOOP)
    except Exception as exc:
        return _loop_error(ingest_error(exc))
    return _loop_reply(0, result.error_message)


def _loop_error(error: IngestError) -> Response:
    return _loop_reply(error.http_status, error.message, error.http_status, error_headers(error))


_UPLOAD_BODY = {"parameters": [PROJECT_QUERY], "requestBody": {"required": True, "content": {
    MULTIPART: {"schema": {
    "type": "object", "required": ["file"], "properties": {
        "file": {"type": "string", "format": "binary",
                 "description": "the file; its file name is the storage key"},
        "workspace_id": {"type": "string", "description": "the project (else the "
                         "trajhub-project or cozeloop-workspace-id header, else default)"}}}}}}}


@router.post("/v1/loop/files/upload", tags=["coze loop"], openapi_extra=_UPLOAD_BODY,
             responses=COZELOOP_RESPONSES,
             summary="Coze Loop file upload (inputs/outputs over 1 MiB, attachments)")
async def cozeloop_upload(request: Request, rt: Annotated[Runtime, Depends(runtime)]
                          ) -> Response:
    """Stores the file under its file name (the span's `object_storage` key), so the span's
    reference resolves through `GET /api/v1/files/{key}`. Only `multipart/form-data` is
    accepted (415 otherwise); the body is limited to the request size limit while it streams
    in (413), and file parts over 1 MiB are spooled to disk, not memory. A browser may post
    multipart/form-data cross-site without a CORS preflight, so a request that carries an
    `Origin` not listed in TRAJHUB_CORS_ORIGINS gets 403 (the SDKs send no Origin)."""
    try:
        origin = request.headers.get("origin")
        if origin and origin not in rt.settings.cors_origin_list:
            raise Forbidden(f"uploads from the browser origin {origin!r} are not allowed "
                            "(TRAJHUB_CORS_ORIGINS)")
        require_media(request.headers.get("content-type", ""), MULTIPART)
        # the key before the body: an unauthenticated upload is not read
        key = await _ingest_key(request, rt)
        limit = rt.settings.max_request_bytes
        parser = MultiPartParser(request.headers, limited_stream(request, limit),
                                 max_files=1, max_fields=8)
        try:
            form = await parser.parse()
        except MultiPartException as exc:
            raise BadRequest(f"invalid multipart body: {exc.message}") from None
        try:
            upload = form.get("file")
            if not isinstance(upload, UploadFile):
                raise BadRequest("the multipart body needs a 'file' part")
            if not upload.filename:
                raise BadRequest("the multipart 'file' part needs a file name (its storage key)")
            workspace_id = form.get("workspace_id")
            named = request_project(request) or (
                workspace_id if isinstance(workspace_id, str) and workspace_id else None)
            project = scoped_project(key, named) or DEFAULT_PROJECT
            try:
                validate_project(project)
            except InvalidProject as error:
                raise BadRequest(f"workspace_id: {error}") from None
            if len(upload.filename) > MAX_FILE_KEY_LENGTH or "\x00" in upload.filename:
                raise BadRequest(f"the file name (its storage key) must be at most "
                                 f"{MAX_FILE_KEY_LENGTH} characters, without NUL")
            content = await upload.read()
        finally:
            await form.close()
        async with rt.db.acquire() as conn:
            await files.put(conn, project, upload.filename, content)
    except Exception as exc:
        return _loop_error(ingest_error(exc))
    return _loop_reply(0, "")
