"""The access log and the request metrics of both transports.

One `trajhub.access` record per answered request, with the fields method, path, status,
duration_ms, project, and for ingest spans_accepted / spans_rejected (see service/logs.py for how
fields are written). HTTP requests pass through `AccessMiddleware`; the gRPC handler calls
`record()` itself. Ingest routes put the span counts in the request state (`note_spans`).
"""

from __future__ import annotations

import logging
import time
from typing import Any
from urllib.parse import parse_qs

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from trajhub.service import metrics
from trajhub.service.projects import PROJECT_HEADERS

log = logging.getLogger("trajhub.access")

#: request-state keys the ingest routes fill in
SPANS_ACCEPTED = "spans_accepted"
SPANS_REJECTED = "spans_rejected"


def note_spans(state: Any, accepted: int, rejected: int) -> None:
    """Called by an ingest route with what its request stored and rejected."""
    setattr(state, SPANS_ACCEPTED, accepted)
    setattr(state, SPANS_REJECTED, rejected)


def record(transport: str, method: str, path: str, status: int | str, seconds: float,
           project: str | None, accepted: int | None = None,
           rejected: int | None = None, metric_status: int | None = None) -> None:
    """Log one access line and count the request."""
    metrics.observe_request(transport, metric_status if metric_status is not None
                            else int(status), seconds)
    log.info("%s %s %s", method, path, status, extra={"fields": {
        "transport": transport, "method": method, "path": path, "status": status,
        "duration_ms": round(seconds * 1000, 2), "project": project,
        "spans_accepted": accepted, "spans_rejected": rejected}})


def _project(scope: Scope) -> str | None:
    """The project a request names: the `project` query parameter, else a project header."""
    query: dict[str, list[str]] = parse_qs(scope.get("query_string", b"").decode("latin-1"))
    if query.get("project"):
        return query["project"][0]
    headers: dict[str, str] = {k.decode("latin-1"): v.decode("latin-1")
                               for k, v in scope.get("headers", ())}
    for name in PROJECT_HEADERS:
        if headers.get(name):
            return headers[name]
    return None


class AccessMiddleware:
    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = time.perf_counter()
        status = 500  # when the app fails before answering
        state = scope.setdefault("state", {})

        async def send_status(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
            await send(message)

        in_flight = metrics.IN_FLIGHT.labels("http")
        in_flight.inc()
        try:
            await self.app(scope, receive, send_status)
        finally:
            in_flight.dec()
            record("http", scope["method"], scope["path"], status,
                   time.perf_counter() - started, _project(scope),
                   state.get(SPANS_ACCEPTED), state.get(SPANS_REJECTED))


__all__ = ["AccessMiddleware", "note_spans", "record"]
