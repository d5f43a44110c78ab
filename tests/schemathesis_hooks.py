"""Hooks for the schemathesis run of tests/test_rest_schemathesis.py (loaded through
SCHEMATHESIS_HOOKS): what the command needs to send and judge requests of this API."""

from __future__ import annotations

from typing import Any

import orjson
import schemathesis


@schemathesis.serializer("application/x-ndjson")
def ndjson(ctx: schemathesis.SerializationContext, value: Any) -> bytes:
    """`POST /datasets/{name}/import` takes JSONL text: a string is sent as it is; any other
    JSON value as one line of it."""
    if isinstance(value, str):
        return value.encode("utf-8", "surrogatepass")
    return orjson.dumps(value) + b"\n"


@schemathesis.hook
def filter_query(ctx: schemathesis.HookContext, query: dict[str, Any] | None) -> bool:
    """No made-up `cursor`: a cursor is only ever one the API issued (`next_cursor`), and any
    other is rightly a 400; the live route test pages with real ones."""
    return not query or "cursor" not in query
