"""REST answers. Every route's answer is checked against its documented schema before it is
sent: a route of class `CheckedRoute` returns the value its `response_model` describes, and the
route sends it through `model_response`; a route returns a `Response` itself only where the body
is no JSON value built in Python (a stream, raw stored JSON, no body). `json_response` sends
error bodies, which need no check."""

from __future__ import annotations

import functools
import inspect
import logging
from collections.abc import Callable
from functools import cache
from typing import Any

import jsonschema_rs
import orjson
from fastapi import Response
from fastapi.concurrency import run_in_threadpool
from fastapi.datastructures import DefaultPlaceholder
from fastapi.routing import APIRoute
from pydantic import BaseModel, TypeAdapter

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

    Why not `model.model_validate(doc).model_dump_json()`, or FastAPI's own response path:
    building pydantic objects for a page of summaries costs many times what the compiled JSON
    Schema check does (bench/README.md, "Answering REST requests")."""
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


class CheckedRoute(APIRoute):
    """A route whose `response_model` drives its answer: the value its endpoint returns (a
    dict, a list or a pydantic model) is checked against the model's JSON Schema and sent by
    `model_response`, with the route's `status_code` and whatever status and headers the
    endpoint set on its `response: Response` parameter. A `Response` the endpoint returns is
    sent as it is."""

    def __init__(self, path: str, endpoint: Callable[..., Any], **kwargs: Any) -> None:
        model = kwargs.get("response_model")
        if model is not None and not isinstance(model, DefaultPlaceholder):
            status = kwargs.get("status_code")
            endpoint = _checked(endpoint, model, status if isinstance(status, int) else 200)
        super().__init__(path, endpoint, **kwargs)


def _checked(endpoint: Callable[..., Any], model: Any, status: int) -> Callable[..., Any]:
    is_async = inspect.iscoroutinefunction(endpoint)

    # functools.wraps keeps the endpoint's signature (`__wrapped__`), which FastAPI reads for
    # the route's parameters and dependencies
    @functools.wraps(endpoint)
    async def checked(*args: Any, **kwargs: Any) -> Any:
        value = (await endpoint(*args, **kwargs) if is_async
                 else await run_in_threadpool(endpoint, *args, **kwargs))
        if isinstance(value, Response):
            return value
        if isinstance(value, BaseModel):
            value = value.model_dump(mode="json", by_alias=True)
        given = next((v for v in kwargs.values() if isinstance(v, Response)), None)
        answer = model_response(model, value,
                                given.status_code if given and given.status_code else status)
        if given is not None:
            answer.headers.update({k: v for k, v in given.headers.items()
                                   if k.lower() != "content-length"})
        return answer

    return checked
