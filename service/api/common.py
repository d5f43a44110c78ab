"""Pieces every REST route uses: the project scope, bounded parameter types, time parsing,
cursors, the check for unknown query parameters, the 400 for bad parameters, and
`model_response`, which checks every JSON answer against its documented schema."""

from __future__ import annotations

import base64
import logging
import math
import re
from collections.abc import Callable, Iterable
from datetime import datetime
from functools import cache
from typing import Annotated, Any

import asyncpg
import jsonschema_rs
import orjson
import pydantic_core
from fastapi import (
    Depends,
    FastAPI,
    Header,
    HTTPException,
    Path,
    Query,
    Request,
    Response,
    Security,
)
from fastapi.dependencies.models import Dependant
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from fastapi.routing import APIRoute
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from pydantic import AfterValidator, BeforeValidator, Field, TypeAdapter

from trajhub.service.auth import ADMIN, METRICS, READ, Principal, authenticate, scoped_project
from trajhub.service.errors import Forbidden, Unauthenticated, retry_headers
from trajhub.service.ingest.bodies import media_type
from trajhub.service.projects import InvalidProject, validate_project
from trajhub.service.runtime import Runtime, runtime
from trajhub.storage import step_chunks, trajectory_reads
from trajhub.storage.rows import TrajectoryRow

#: every REST route's path starts with it (each module's router sets it; service/api/routes.py
#: adds the checks and the error answers)
PREFIX = "/api/v1"

INT64_MAX = 2**63 - 1
INT32_MAX = 2**31 - 1
#: the longest text a filter takes (names, ids, search text)
MAX_TEXT = 1000

_HEX32 = re.compile(r"[0-9a-fA-F]{32}")
_HEX16 = re.compile(r"[0-9a-fA-F]{16}")
#: the same shapes, as /openapi.json declares them (so a client, or a generated test, knows
#: that a trace id of another shape is a 400 before sending it)
TRACE_ID_PATTERN = "^[0-9a-fA-F]{32}$"
SPAN_ID_PATTERN = "^[0-9a-fA-F]{16}$"

log = logging.getLogger("trajhub.api")


def no_nul(value: str) -> str:
    # PostgreSQL text cannot hold NUL: a filter with one can match nothing, say so instead
    if "\x00" in value:
        raise ValueError("must not contain NUL characters")
    return value


#: a text query parameter: no NUL, at most MAX_TEXT characters
Text = Annotated[str, Field(max_length=MAX_TEXT), AfterValidator(no_nul)]
#: a list's `cursor` query parameter
Cursor = Annotated[Text | None, Query(description="`next_cursor` of the previous page")]


def whole_number(value: Any) -> Any:
    # JSON Schema counts 28.0 as an integer (a number with no fraction), so a body may send
    # one; pydantic's strict mode would refuse it
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value


#: an integer of a request body: also a whole number written as 28.0 (see whole_number)
JsonInt = Annotated[int, BeforeValidator(whole_number)]
#: a count or size held in a bigint column
# (the bounds before the validator: after it, pydantic writes them into the JSON Schema as
# `ge`/`le`, which JSON Schema does not know)
Int64 = Annotated[int, Field(ge=0, le=INT64_MAX), BeforeValidator(whole_number)]
#: a count held in an integer column
Int32 = Annotated[int, Field(ge=0, le=INT32_MAX)]
#: a time a filter takes: Unix nanoseconds (within a signed 64-bit integer; the pattern stops
#: at ±9,222,999,999,999,999,999), or an RFC 3339 time with its
#: offset, in the years a signed 64-bit count of nanoseconds reaches (1678-2262; the pattern
#: keeps to 1680-2261). Written out so /openapi.json tells a client which texts are times.
TIME_PATTERN = (
    r"^(-?([0-9]{1,18}|[1-8][0-9]{18}|9[01][0-9]{17}|92[01][0-9]{16}|922[0-2][0-9]{15})|"
    r"((1(6[89][0-9]|[7-9][0-9]{2})|2([01][0-9]{2}|2[0-5][0-9]|26[01]))-"
    r"((0[13578]|1[02])-(0[1-9]|[12][0-9]|3[01])|(0[469]|11)-(0[1-9]|[12][0-9]|30)|"
    r"02-(0[1-9]|1[0-9]|2[0-8]))|"
    # February 29th of the leap years (1680-2261: every fourth year but 1700, 1800, 1900,
    # 2100 and 2200), so that a date that does not exist is not a time the document promises
    r"(16(8[048]|9[26])|1[7-9](0[48]|[2468][048]|[13579][26])|"
    r"2[01](0[48]|[2468][048]|[13579][26])|2000|22(0[48]|[24][048]|[135][26]|60))-02-29)"
    r"[T ]([01][0-9]|2[0-3]):[0-5][0-9]:[0-5][0-9]"
    r"(\.[0-9]{1,9})?(Z|[+-]([01][0-9]|2[0-3]):[0-5][0-9]))$")
