"""The HTTP application: ingest endpoints, the REST API, health checks and OpenAPI docs."""

from __future__ import annotations

import logging
from collections.abc import Callable

import asyncpg
from fastapi import Depends, FastAPI, Request, Response
from fastapi.exception_handlers import http_exception_handler
from fastapi.exceptions import RequestValidationError
from fastapi.middleware.cors import CORSMiddleware
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException

from trajhub import __version__
from trajhub.service import metrics
from trajhub.service.access import AccessMiddleware
from trajhub.service.api import docs
from trajhub.service.api.models import ErrorDetail, HealthStatus, ReadyStatus, restore_examples
from trajhub.service.api.openapi_doc import document_errors, document_scopes
from trajhub.service.api.request_checks import (
    UNSTORABLE_TEXT_ERRORS,
    allowed_methods,
    parameter_error,
    unstorable_text,
)
from trajhub.service.api.routes import api_router
from trajhub.service.api.scopes import needs, require_metrics_key
from trajhub.service.auth import METRICS, auth_enabled
from trajhub.service.ingest import http as routes_ingest
from trajhub.service.runtime import Runtime
from trajhub.service.shortages import SHORTAGES
from trajhub.service.ui import mount as mount_ui
from trajhub.storage.compression import UnknownDictionary
from trajhub.storage.database import TRANSIENT_ERRORS, is_transient, shortage, unavailable_reason

log = logging.getLogger("trajhub.api")

DESCRIPTION = """\
trajhub receives OpenTelemetry traces from LLM agents (OTLP over HTTP and gRPC, and the Coze Loop
ingest API), stores every span losslessly in PostgreSQL, and turns each trace into a standard
trajectory you can query, export to datasets and score.

Every REST query is scoped to one project: the `project` query parameter, else the
`trajhub-project` header, else `default`. A bad or unknown query parameter is a 400 naming it;
a request that changes state must carry the content type its endpoint declares (415 otherwise).

When the server runs with API keys (TRAJHUB_AUTH), every route but /healthz, /readyz, the web
UI's shell and these docs takes `Authorization: Bearer <key>`: a missing, unknown or revoked key
gets 401, a key for another project or with too small a scope 403. The key's project is the
project of every request (naming another one is a 403). Each operation's `x-trajhub-scope` says
which scope it needs: `ingest`, `read` (reads; creating and editing datasets and evaluations),
`admin` (keys, re-derivation, deletes; an admin key may also read and ingest) or `metrics`
(/metrics alone, whose figures are server-wide; TRAJHUB_METRICS_PUBLIC=true opens it to all).
Keys are managed over REST only while auth is on (403 otherwise): the first key comes from
`trajhub keys create`.
"""


