"""Opaque list cursors: the sort values of the last item of a page, or the position of the
next page in a list paged by position (a trajectory's steps and events), and their check."""

from __future__ import annotations

import base64
import math
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

import orjson
from fastapi import HTTPException

from trajhub.service.api.params import INT32_MAX, INT64_MAX, MAX_TEXT

T = TypeVar("T")

_BAD_CURSOR = "query parameter 'cursor': not one this API returned"


def bad_cursor() -> HTTPException:
    """The answer to a cursor this API did not return (one that decodes, but to values that
    are not a page's keyset)."""
    return HTTPException(400, _BAD_CURSOR)


def encode_cursor(*values: Any) -> str:
    return base64.urlsafe_b64encode(orjson.dumps(list(values))).decode().rstrip("=")


def next_page_cursor(rows: Sequence[T], limit: int,
                     keyset: Callable[[T], Sequence[Any]]) -> str | None:
    """The `next_cursor` of a page of a list paged by keyset: the sort values of its last row
    (`keyset(row)`) when the page is full, None when a shorter page ends the list."""
    return encode_cursor(*keyset(rows[-1])) if len(rows) == limit else None


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
    raise HTTPException(400, _BAD_CURSOR)


def offset_cursor(offset: int) -> str:
    """The cursor of the page of a list paged by position that starts at `offset`."""
    return encode_cursor(offset)


def page_offset(cursor: str | None, offset: int) -> int:
    """Where the asked page of a list paged by position starts: at `cursor` (a `next_cursor`
    of that list), else at `offset` (its deprecated alias, which the cursor overrides: a
    request /openapi.json allows is never refused for holding both)."""
    if not cursor:
        return offset
    values = decode_cursor(cursor, (int,))
    assert values is not None
    if not 0 <= values[0] <= INT32_MAX:
        raise HTTPException(400, _BAD_CURSOR)
    start: int = values[0]
    return start