_TIME = re.compile(TIME_PATTERN)


def time_text(value: str) -> str:
    if not _TIME.match(value):
        raise ValueError(f"must be an RFC 3339 time with its offset (Z or +hh:mm) between the "
                         f"years 1680 and 2261, or Unix nanoseconds; got {value[:80]!r}")
    return value


#: a time parameter (see TIME_PATTERN); `time_ns` turns it into Unix nanoseconds
TimeText = Annotated[str, Field(max_length=100, json_schema_extra={"pattern": TIME_PATTERN}),
                     AfterValidator(time_text)]
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
#: a span id in a path: 16 hex digits
SpanIdPath = Annotated[str, Path(description="16 hex digits",
                                 json_schema_extra={"pattern": SPAN_ID_PATTERN}),
                       AfterValidator(_hex16)]
#: a trace id in a body
TraceIdText = Annotated[str, Field(pattern=TRACE_ID_PATTERN, description="32 hex digits"),
                        AfterValidator(str.lower)]


#: the OpenAPI extension that declares the scope an operation needs (`needs(...)`)
SCOPE_EXTENSION = "x-trajhub-scope"

#: documents the bearer key in OpenAPI (/docs shows an Authorize button); the key itself is
#: checked by `require_key`, which names every problem
_bearer = HTTPBearer(auto_error=False, description=(
    "An API key (`trajhub keys create`), required when the server runs with TRAJHUB_AUTH on"))


def needs(scope: str) -> dict[str, Any]:
    """`openapi_extra` of a route that needs another scope than its method's default (GET,
    POST, PATCH: read; DELETE: admin)."""
    return {SCOPE_EXTENSION: scope}


def route_scope(route: APIRoute, method: str) -> str:
    """The scope a request to `route` needs: declared with `needs(...)`, else by method."""
    declared = (route.openapi_extra or {}).get(SCOPE_EXTENSION)
    return str(declared) if declared else default_scope(method)


def default_scope(method: str) -> str:
    """Reads, and creating or editing (POST, PATCH), need `read`; deleting needs `admin`."""
    return ADMIN if method.upper() == "DELETE" else READ


async def require_key(
    request: Request, rt: Annotated[Runtime, Depends(runtime)],
    _credentials: Annotated[HTTPAuthorizationCredentials | None, Security(_bearer)] = None,
) -> Principal | None:
    """Router dependency (the first of ROUTER_CHECKS, so every REST route has it): the API key
    allows this route's scope, and the project the request names (if any) is the key's. 401
    for a missing or invalid key, 403 for another project or too small a scope; None when auth
    is off."""
    route = request.scope.get("route")
    scope = route_scope(route, request.method) if isinstance(route, APIRoute) else ADMIN
    named = request.query_params.get("project") or request.headers.get("trajhub-project")
    try:
        principal = await authenticate(rt.db, rt.settings, request.headers.get("authorization"),
                                       scope)
        scoped_project(principal, named)
    except (Unauthenticated, Forbidden) as error:
        raise HTTPException(error.http_status, error.message,
                            headers=retry_headers(error)) from None
    return principal