def create_app(rt: Runtime, workers_missing: Callable[[], str] | None = None) -> FastAPI:
    """`workers_missing` says why a worker process is missing ("" when none is): /readyz
    reports not ready meanwhile."""
    # /docs and /redoc are served from assets shipped in an installed package (docs.py), so
    # they work without network access
    app = FastAPI(title="trajhub", version=__version__, description=DESCRIPTION,
                  docs_url=None, redoc_url=None)
    app.state.runtime = rt
    # FastAPI drops every null from /openapi.json, examples included; put them back
    default_openapi = app.openapi
    app.openapi = lambda: restore_examples(default_openapi())  # type: ignore[method-assign]
    app.add_exception_handler(RequestValidationError, parameter_error)
    for error in UNSTORABLE_TEXT_ERRORS:
        app.add_exception_handler(error, unstorable_text)
    if rt.settings.cors_origin_list:
        app.add_middleware(
            CORSMiddleware,
            allow_origins=rt.settings.cors_origin_list,
            # every method a route has (a list here fell behind the routes once: PUT was missing)
            allow_methods=["*"],
            allow_headers=["*"],
            max_age=600,
        )

    async def _unreachable(request: Request, exc: Exception) -> Response:
        if not is_transient(exc):
            raise exc  # a bug: the server's 500
        metrics.DATABASE_ERRORS.labels("api").inc()
        # the answer names the kind of fault, the log PostgreSQL's own text
        lack = shortage(exc)
        if lack is not None:
            SHORTAGES.seen(lack, "api", str(exc))
        else:
            log.warning("database unavailable to %s %s: %r", request.method, request.url.path,
                        exc)
        return JSONResponse({"detail": f"database unavailable: {unavailable_reason(exc)}"},
                            status_code=503, headers={"Retry-After": "2" if lack is None else "5"})

    # any database error: a shortage can come under a class that is otherwise a bug (XX000)
    database_errors: tuple[type[Exception], ...] = (*TRANSIENT_ERRORS, asyncpg.PostgresError)
    for transient in database_errors:
        app.add_exception_handler(transient, _unreachable)

    async def _no_dictionary(request: Request, exc: Exception) -> Response:
        # the value cannot be read until the dictionary is back (e.g. a restore without its
        # table): the server is not at fault for the request, nor the request for the value
        return JSONResponse({"detail": f"a stored value cannot be read: {exc}"},
                            status_code=503, headers={"Retry-After": "60"})

    app.add_exception_handler(UnknownDictionary, _no_dictionary)

    async def _http_error(request: Request, exc: Exception) -> Response:
        assert isinstance(exc, StarletteHTTPException)
        if exc.status_code == 405:
            allow, _ = allowed_methods(app, request.url.path)
            if allow:
                exc.headers = {**(exc.headers or {}), "Allow": allow}
        return await http_exception_handler(request, exc)

    app.add_exception_handler(StarletteHTTPException, _http_error)

    @app.get("/healthz", tags=["health"], summary="The process is up",
             response_model=HealthStatus)
    async def healthz() -> dict[str, str]:
        return {"status": "ok"}

    @app.get("/readyz", tags=["health"],
             summary="The database is reachable and every worker process is running",
             response_model=ReadyStatus,
             responses={503: {"model": ReadyStatus, "description": "not ready (why in "
                              "`detail`)"}})
    async def readyz() -> Response:
        missing = workers_missing() if workers_missing is not None else ""
        if missing:
            return JSONResponse({"status": "unavailable", "detail": missing}, status_code=503)
        lacking = SHORTAGES.current()
        try:
            async with rt.db.acquire(timeout=2) as conn:
                backlog, oldest = await metrics.derivation_backlog(conn)
        except Exception as exc:
            if not is_transient(exc):
                raise
            detail = shortage(exc) or str(exc)
            if lacking is not None:
                detail = f"{lacking}; now: {detail}"
            return JSONResponse({"status": "unavailable", "detail": detail}, status_code=503)
        figures = {"derivation_backlog": backlog, "derivation_backlog_oldest_ms": round(
            oldest * 1000), "derivation_backlog_oldest_seconds": oldest}
        if lacking is not None:
            return JSONResponse({"status": "unavailable", "detail": lacking, **figures},
                                status_code=503)
        return JSONResponse({"status": "ready", **figures})

    @app.get("/metrics", tags=["health"], summary="Prometheus metrics",
             response_class=Response, dependencies=[Depends(require_metrics_key)],
             openapi_extra=needs(METRICS),
             responses={200: {"content": {"text/plain": {"schema": {"type": "string"}}},
                              "description": "the Prometheus text format"},
                        401: {"model": ErrorDetail, "description": (
                            "auth is on and TRAJHUB_METRICS_PUBLIC is not: no API key, or one "
                            "that is not valid (unknown or revoked); `detail` says which")},
                        403: {"model": ErrorDetail, "description": (
                            "the API key's scope is not `metrics` (an admin key of a project "
                            "does not include it); `detail` names the scope")}})
    async def prometheus_metrics() -> Response:
        """Requests by transport and outcome, latency, requests in flight, spans accepted and
        rejected, the ingest queue, the derivation backlog and its oldest entry's age,
        derivation time and database errors (README, Operations).

        The figures are server-wide, every project's traffic. With API keys on (TRAJHUB_AUTH)
        a scrape needs `Authorization: Bearer <key>` with a key of scope `metrics` (or
        TRAJHUB_BOOTSTRAP_KEY), unless the server runs with TRAJHUB_METRICS_PUBLIC=true, which
        serves them to anyone who reaches the port. With auth off no key is needed."""
        body, media_type = await metrics.exposition(rt.db)
        return Response(body, media_type=media_type)

    app.include_router(routes_ingest.router)
    app.include_router(api_router())
    app.include_router(docs.router)
    document_scopes(app)
    document_errors(app, auth_enabled(rt.settings))
    mount_ui(app)
    # outermost: it times and logs every answer, the error handlers' included
    app.add_middleware(AccessMiddleware)
    # the path table error answers read (request_checks.allowed_methods), built before serving,
    # not in the first request that needs it
    allowed_methods(app, "/")
    return app

