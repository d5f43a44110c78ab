"""Pieces every REST route uses: the project scope, time parsing, cursors."""

from __future__ import annotations

import base64
import re
from datetime import datetime
from typing import Annotated, Any

import orjson
from fastapi import Depends, Header, HTTPException, Query, Response

from trajhub.service.runtime import Runtime, runtime

_HEX32 = re.compile(r"^[0-9a-fA-F]{32}$")
_HEX16 = re.compile(r"^[0-9a-fA-F]{16}$")


def project_scope(
    project: Annotated[str | None, Query(
        description="project to read; default: the `trajhub-project` header, else `default`")]
    = None,
    trajhub_project: Annotated[str | None, Header(include_in_schema=False)] = None,
) -> str:
    """FastAPI dependency: every query is scoped to one project."""
    return project or trajhub_project or "default"


Project = Annotated[str, Depends(project_scope)]
Rt = Annotated[Runtime, Depends(runtime)]


def json_response(doc: Any, status: int = 200, headers: dict[str, str] | None = None
                  ) -> Response:
    """orjson-encoded JSON (FastAPI's default encoder is several times slower)."""
    return Response(orjson.dumps(doc), status_code=status, media_type="application/json",
                    headers=headers)


def trace_id_param(trace_id: str) -> str:
    if not _HEX32.match(trace_id):
        raise HTTPException(400, f"trace_id {trace_id!r} is not 32 hex digits")
    return trace_id.lower()


def span_id_param(span_id: str) -> str:
    if not _HEX16.match(span_id):
        raise HTTPException(400, f"span_id {span_id!r} is not 16 hex digits")
    return span_id.lower()


def time_ns(value: str | None, name: str) -> int | None:
    """Unix nanoseconds from an RFC 3339 time or an integer of ns since the epoch; ValueError
    names `name` and what was wrong."""
    if value is None or value == "":
        return None
    if value.lstrip("-").isdigit():
        return int(value)
    try:
        parsed = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        raise ValueError(
            f"{name} must be an RFC 3339 time or Unix nanoseconds, got {value!r}") from None
    if parsed.tzinfo is None:
        raise ValueError(f"{name} needs a timezone (e.g. Z), got {value!r}")
    return int(parsed.timestamp() * 1_000_000) * 1000


def parse_time(value: str | None, name: str) -> int | None:
    """`time_ns` for a query parameter: a bad value is a 400."""
    try:
        return time_ns(value, name)
    except ValueError as exc:
        raise HTTPException(400, str(exc)) from None


def encode_cursor(*values: Any) -> str:
    return base64.urlsafe_b64encode(orjson.dumps(list(values))).decode().rstrip("=")


def decode_cursor(cursor: str | None, shape: tuple[type, ...]) -> tuple[Any, ...] | None:
    if not cursor:
        return None
    try:
        values = orjson.loads(base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)))
        if (isinstance(values, list) and len(values) == len(shape)
                and all(isinstance(v, t) for v, t in zip(values, shape, strict=True))):
            return tuple(values)
    except (ValueError, orjson.JSONDecodeError):
        pass
    raise HTTPException(400, "cursor is not one this API returned")


def attribute_filters(values: list[str] | None) -> list[list[str]]:
    """`key=value` → the JSON documents a span's attributes may contain to match: the value as
    a string, and as JSON when it parses (so `tokens=120` matches 120 and "120")."""
    filters = []
    for item in values or []:
        key, sep, raw = item.partition("=")
        if not sep or not key:
            raise HTTPException(400, f"attribute filter {item!r} must look like key=value")
        docs = [orjson.dumps({key: raw}).decode()]
        try:
            typed = orjson.loads(raw)
        except orjson.JSONDecodeError:
            typed = raw
        if not isinstance(typed, str):
            docs.append(orjson.dumps({key: typed}).decode())
        filters.append(docs)
    return filters
