"""The REST API's one parent router: the checks every route runs (the API key, unknown query
parameters, the body's content type) and the error answers every route documents. Each
module's router holds only its own routes, under `params.PREFIX`.

Routes are matched most specific first, whatever order the modules are listed in: at the first
segment where two paths differ, a literal (`/trajectories/compare`) comes before a parameter
(`/trajectories/{trace_id}`)."""

from __future__ import annotations

from collections.abc import Sequence
from types import ModuleType

from fastapi import APIRouter
from fastapi.routing import APIRoute
from starlette.routing import BaseRoute

from trajhub.service.api import (
    alerts,
    atif,
    datasets,
    evaluations,
    graph,
    item_drafts,
    keys,
    logs,
    regressions,
    replay,
    retention,
    review,
    revisions,
    rules,
    schema,
    scores,
    sessions,
    timeseries,
    traces,
    trajectories,
)
from trajhub.service.api.models import ERRORS
from trajhub.service.api.request_checks import ROUTER_CHECKS

_MODULES = (traces, trajectories, replay, atif, sessions, datasets, evaluations, regressions,
            revisions, graph, scores, rules, review, retention, item_drafts, schema, keys, logs,
            timeseries, alerts)


def specificity(route: BaseRoute) -> tuple[int, ...]:
    """0 for each literal segment of the route's path, 1 for each parameter: sorted by it, a
    literal segment comes before a parameter at the first place two paths differ."""
    assert isinstance(route, APIRoute), route
    return tuple(int(part.startswith("{")) for part in route.path.strip("/").split("/"))


def ordered_routes(modules: Sequence[ModuleType] = _MODULES) -> list[BaseRoute]:
    """The modules' routes in the order they are matched in: one list, so that they are
    ordered across modules (an included router is matched as a block)."""
    return sorted((route for module in modules for route in module.router.routes),
                  key=specificity)


def api_router() -> APIRouter:
    """Every REST route, with the checks and the error answers. Each route already carries its
    own module router's prefix, tags, responses and dependencies."""
    every = APIRouter()
    every.routes.extend(ordered_routes())
    api = APIRouter(dependencies=ROUTER_CHECKS, responses=ERRORS)
    api.include_router(every)
    return api
