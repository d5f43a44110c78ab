"""The REST API's parameter types and their parsing: bounded texts and integers, ids that
lower-case themselves, times, attribute filters, paging; and JSON a body may store."""

from __future__ import annotations

import math
import re
from datetime import datetime
from typing import Annotated, Any

import orjson
import pydantic_core
from fastapi import HTTPException, Path, Query
from pydantic import AfterValidator, BeforeValidator, Field

from trajhub.records.query_types import (
    INT64_MAX,
    MAX_TEXT,
    TIME_PATTERN,
    Int64,
    Text,
    TimeText,
    no_nul,
    time_text,
    whole_number,
)

#: every REST route's path starts with it (each module's router sets it; service/api/routes.py
#: adds the checks and the error answers)
PREFIX = "/api/v1"

INT32_MAX = 2**31 - 1
# INT64_MAX, MAX_TEXT, Text, Int64, TimeText, TIME_PATTERN, no_nul, whole_number and
# time_text are the filters' types (trajhub.records.query_types), shared with the client
__all__ = ["INT64_MAX", "MAX_TEXT", "TIME_PATTERN", "Int64", "Text", "TimeText", "no_nul",
           "time_text", "whole_number"]

_HEX32 = re.compile(r"[0-9a-fA-F]{32}")
_HEX16 = re.compile(r"[0-9a-fA-F]{16}")
#: the same shapes, as /openapi.json declares them (so a client, or a generated test, knows
#: that a trace id of another shape is a 400 before sending it)
TRACE_ID_PATTERN = "^[0-9a-fA-F]{32}$"
SPAN_ID_PATTERN = "^[0-9a-fA-F]{16}$"


#: a list's `cursor` query parameter
#: what a `cursor` parameter is, in every list's words
CURSOR_DESCRIPTION = ("an opaque string: the `next_cursor` of this list's previous page, as "
                      "the API gave it; any other value is a 400")
Cursor = Annotated[Text | None, Query(description=CURSOR_DESCRIPTION)]
#: a list's `limit` query parameter, where a page holds at most 1000 items
PageLimit = Annotated[int, Query(ge=1, le=1000)]


#: an integer of a request body: also a whole number written as 28.0 (see whole_number)
JsonInt = Annotated[int, BeforeValidator(whole_number)]
#: a count held in an integer column
Int32 = Annotated[int, Field(ge=0, le=INT32_MAX)]
def _key_value(value: str) -> str:
    if not _KEY_VALUE.match(value):
        raise ValueError(f"{value[:80]!r} must look like key=value")
    return value


_KEY_VALUE = re.compile(r"^[^=]+=")
#: an `attribute` filter: key=value (a key, then `=`, then the value, which may be empty)
AttributeFilter = Annotated[str, Field(max_length=MAX_TEXT,
                                       json_schema_extra={"pattern": _KEY_VALUE.pattern}),
                           AfterValidator(no_nul), AfterValidator(_key_value)]
def _hex32(value: str) -> str:
    if not _HEX32.fullmatch(value):
        raise ValueError(f"{value[:80]!r} is not 32 hex digits")
    return value.lower()


def _hex16(value: str) -> str:
    if not _HEX16.fullmatch(value):
        raise ValueError(f"{value[:80]!r} is not 16 hex digits")
    return value.lower()


# The id types normalize themselves: a route receives its ids lower-cased, as they are stored.
#: a trace id in a path: 32 hex digits; the pattern is for /openapi.json, the check says what
#: is wrong in words
TraceIdPath = Annotated[str, Path(description="32 hex digits",
                                  json_schema_extra={"pattern": TRACE_ID_PATTERN}),
                        AfterValidator(_hex32)]
#: a trace id in a query parameter
TraceIdQuery = Annotated[str, Query(json_schema_extra={"pattern": TRACE_ID_PATTERN}),
                         AfterValidator(_hex32)]
#: a span id in a query parameter
SpanIdQuery = Annotated[str, Query(json_schema_extra={"pattern": SPAN_ID_PATTERN}),
                        AfterValidator(_hex16)]
