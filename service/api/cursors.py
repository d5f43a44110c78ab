"""Opaque list cursors: the sort values of the last item of a page, and their check."""

from __future__ import annotations

import base64
import math
from typing import Any

import orjson
from fastapi import HTTPException

from trajhub.service.api.params import INT64_MAX, MAX_TEXT


def encode_cursor(*values: Any) -> str:
    return base64.urlsafe_b64encode(orjson.dumps(list(values))).decode().rstrip("=")


def _cursor_value_ok(value: Any, kind: type) -> bool:
    if kind is int:
        return (isinstance(value, int) and not isinstance(value, bool)
                and -INT64_MAX - 1 <= value <= INT64_MAX)
    if kind is float:
        return (isinstance(value, int | float) and not isinstance(value, bool)
                and math.isfinite(value))
    return isinstance(value, str) and len(value) <= MAX_TEXT and "\x00" not in value


def decode_cursor(cursor: str | None, shape: tuple[type, ...]) -> tuple[Any, ...] | None:
    if not cursor:
        return None
    try:
        values = orjson.loads(base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)))
        if (isinstance(values, list) and len(values) == len(shape)
                and all(_cursor_value_ok(v, t) for v, t in zip(values, shape, strict=True))):
            return tuple(values)
    except (ValueError, orjson.JSONDecodeError):
        pass
    raise HTTPException(400, "query parameter 'cursor': not one this API returned")
