"""Who may call a REST route: the API key it needs (`needs`), the key check every route runs
(`require_key`), and the project a request reads or writes (`Project`)."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import Depends, Header, HTTPException, Query, Request, Security
from fastapi.routing import APIRoute
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer

from trajhub.service.auth import ADMIN, METRICS, READ, Principal, authenticate, scoped_project
from trajhub.service.errors import Forbidden, Unauthenticated, retry_headers
from trajhub.service.projects import InvalidProject, validate_project
from trajhub.service.runtime import Runtime, runtime

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
