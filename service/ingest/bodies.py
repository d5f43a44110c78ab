"""HTTP request bodies: content-type negotiation, size limits while streaming, and the project
a request's headers name. Shared by the ingest receivers and the REST routes, so each rule is
written once (the REST routes import it from here, not from the receivers in
service/ingest/http.py).
"""

from __future__ import annotations

from collections.abc import AsyncGenerator

from fastapi import Request

from trajhub.service.errors import BadRequest, PayloadTooLarge, UnsupportedMediaType
from trajhub.service.ingest.worker import KIND_OTLP_JSON, KIND_OTLP_PROTOBUF
from trajhub.service.projects import InvalidProject, header_project, validate_project

PROTOBUF = "application/x-protobuf"
JSON = "application/json"
MULTIPART = "multipart/form-data"


def request_project(request: Request) -> str | None:
    """The project a request names, as the REST API reads it: the `project` query parameter,
    else its headers; None to decide per resource or span. BadRequest when the name is
    invalid."""
    named = request.query_params.get("project")
    try:
        return validate_project(named) if named else header_project(request.headers)
    except InvalidProject as error:
        raise BadRequest(f"query parameter 'project': {error}" if named else str(error)
                         ) from None


def media_type(content_type: str) -> str:
    """`type/subtype` of a Content-Type header, lowercase, without parameters."""
    return content_type.split(";", 1)[0].strip().lower()


def require_media(content_type: str, *allowed: str) -> str:
    """The media type if it is one of `allowed`, else UnsupportedMediaType (415). State-changing
    endpoints accept only what they declare, so a browser's cross-site "simple request"
    (text/plain, form posts) is refused before anything is read."""
    media = media_type(content_type)
    if media not in allowed:
        raise UnsupportedMediaType(
            f"unsupported Content-Type {content_type!r}: use {' or '.join(allowed)}")
    return media


def otlp_kind(content_type: str) -> str:
    media = require_media(content_type, PROTOBUF, "application/protobuf", JSON)
    return KIND_OTLP_JSON if media == JSON else KIND_OTLP_PROTOBUF


async def limited_stream(request: Request, limit: int) -> AsyncGenerator[bytes, None]:
    """The body as it arrives, PayloadTooLarge as soon as it passes `limit` bytes (a declared
    Content-Length over the limit is refused before reading anything)."""
    declared = request.headers.get("content-length")
    if declared and declared.isdigit() and int(declared) > limit:
        raise PayloadTooLarge(f"request body of {declared} bytes exceeds the limit of {limit}")
    size = 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > limit:
            raise PayloadTooLarge(f"request body exceeds the limit of {limit} bytes")
        yield chunk


async def read_body(request: Request, limit: int) -> bytes:
    """The raw body, refusing to buffer more than `limit` bytes."""
    return b"".join([chunk async for chunk in limited_stream(request, limit)])