#: a span id in a path: 16 hex digits
SpanIdPath = Annotated[str, Path(description="16 hex digits",
                                 json_schema_extra={"pattern": SPAN_ID_PATTERN}),
                       AfterValidator(_hex16)]
#: a trace id in a body
TraceIdText = Annotated[str, Field(pattern=TRACE_ID_PATTERN, description="32 hex digits"),
                        AfterValidator(str.lower)]


def storable_json(value: Any, field: str) -> str:
    """`value` (a request body's JSON) as the JSON text a jsonb column takes. orjson refuses
    integers beyond 64 bits, which a JSON body may hold and PostgreSQL's jsonb stores (as
    numeric): those go through pydantic's encoder instead. What no encoder takes (a lone UTF-16
    surrogate, say) is a 422 naming `field`, never a 500."""
    try:
        return orjson.dumps(value).decode()
    except orjson.JSONEncodeError:
        pass
    try:
        return pydantic_core.to_json(value).decode()
    except (pydantic_core.PydanticSerializationError, ValueError) as exc:
        raise HTTPException(422, f"{field}: cannot be stored as JSON: {str(exc)[:200]}"
                            ) from None


#: the largest page of steps or events, and the default
MAX_PAGE = 1000
DEFAULT_PAGE = 100
#: the position of a page of steps or events, the deprecated alias of `Cursor` there
Offset = Annotated[int, Query(ge=0, le=INT32_MAX, deprecated=True, description="the position "
                              "of the first item of the page (0: the first); `next_offset` of "
                              "the previous page; ignored when `cursor` is given; deprecated: "
                              "use `cursor` (kept for one version)")]


def time_ns(value: str | None, name: str) -> int | None:
    """Unix nanoseconds from an RFC 3339 time or an integer of ns since the epoch, within what
    a bigint holds; ValueError names `name` and what was wrong."""
    if value is None or value == "":
        return None
    if value.lstrip("-").isdigit() and len(value) <= 20:
        ns = int(value)
    else:
        try:
            parsed = datetime.fromisoformat(value.replace("Z", "+00:00"))
        except ValueError:
            raise ValueError(
                f"{name} must be an RFC 3339 time or Unix nanoseconds, got {value[:80]!r}"
            ) from None
        if parsed.tzinfo is None:
            raise ValueError(f"{name} needs a timezone (e.g. Z), got {value[:80]!r}")
        ns = int(parsed.timestamp() * 1_000_000) * 1000
    if not -INT64_MAX - 1 <= ns <= INT64_MAX:
        raise ValueError(f"{name} is out of range (Unix nanoseconds must fit in 64 bits)")
    return ns


def parse_time(value: str | None, name: str) -> int | None:
    """`time_ns` for a query parameter: a bad value is a 400."""
    try:
        return time_ns(value, name)
    except ValueError as exc:
        raise HTTPException(400, str(exc)) from None


def attribute_filters(values: list[str] | None) -> list[list[str]]:
    """`key=value` → the JSON documents a span's attributes may contain to match: the value as
    a string, and as JSON when it parses (so `tokens=120` matches 120 and "120")."""
    filters = []
    for item in values or []:
        key, sep, raw = item.partition("=")
        if not sep or not key:
            raise HTTPException(400, f"query parameter 'attribute': {item[:80]!r} must look like "
                                     "key=value")
        docs = [orjson.dumps({key: raw}).decode()]
        try:
            typed = orjson.loads(raw)
        except orjson.JSONDecodeError:
            typed = raw
        if isinstance(typed, float) and not math.isfinite(typed):
            typed = raw
        if not isinstance(typed, str):
            try:
                docs.append(orjson.dumps({key: typed}).decode())
            except orjson.JSONEncodeError:  # an integer beyond 64 bits
                raise HTTPException(400, f"query parameter 'attribute': {item[:80]!r} holds a "
                                         "number out of range") from None
        filters.append(docs)
    return filters
