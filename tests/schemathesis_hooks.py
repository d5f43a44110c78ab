"""Hooks for the schemathesis run of tests/test_rest_schemathesis.py (loaded through
SCHEMATHESIS_HOOKS): what the command needs to send and judge requests of this API."""

from __future__ import annotations

import json
from typing import Any

import orjson
import schemathesis

from trajhub.service.api.cursors import encode_cursor, offset_cursor


@schemathesis.serializer("application/x-ndjson")
def ndjson(ctx: schemathesis.SerializationContext, value: Any) -> bytes:
    """`POST /datasets/{name}/import` takes JSONL text: a string is sent as it is; any other
    JSON value as one line of it."""
    if isinstance(value, str):
        return value.encode("utf-8", "surrogatepass")
    try:
        return orjson.dumps(value) + b"\n"
    except TypeError:  # an integer beyond 64 bits, which orjson refuses and JSON allows
        return json.dumps(value).encode("utf-8", "surrogatepass") + b"\n"


#: a cursor of the shape each route issues (cursors.encode_cursor): (seq) or (sort value, id)
_CURSORS = {"/api/v1/datasets/{name}/items": encode_cursor(0),
            "/api/v1/evaluations": encode_cursor(0),
            "/api/v1/traces": encode_cursor(0, ""),
            "/api/v1/trajectories": encode_cursor(0, ""),
            "/api/v1/sessions": encode_cursor(0, ""),
            "/api/v1/evaluations/{evaluation_id}/results": encode_cursor(0, ""),
            "/api/v1/traces/{trace_id}/spans": encode_cursor(0, 0, ""),
            "/api/v1/trajectories/{trace_id}/steps": offset_cursor(0),
            "/api/v1/trajectories/{trace_id}/events": offset_cursor(0),
            "/api/v1/logs": encode_cursor("2026-01-01T00:00:00+00:00", "", "", 0, ""),
            "/api/v1/alerts": encode_cursor(0),
            "/api/v1/alerts/{alert_id}/events": encode_cursor(0)}


@schemathesis.hook
def map_query(ctx: schemathesis.HookContext, query: dict[str, Any] | None
              ) -> dict[str, Any] | None:
    """A made-up `cursor` is rightly a 400: only one the API issued is valid (the live route
    test pages with real ones). A generated cursor is replaced by one of the route's shape."""
    if query and "cursor" in query and ctx.operation is not None:
        cursor = _CURSORS.get(ctx.operation.path)
        if cursor is not None:
            query["cursor"] = cursor
    return query
