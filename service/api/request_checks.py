"""Checks every REST request goes through (`ROUTER_CHECKS`: unknown query parameters, the
body's content type, NUL characters in a JSON body) and the answers to bad parameters: a 400
naming the parameter, a 405 with the `Allow` /openapi.json gives, a 400 for text PostgreSQL
cannot store."""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

import asyncpg
import orjson
import pydantic_core
from fastapi import Depends, FastAPI, HTTPException, Request, Response
from fastapi.dependencies.models import Dependant
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from fastapi.routing import APIRoute
from starlette.routing import BaseRoute

from trajhub.service.api.scopes import require_key
from trajhub.service.ingest.bodies import media_type

# ------------------------------------------------------------------------- parameter checking

_KNOWN_QUERY: dict[int, frozenset[str]] = {}


def _collect_query_names(dependant: Dependant, found: set[str]) -> None:
    for param in dependant.query_params:
        model = getattr(param.field_info.annotation, "model_fields", None)
        if isinstance(model, dict):  # a query-parameter model: its fields are the names
            found.update(f.alias or n for n, f in model.items())
        else:
            found.add(param.alias)
    for sub in dependant.dependencies:
        _collect_query_names(sub, found)


def _query_names(route: APIRoute) -> frozenset[str]:
    names = _KNOWN_QUERY.get(id(route))
    if names is None:
        # `project` is the API-wide scope: a client may send it with every request, also to
        # the few routes that read no project's data (normalize, projects, schema)
        found: set[str] = {"project"}
        _collect_query_names(route.dependant, found)
        names = _KNOWN_QUERY[id(route)] = frozenset(found)
    return names


def known_query_only(request: Request) -> None:
    """Router dependency: a query parameter the route does not take is a 400 naming it (a
    misspelt filter must not silently return everything)."""
    route = request.scope.get("route")
    if not isinstance(route, APIRoute):
        return
    known = _query_names(route)
    for name in request.query_params:
        if name not in known:
            takes = ", ".join(sorted(known)) or "none"
            raise HTTPException(400, f"unknown query parameter {name[:80]!r} (this endpoint "
                                     f"takes: {takes})")


def _where(loc: tuple[Any, ...]) -> str:
    kinds = {"query": "query parameter", "path": "path parameter", "header": "header",
             "cookie": "cookie"}
    kind = kinds.get(str(loc[0]), str(loc[0])) if loc else "parameter"
    name = ".".join(str(part) for part in loc[1:])
    return f"{kind} {name!r}"


_TEMPLATE_PARAM = re.compile(r"\{[^}/]+?(:path)?\}")


def documented_operations(routes: Iterable[BaseRoute], prefix: str = ""
                          ) -> dict[str, frozenset[str]]:
    """Each path template /openapi.json documents, with its methods, read from the routes
    themselves (building the whole document to learn them costs a server start seconds on a
    busy machine); an included router's routes count under its prefix."""
    found: dict[str, frozenset[str]] = {}
    for route in routes:
        if isinstance(route, APIRoute):
            if route.include_in_schema:
                template = prefix + route.path_format
                found[template] = found.get(template, frozenset()) | (route.methods or set())
            continue
        # an included router, which FastAPI keeps as one entry of the list
        inner = getattr(route, "original_router", None)
        if inner is not None:
            context = getattr(route, "include_context", None)
            for template, methods in documented_operations(
                    inner.routes, prefix + str(getattr(context, "prefix", ""))).items():
                found[template] = found.get(template, frozenset()) | methods
    return found


def _documented_paths(app: FastAPI) -> list[tuple[re.Pattern[str], int, str, frozenset[str]]]:
    """Each documented path template as (regex, parameter count, template, methods)."""
    cached: list[tuple[re.Pattern[str], int, str, frozenset[str]]] | None = getattr(
        app.state, "documented_paths", None)
    if cached is None:
        cached = []
        for template, methods in documented_operations(app.routes).items():
            regex = _TEMPLATE_PARAM.sub(lambda m: ".+" if m.group(1) else "[^/]+",
                                        re.escape(template).replace(r"\{", "{")
                                        .replace(r"\}", "}"))
            cached.append((re.compile(regex + "$"), len(_TEMPLATE_PARAM.findall(template)),
                           template, methods))
        app.state.documented_paths = cached
    return cached


def allowed_methods(app: FastAPI, path: str) -> tuple[str, frozenset[str]]:
    """The `Allow` for `path`, as /openapi.json has it, and the templates it comes from: the
    methods of the most specific documented templates the path fits (`/trajectories/rederive`
    is a POST, not the `/trajectories/{trace_id}` GET). ("", {}) for an undocumented path."""
    fits = [(count, template, methods) for regex, count, template, methods
            in _documented_paths(app) if regex.match(path)]
    if not fits:
        return "", frozenset()
    fewest = min(count for count, _, _ in fits)
    best = [(template, methods) for count, template, methods in fits if count == fewest]
    return (", ".join(sorted({m for _, methods in best for m in methods})),
            frozenset(template for template, _ in best))