#: the caller's key (None when auth is off); FastAPI runs `require_key` once per request
Key = Annotated[Principal | None, Depends(require_key)]


async def require_metrics_key(
    request: Request, rt: Annotated[Runtime, Depends(runtime)],
    _credentials: Annotated[HTTPAuthorizationCredentials | None, Security(_bearer)] = None,
) -> None:
    """Dependency of /metrics: with auth on, a key of scope `metrics` (or the bootstrap key),
    answered 401 / 403 like a REST route; nothing with auth off, or when TRAJHUB_METRICS_PUBLIC
    lets a Prometheus without credentials scrape. No project applies: the figures are
    server-wide."""
    if rt.settings.metrics_public:
        return
    try:
        await authenticate(rt.db, rt.settings, request.headers.get("authorization"), METRICS)
    except (Unauthenticated, Forbidden) as error:
        raise HTTPException(error.http_status, error.message,
                            headers=retry_headers(error)) from None


def project_scope(
    key: Key,
    project: Annotated[str | None, Query(
        # what projects.validate_project takes (empty: the default), so /openapi.json says it
        json_schema_extra={"pattern": "^[A-Za-z0-9._:-]{0,128}$"},
        description="project to read; default: the API key's project, else the "
                    "`trajhub-project` header, else `default`. Up to 128 letters, digits and "
                    "`._:-`, starting with a letter or digit. A key for another project gets "
                    "403")]
    = None,
    trajhub_project: Annotated[str | None, Header(include_in_schema=False)] = None,
) -> str:
    """FastAPI dependency: every query is scoped to one project (the key's, when there is
    one: `require_key` refused any other)."""
    if key is not None and key.project is not None:
        return key.project
    name = project or trajhub_project or "default"
    try:
        return validate_project(name)
    except InvalidProject as exc:
        source = "query parameter 'project'" if project else "header trajhub-project"
        raise HTTPException(400, f"{source}: {exc}") from None


Project = Annotated[str, Depends(project_scope)]
Rt = Annotated[Runtime, Depends(runtime)]


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


def no_trajectory(trace_id: str, project: str) -> HTTPException:
    """404: the trace has no trajectory (yet)."""
    return HTTPException(404, f"no trajectory for trace {trace_id} in project {project!r} (yet)")


def not_derived(error: str | None) -> HTTPException:
    """422: the trace's spans could not be turned into a trajectory; `error` says why."""
    return HTTPException(422, f"trajectory could not be derived: {error}")


async def derived_trajectory(rt: Runtime, project: str, trace_id: str
                             ) -> tuple[TrajectoryRow, str]:
    """The trace's stored trajectory row and its document's JSON text: 404 when there is no
    trajectory (yet), 422 when its derivation failed."""
    async with rt.db.acquire() as conn:
        row = await trajectory_reads.trajectory(conn, project, trace_id)
    if row is None:
        raise no_trajectory(trace_id, project)
    if row.document is None:
        raise not_derived(row.derivation_error)
    return row, row.document


async def derived_document(rt: Runtime, project: str, trace_id: str) -> str:
    """The stored trajectory document's JSON text of the trace (404 / 422 as
    `derived_trajectory`)."""
    return (await derived_trajectory(rt, project, trace_id))[1]


#: the largest page of steps or events, and the default
MAX_PAGE = 1000
DEFAULT_PAGE = 100
Offset = Annotated[int, Query(ge=0, le=INT32_MAX, description="the position of the first "
                              "item of the page (0: the first); `next_offset` of the previous "
                              "page")]


async def paged_read(rt: Runtime, project: str, trace_id: str,
                     wanted: Callable[[dict[str, Any], dict[str, Any] | None], Iterable[int]],
                     order: bool = False, raw: bool = False) -> step_chunks.PagedRead:
    """The trajectory's row and what a page of it needs (storage/step_chunks.py): 404 when
    there is none yet, 422 when it could not be derived."""
    async with rt.db.acquire() as conn:
        read = await step_chunks.read(conn, project, trace_id, wanted, order, raw)
    if read is None:
        raise no_trajectory(trace_id, project)
    if not read.derived:
        raise not_derived(read.derivation_error)
    return read


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


