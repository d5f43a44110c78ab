"""REST: the agent graph of one trajectory, and of the trajectories a filter selects.

The graph is built by `evaluators.agent_graph` (pure, from the stored documents) and placed by
`evaluators.graph_layout` (igraph's Sugiyama layout); this module only loads the documents and
calls them, off the event loop, on a thread of their own. docs/agent-graph.md says what the
graph shows.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Annotated, Any, TypeVar

import orjson
from fastapi import APIRouter, Query
from pydantic import ConfigDict, Field

from trajhub.evaluators.agent_graph import aggregate, graph_of
from trajhub.evaluators.graph_layout import place
from trajhub.records.graphs import AgentGraphView
from trajhub.service.api.answers import CheckedRoute
from trajhub.service.api.filters import TrajectoryQuery
from trajhub.service.api.models import NOT_FOUND
from trajhub.service.api.params import PREFIX, TraceIdPath
from trajhub.service.api.scopes import Project, Rt
from trajhub.service.api.stored import NOT_DERIVED, derived_document
from trajhub.storage import trajectory_reads

router = APIRouter(prefix=PREFIX, route_class=CheckedRoute, tags=["graph"])

#: the most trajectories one aggregate reads
MAX_RUNS = 1000
#: every layout runs on this one thread: igraph's C core is not made for threads
#: (evaluators/graph_layout.py)
_LAYOUT = ThreadPoolExecutor(max_workers=1, thread_name_prefix="graph-layout")
T = TypeVar("T")


async def _laid_out(build: Callable[[T], dict[str, Any]], documents: T) -> dict[str, Any]:
    return await asyncio.get_running_loop().run_in_executor(_LAYOUT, build, documents)


class GraphQuery(TrajectoryQuery):
    """The trajectory list's filters, and how many of the newest matching runs to read."""

    model_config = ConfigDict(extra="ignore", frozen=True)

    limit: int = Field(500, ge=1, le=MAX_RUNS, description="the newest this many matching "
                       "trajectories (by start time) go into the graph")


def _single(document: str) -> dict[str, Any]:
    return place(graph_of(orjson.loads(document)))


def _many(documents: list[str]) -> dict[str, Any]:
    return place(aggregate(orjson.loads(doc) for doc in documents))


@router.get(
    "/trajectories/{trace_id}/graph", response_model=AgentGraphView,
    summary="The agent graph of one trajectory, laid out",
    responses={**NOT_FOUND, **NOT_DERIVED})
async def trajectory_graph(trace_id: TraceIdPath, rt: Rt, project: Project) -> dict[str, Any]:
    """Its agents and the nodes they ran, with hand-offs and transitions counted, parallel
    branches and failed nodes marked, and every node's step ids (to select them). Built from
    the stored trajectory document; an `open` trajectory is drawn as it stands."""
    text = await derived_document(rt, project, trace_id)
    return await _laid_out(_single, text)


@router.get(
    "/graph", response_model=AgentGraphView,
    summary="The agent graph of many trajectories: the paths taken and how often")
async def aggregate_graph(
    rt: Rt, project: Project, query: Annotated[GraphQuery, Query()],
) -> dict[str, Any]:
    """The trajectories the filters select (the filters of `GET /api/v1/trajectories`), the
    newest `limit` of them, in one graph: counts add up over the runs, `runs` on a node or edge
    says in how many trajectories it occurs, and `paths` lists the sequences of agents entered
    with how many runs took each. Trajectories whose spans could not be derived are left out.
    For example `?agent=supervisor&limit=500`: that agent's last
    500 runs."""
    f = query.to_filter(limit=query.limit)
    async with rt.db.acquire() as conn:
        rows = await trajectory_reads.trajectory_documents(conn, project, f)
    # trajectories whose spans could not be derived have no document and are not selected
    documents = [row.document for row in rows if row.document is not None]
    return await _laid_out(_many, documents)