def _shadowed(request: Request) -> str:
    """The Allow of a 405 when the request reached a parameter route only because its method
    is not one of the literal route's: GET /trajectories/rederive matches GET
    /trajectories/{trace_id}, yet /openapi.json documents /trajectories/rederive (POST only).
    Empty when the route that answers is one of the path's most specific ones."""
    route = request.scope.get("route")
    if not isinstance(route, APIRoute):
        return ""
    allow, templates = allowed_methods(request.app, request.url.path)
    # path_format: the template without its convertors (`{key:path}` → `{key}`), as
    # /openapi.json writes it
    return allow if templates and route.path_format not in templates else ""


async def parameter_error(request: Request, exc: Exception) -> Response:
    """A bad query, path or header parameter is a 400 naming it; a bad JSON body stays a 422
    with FastAPI's usual detail."""
    assert isinstance(exc, RequestValidationError)
    allow = _shadowed(request)
    if allow:
        return JSONResponse({"detail": f"method {request.method} is not allowed here (allowed: "
                                       f"{allow})"}, status_code=405, headers={"Allow": allow})
    errors = exc.errors()
    bad = [e for e in errors if e.get("loc") and e["loc"][0] in ("query", "path", "header")]
    if not bad:
        return JSONResponse({"detail": _jsonable_errors(errors)}, status_code=422)
    first = bad[0]
    message = str(first.get("msg", "invalid"))
    if first.get("type") == "value_error" and "error" in (first.get("ctx") or {}):
        # our own validators' words, without pydantic's "Value error, " before them
        message = str(first["ctx"]["error"])
    return JSONResponse({"detail": f"{_where(tuple(first['loc']))}: {message}"},
                        status_code=400)


#: the one rule for NUL characters (README, "NUL characters"): what trajhub stores as text or
#: JSON cannot hold one, so a request that carries one there is refused, never altered
NUL_REFUSED = ("holds a NUL character (\\u0000), which cannot be stored as text; remove it or "
               "encode it")


async def unstorable_text(request: Request, exc: Exception) -> Response:
    """PostgreSQL cannot hold a NUL character in text or JSON: a request that reaches the
    database with one anyway is the client's mistake, a 400 (PostgreSQL's own words stay in
    its log)."""
    return JSONResponse({"detail": f"a value in the request {NUL_REFUSED}"}, status_code=400)


def nul_path(value: Any, path: str = "body") -> str | None:
    """Where the first NUL character of a parsed JSON value is (`body.input.question`,
    `body.items[2]`), or None."""
    if isinstance(value, str):
        return path if "\x00" in value else None
    if isinstance(value, dict):
        for key, item in value.items():
            if "\x00" in key:
                return f"{path} (a key)"
            found = nul_path(item, f"{path}.{key}")
            if found is not None:
                return found
    elif isinstance(value, list):
        for i, item in enumerate(value):
            found = nul_path(item, f"{path}[{i}]")
            if found is not None:
                return found
    return None


async def nul_free_body(request: Request) -> None:
    """Router dependency: a JSON body read into a model holds no NUL character; a 400 names
    where one is (before the body is validated, so the answer does not depend on the field).
    Routes that read their body themselves, bounded, check it as they parse it."""
    route = request.scope.get("route")
    if request.method not in _BODY_METHODS or not isinstance(route, APIRoute) \
            or route.body_field is None:
        return
    body = await request.body()  # FastAPI reads it whole for the model anyway, and keeps it
    if b"\\u0000" not in body:  # the only way JSON text carries a NUL
        return
    try:
        where = nul_path(orjson.loads(body))
    except orjson.JSONDecodeError:
        return  # the body's validation says what is wrong
    if where is not None:
        raise HTTPException(400, f"{where} {NUL_REFUSED}")


#: the database errors `unstorable_text` answers
UNSTORABLE_TEXT_ERRORS = (asyncpg.UntranslatableCharacterError,
                          asyncpg.CharacterNotInRepertoireError)


def _jsonable_errors(errors: Any) -> Any:
    # pydantic puts the exception object in `ctx` of some errors; keep the JSON-safe parts. An
    # error's `input` may hold an integer beyond 64 bits, which orjson refuses: pydantic's
    # encoder takes it (it comes back as a float)
    try:
        return orjson.loads(orjson.dumps(errors, default=str))
    except orjson.JSONEncodeError:
        return orjson.loads(pydantic_core.to_json(errors, fallback=str))


_BODY_METHODS = frozenset({"POST", "PUT", "PATCH"})


def _declared_media_types(route: APIRoute) -> tuple[str, ...]:
    content = ((route.openapi_extra or {}).get("requestBody") or {}).get("content")
    if content:
        return tuple(content)
    return ("application/json",)


def declared_content_type(request: Request) -> None:
    """Router dependency: a request that changes state must carry the content type its route
    declares (JSON unless the route says otherwise). Browsers send text/plain, urlencoded and
    multipart bodies cross-site without asking first; no route here accepts them, so such a
    request is a 415 before anything happens."""
    if request.method not in _BODY_METHODS:
        return
    route = request.scope.get("route")
    if not isinstance(route, APIRoute):
        return
    accepted = _declared_media_types(route)
    media = media_type(request.headers.get("content-type", ""))
    if media not in accepted:
        raise HTTPException(415, f"unsupported Content-Type {media or 'none'!r}: this endpoint "
                                 f"takes {' or '.join(accepted)}")


#: what every REST router checks before a route runs (the key first: an unauthenticated
#: request learns nothing about parameters)
ROUTER_CHECKS = [Depends(require_key), Depends(known_query_only), Depends(declared_content_type),
                 Depends(nul_free_body)]
