"""The REST API's side of the record declarations (trajhub.records): a record's answer from a
read row, and a filter query's values. The declared classes themselves are the response and
query-parameter models, so a field or filter declared there appears in /openapi.json and in
the answers with no change to this module."""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from datetime import datetime
from typing import Any

import orjson
from fastapi import HTTPException

from trajhub.records import Query, Record
from trajhub.records.scores import parse_score_condition
from trajhub.service.api.params import time_ns
from trajhub.service.stored_spans import iso_time


#: how a stored value becomes the served one (`Stored.convert`); the API adds its own
#: converters per request (the price table's "cost")
def _score_value(text: str) -> Any:
    """A score's value (trajhub.records.scores), read as JSON text: a number as a float
    (PostgreSQL's JSON writes 1.0 as 1), a boolean or a category as is."""
    value = orjson.loads(text)
    return float(value) if isinstance(value, int) and not isinstance(value, bool) else value


def _timestamp(value: datetime) -> str:
    return value.isoformat().replace("+00:00", "Z")


CONVERTERS: dict[str, Callable[[Any], Any]] = {
    "time": iso_time,
    "timestamp": _timestamp,
    "ns_text": str,
    "json": orjson.loads,
    "score_value": _score_value,
}


def filter_values(query: Query) -> dict[str, Any]:
    """A query model's given filters by name, times as Unix ns, a score condition parsed; a
    bad one is a 400 naming its parameter."""
    values: dict[str, Any] = {}
    for param in query.params():
        value = getattr(query, param.name)
        if value is None:
            continue
        try:
            if param.convert == "time":
                value = time_ns(value, param.name)
            elif param.convert == "score":
                value = parse_score_condition(value)
        except ValueError as exc:
            raise HTTPException(400, str(exc)) from None
        values[param.name] = value
    return values


@functools.cache
def _answer_plan(record: type[Record]) -> tuple[tuple[str, str, str], ...]:
    # made once per record: each served field's name, read key and converter
    return tuple((c.name, c.read_key, c.convert) for c in record.served())


def answer(record: type[Record], row: Mapping[str, Any],
           converters: Mapping[str, Callable[[Any], Any]] | None = None) -> dict[str, Any]:
    """A read row (`Record.select_list`) as the record's JSON: each served field from its key,
    through its converter (None stays None)."""
    convert = {**CONVERTERS, **converters} if converters else CONVERTERS
    out: dict[str, Any] = {}
    for name, key, converter in _answer_plan(record):
        value = row[key]
        if converter and value is not None:
            value = convert[converter](value)
        out[name] = value
    return out
