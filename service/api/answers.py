"""REST answers: `model_response` checks a JSON answer against its documented schema before
it is sent; `json_response` sends one that needs no check."""

from __future__ import annotations

import logging
from collections.abc import Callable
from functools import cache
from typing import Any

import jsonschema_rs
import orjson
from fastapi import Response
from pydantic import TypeAdapter

log = logging.getLogger("trajhub.api")


def json_response(doc: Any, status: int = 200, headers: dict[str, str] | None = None
                  ) -> Response:
    """orjson-encoded JSON (FastAPI's default encoder is slower: bench/README.md, "Answering REST
    requests"), unchecked: for
    error bodies (`{"detail": ...}`); a route's answer goes through `model_response`."""
    return Response(orjson.dumps(doc), status_code=status, media_type="application/json",
                    headers=headers)


class ResponseContractError(RuntimeError):
    """A route built an answer its OpenAPI document does not allow: a bug on our side."""


@cache
def _validator(model: Any) -> jsonschema_rs.Validator:
    # the JSON Schema /openapi.json publishes for this model (pydantic's serialization mode,
    # as FastAPI uses it for responses), compiled once
    schema = TypeAdapter(model).json_schema(mode="serialization")
    return jsonschema_rs.validator_for(schema)


def model_response(model: Any, doc: Any, status: int = 200,
                   headers: dict[str, str] | None = None) -> Response:
    """The answer of a route whose body is `model` (a pydantic model, or a union of them): `doc`
    is checked against the model's JSON Schema, then sent encoded by orjson, so what is sent is
    what was checked. A mismatch raises ResponseContractError (a 500, logged): a client never
    receives a body its schema does not describe.

    Why not `model.model_validate(doc).model_dump_json()`: on a page of 1,000 trajectory
    summaries, building the pydantic objects costs about ten times what the compiled JSON Schema
    check does, and FastAPI's own response path about sixty times; the check itself costs one
    to ten times orjson's encoding, by page (bench/response_speed.py prints the figures)."""
    validator = _validator(model)
    body = orjson.dumps(doc)
    try:
        valid = validator.is_valid(doc)
    except ValueError:
        # `doc` embeds stored JSON text as orjson.Fragment (an item's trajectory), which only
        # orjson reads: check the bytes that are sent, decoded
        doc = orjson.loads(body)
        valid = validator.is_valid(doc)
    if not valid:
        error = next(iter(validator.iter_errors(doc)))
        where = "/".join(str(p) for p in error.instance_path) or "(the body)"
        name = getattr(model, "__name__", str(model))
        log.error("response does not match %s at %s: %s", name, where, error.message[:500])
        raise ResponseContractError(f"the {name} answer does not match its schema at {where}")
    return Response(body, status_code=status, media_type="application/json", headers=headers)


def schema_check(model: Any) -> Callable[[Any], bool]:
    """Whether a value matches `model`'s JSON Schema, as `model_response` checks an answer:
    for an answer streamed in pieces, each checked before it is sent."""
    return _validator(model).is_valid
