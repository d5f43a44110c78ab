"""Reading request bodies: bounded while streaming, and only of a declared content type."""

from __future__ import annotations

from collections.abc import Iterable

from starlette.requests import Request

from trajhub.service.errors import PayloadTooLarge, UnsupportedMediaType


def media_type(content_type: str) -> str:
    """`application/json; charset=utf-8` → `application/json`."""
    return content_type.split(";", 1)[0].strip().lower()


def require_media_type(request: Request, accepted: Iterable[str]) -> str:
    """The request's media type if it is one of `accepted`; UnsupportedMediaType naming the
    expected types otherwise. State-changing endpoints check this, so a cross-site "simple"
    request (text/plain, form-urlencoded, multipart) never reaches them without a preflight."""
    accepted = tuple(accepted)
    media = media_type(request.headers.get("content-type", ""))
    if media not in accepted:
        shown = media or "none"
        raise UnsupportedMediaType(
            f"unsupported Content-Type {shown!r}: this endpoint takes {' or '.join(accepted)}")
    return media


async def read_body(request: Request, limit: int) -> bytes:
    """The raw body, refusing to buffer more than `limit` bytes: a declared length over the
    limit is refused before reading, and the stream is cut off as soon as it passes it."""
    declared = request.headers.get("content-length")
    if declared and declared.isdigit() and int(declared) > limit:
        raise PayloadTooLarge(f"request body of {declared} bytes exceeds the limit of {limit}")
    chunks, size = [], 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > limit:
            raise PayloadTooLarge(f"request body exceeds the limit of {limit} bytes")
        chunks.append(chunk)
    return b"".join(chunks)
