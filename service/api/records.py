"""The REST API's side of the record declarations (trajhub.records): the pydantic response
model of a record (built in trajhub.records.served, so that the answers declared there hold
the same class) and its answer from a read row, and the query-parameter model of a filter.
A field or filter declared there appears here, in /openapi.json and in the answers, with no
change to this module."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Annotated, Any

import orjson
from fastapi import HTTPException
from pydantic import AfterValidator, BaseModel, create_model
from pydantic import Field as PydanticField

from trajhub.records import Filter, Param, Record
from trajhub.records.scores import SCORE_CONDITION_PATTERN, parse_score_condition
from trajhub.records.served import response_model as response_model
from trajhub.service.api.params import MAX_TEXT, Int64, Text, TimeText, no_nul, time_ns
from trajhub.service.stored_spans import iso_time


#: how a stored value becomes the served one (`Field.convert`); the API adds its own
#: converters per request (the price table's "cost")
def _score_value(text: str) -> Any:
    """A score's value (trajhub.records.scores), read as JSON text: a number as a float
    (PostgreSQL's JSON writes 1.0 as 1), a boolean or a category as is."""
    value = orjson.loads(text)
    return float(value) if isinstance(value, int) and not isinstance(value, bool) else value


CONVERTERS: dict[str, Callable[[Any], Any]] = {
    "time": iso_time,
    "ns_text": str,
    "json": orjson.loads,
    "score_value": _score_value,
}


def filter_values(filter_: Filter, query: BaseModel) -> dict[str, Any]:
    """A query model's given filters by name, times as Unix ns, a score condition parsed; a
    bad one is a 400 naming its parameter."""
    values: dict[str, Any] = {}
    for param in filter_.params:
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


def answer(record: Record, row: Mapping[str, Any],
           converters: Mapping[str, Callable[[Any], Any]] | None = None) -> dict[str, Any]:
    """A read row (`Record.select_list`) as the record's JSON: each served field from its key,
    through its converter (None stays None)."""
    convert = {**CONVERTERS, **(converters or {})}
    out: dict[str, Any] = {}
    for f in record.served:
        value = row[f.read_key]
        if f.convert and value is not None:
            value = convert[f.convert](value)
        out[f.name] = value
    return out


#: a score condition (trajhub.records.scores): the pattern documents it, the API's own check
#: (service/api/filters.py) names what is wrong
ScoreConditionText = Annotated[str, PydanticField(
    max_length=MAX_TEXT, json_schema_extra={"pattern": SCORE_CONDITION_PATTERN}),
    AfterValidator(no_nul)]


def _param_annotation(param: Param) -> Any:
    if param.convert == "time":
        return TimeText
    if param.convert == "score":
        return ScoreConditionText
    if param.type is str:
        return Text
    if param.type is int:
        return Int64
    return param.type


def query_model(filter_: Filter, base: type[BaseModel]) -> type[BaseModel]:
    """The pydantic model of a filter's query parameters, on `base` (which holds the
    behaviour: turning the parameters into the storage filter). Every parameter is optional."""
    fields: dict[str, Any] = {
        p.name: (_param_annotation(p) | None,
                 PydanticField(None, description=p.description or None))
        for p in filter_.params}
    model: type[BaseModel] = create_model(
        filter_.name, __base__=base, __doc__=filter_.description, __module__=base.__module__,
        **fields)
    return model