def _documented_paths(app: FastAPI) -> list[tuple[re.Pattern[str], int, str, frozenset[str]]]:
    """Each path template of /openapi.json as (regex, parameter count, template, methods)."""
    cached: list[tuple[re.Pattern[str], int, str, frozenset[str]]] | None = getattr(
        app.state, "documented_paths", None)
    if cached is None:
        cached = []
        for template, operations in app.openapi().get("paths", {}).items():
            regex = _TEMPLATE_PARAM.sub(lambda m: ".+" if m.group(1) else "[^/]+",
                                        re.escape(template).replace(r"\{", "{")
                                        .replace(r"\}", "}"))
            cached.append((re.compile(regex + "$"), len(_TEMPLATE_PARAM.findall(template)),
                           template, frozenset(m.upper() for m in operations)))
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


async def unstorable_text(request: Request, exc: Exception) -> Response:
    """PostgreSQL cannot hold a NUL character in text or JSON: a body that carries one (say
    `"\\u0000"` in an item's input) is the client's mistake, a 422, not a server error."""
    return JSONResponse({"detail": "a value in the request holds a NUL character (\\u0000), "
                                   f"which cannot be stored: {exc}"}, status_code=422)


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
ROUTER_CHECKS = [Depends(require_key), Depends(known_query_only), Depends(declared_content_type)]


_ERROR_REF = {"$ref": "#/components/schemas/ErrorDetail"}


def document_errors(app: FastAPI, auth_required: bool) -> None:
    """Make /openapi.json say what the server answers, so that a client generated from it, or a
    tool that checks answers against it, meets no surprise:

    - an error answer of a REST route is JSON (`ErrorDetail`), also where the route's success
      is NDJSON or a JSON Schema document, or where the route describes it in words only;
    - a REST route that takes a body lists 415 (`declared_content_type`);
    - an NDJSON answer's schema is its lines' model;
    - with API keys off, the bearer key is optional (`security: [{}, ...]`), since a request
      without one is served."""
    generate = app.openapi

    def openapi() -> dict[str, Any]:
        schema = generate()
        for path, operations in schema.get("paths", {}).items():
            for operation in operations.values():
                responses = operation.setdefault("responses", {})
                if path.startswith("/api/"):
                    if "requestBody" in operation and "415" not in responses:
                        responses["415"] = {
                            "description": "the body's Content-Type is not one the route "
                                           "takes (`detail` names them)",
                            "content": {"application/json": {"schema": dict(_ERROR_REF)}}}
                    for code, response in responses.items():
                        content = response.get("content")
                        for media in (content or {}).values():
                            schema_ = media.get("schema") or {}
                            # FastAPI writes a streamed route's model as {"type": "string",
                            # "$ref": ...}, which no body fits: NDJSON lines are each the model
                            if "$ref" in schema_ and schema_.get("type") == "string":
                                del schema_["type"]
                        if code[:1] in "45" and "application/json" not in (content or {}):
                            response["content"] = {"application/json": {
                                "schema": dict(_ERROR_REF)}}
                # the document is built once and post-processed on every read: add {} once
                security = operation.get("security")
                if not auth_required and security and {} not in security:
                    operation["security"] = [{}, *security]
        return schema

    app.openapi = openapi  # type: ignore[method-assign]


def document_scopes(app: FastAPI) -> None:
    """Write each REST operation's scope into /openapi.json (`x-trajhub-scope`): the declared
    one, else its method's default."""
    generate = app.openapi

    def openapi() -> dict[str, Any]:
        schema = generate()
        for path, operations in schema.get("paths", {}).items():
            if path.startswith("/api/"):
                for method, operation in operations.items():
                    operation.setdefault(SCOPE_EXTENSION, default_scope(method))
        return schema

    app.openapi = openapi  # type: ignore[method-assign]
