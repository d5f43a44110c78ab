"""Ingest over HTTP: OTLP `/v1/traces` and the Coze Loop endpoints the cozeloop SDKs post to."""

from __future__ import annotations

from typing import Annotated

import orjson
from fastapi import APIRouter, Depends, Form, Request, Response, UploadFile
from google.protobuf import json_format
from google.rpc import status_pb2
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceResponse

from trajhub.service.api.models import COZELOOP_RESPONSES, OTLP_RESPONSES
from trajhub.service.bodies import read_body
from trajhub.service.errors import IngestError, Unavailable, UnsupportedMediaType
from trajhub.service.ingest.worker import (
    KIND_COZELOOP,
    KIND_OTLP_JSON,
    KIND_OTLP_PROTOBUF,
    IngestJob,
    IngestResult,
)
from trajhub.service.runtime import Runtime, runtime
from trajhub.storage import files
from trajhub.storage.database import TRANSIENT_ERRORS

router = APIRouter()

PROTOBUF = "application/x-protobuf"
JSON = "application/json"

_OTLP_BODY = {
    "requestBody": {
        "required": True,
        "description": "An OTLP ExportTraceServiceRequest. gzip or deflate Content-Encoding.",
        "content": {
            PROTOBUF: {"schema": {"type": "string", "format": "binary"}},
            JSON: {"schema": {"type": "object", "description": "OTLP/JSON (hex ids)"}},
        },
    }
}


def request_project(request: Request) -> str | None:
    """The project a request names in its headers, if any (else per resource or span)."""
    return (request.headers.get("trajhub-project")
            or request.headers.get("cozeloop-workspace-id") or None)


def otlp_kind(content_type: str) -> str:
    media = content_type.split(";", 1)[0].strip().lower()
    if media in (PROTOBUF, "application/protobuf"):
        return KIND_OTLP_PROTOBUF
    if media == JSON:
        return KIND_OTLP_JSON
    raise UnsupportedMediaType(
        f"unsupported Content-Type {content_type!r}: use {PROTOBUF} or {JSON}")


def _retry_headers(error: IngestError) -> dict[str, str]:
    if isinstance(error, Unavailable):
        return {"Retry-After": str(error.retry_after_s)}
    return {}


def otlp_error(error: IngestError, kind: str) -> Response:
    """A google.rpc.Status in the request's encoding (spec/otlp.md A5)."""
    status = status_pb2.Status(code=error.grpc_code.value[0], message=error.message)
    if kind == KIND_OTLP_PROTOBUF:
        body, media = status.SerializeToString(), PROTOBUF
    else:
        body, media = json_format.MessageToJson(status, indent=None).encode(), JSON
    return Response(body, status_code=error.http_status, media_type=media,
                    headers=_retry_headers(error))


def otlp_success(result: IngestResult, kind: str) -> Response:
    response = ExportTraceServiceResponse()
    if result.rejected or result.error_message:
        response.partial_success.rejected_spans = result.rejected
        response.partial_success.error_message = result.error_message
    if kind == KIND_OTLP_PROTOBUF:
        return Response(response.SerializeToString(), media_type=PROTOBUF)
    return Response(json_format.MessageToJson(response, indent=None).encode(), media_type=JSON)


async def ingest(request: Request, rt: Runtime, kind: str) -> IngestResult:
    """Read the body (bounded) and have an ingest worker store it; IngestError otherwise."""
    limit = rt.settings.max_request_bytes
    body = await read_body(request, limit)
    job = IngestJob(kind, body, request.headers.get("content-encoding", ""),
                    request_project(request), limit)
    return await rt.ingest.submit(job)


async def _export_otlp(request: Request, rt: Runtime) -> Response:
    kind = KIND_OTLP_JSON
    try:
        kind = otlp_kind(request.headers.get("content-type", ""))
        result = await ingest(request, rt, kind)
    except IngestError as error:
        return otlp_error(error, kind)
    return otlp_success(result, kind)


@router.post("/v1/traces", tags=["ingest"], openapi_extra=_OTLP_BODY, responses=OTLP_RESPONSES,
             summary="OTLP/HTTP trace export (protobuf or JSON)")
async def otlp_traces(request: Request, rt: Annotated[Runtime, Depends(runtime)]) -> Response:
    """Stores the spans, answering only after they are committed. Invalid spans are rejected
    through `partial_success` while the rest are stored. 503 with Retry-After when the database
    is unreachable or ingestion is saturated."""
    return await _export_otlp(request, rt)


@router.post("/v1/loop/opentelemetry/v1/traces", tags=["coze loop"], openapi_extra=_OTLP_BODY,
             responses=OTLP_RESPONSES,
             summary="OTLP/HTTP export at Coze Loop's path (@cozeloop/langchain)")
async def cozeloop_otlp_traces(request: Request,
                               rt: Annotated[Runtime, Depends(runtime)]) -> Response:
    """The same handler as `/v1/traces`; the `cozeloop-workspace-id` header names the project."""
    return await _export_otlp(request, rt)


def _loop_reply(code: int, msg: str, status: int = 200,
                headers: dict[str, str] | None = None) -> Response:
    return Response(orjson.dumps({"code": code, "msg": msg}), status_code=status,
                    media_type=JSON, headers=headers)


@router.post(
    "/v1/loop/traces/ingest", tags=["coze loop"], responses=COZELOOP_RESPONSES,
    summary="Coze Loop native span ingest (cozeloop-python, cozeloop-go / Eino)",
    openapi_extra={"requestBody": {"required": True, "content": {JSON: {"schema": {
        "type": "object", "properties": {"spans": {"type": "array", "items": {
            "type": "object", "description": "UploadSpan"}}}}}}}},
)
async def cozeloop_ingest(request: Request, rt: Annotated[Runtime, Depends(runtime)]) -> Response:
    """Answers `{"code": 0, "msg": ""}` once stored; invalid spans are named in `msg` while the
    valid ones are stored. Bad input gets a non-zero `code` and a message."""
    try:
        result = await ingest(request, rt, KIND_COZELOOP)
    except IngestError as error:
        return _loop_reply(error.http_status, error.message, error.http_status,
                           _retry_headers(error))
    return _loop_reply(0, result.error_message)


@router.post("/v1/loop/files/upload", tags=["coze loop"], responses=COZELOOP_RESPONSES,
             summary="Coze Loop file upload (inputs/outputs over 1 MiB, attachments)")
async def cozeloop_upload(
    request: Request,
    rt: Annotated[Runtime, Depends(runtime)],
    file: UploadFile,
    workspace_id: Annotated[str, Form()] = "",
) -> Response:
    """Stores the file under its file name (the span's `object_storage` key), so the span's
    reference resolves through `GET /api/v1/files/{key}`."""
    key = file.filename or ""
    if not key:
        return _loop_reply(400, "the multipart 'file' part needs a file name (its storage key)",
                           400)
    content = await file.read()
    if len(content) > rt.settings.max_request_bytes:
        return _loop_reply(413, "file exceeds the request size limit", 413)
    project = request_project(request) or workspace_id or "default"
    try:
        async with rt.db.acquire() as conn:
            await files.put(conn, project, key, content)
    except TRANSIENT_ERRORS as exc:
        return _loop_reply(503, f"database unavailable: {exc}", 503, {"Retry-After": "2"})
    return _loop_reply(0, "")
