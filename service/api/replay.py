"""REST: replay — a run's contract, its step events (playback), its recorded tool results (hybrid
replay) and run-to-run comparison. Everything is read from the stored trajectory (and, for the
contract, the raw spans), so it follows the trajectory's revisions."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import asdict
from typing import Annotated, Any

import orjson
from fastapi import APIRouter, HTTPException, Query, Response
from fastapi.responses import StreamingResponse
from starlette.concurrency import run_in_threadpool

from trajhub.evaluators.compare import compare
from trajhub.evaluators.pricing import Prices, StepCost, run_cost
from trajhub.normalizers import pages
from trajhub.normalizers.contract import ContractField, run_contract
from trajhub.normalizers.playback import StepEvent, run_duration_ms, step_events, tool_results
from trajhub.records.replay import (
    ComparisonView,
    RunContract,
    RunCostView,
    StepEventView,
    ToolResults,
)
from trajhub.service.api.answers import CheckedRoute
from trajhub.service.api.cursors import offset_cursor, page_offset
from trajhub.service.api.models import NOT_FOUND
from trajhub.service.api.params import (
    MAX_PAGE,
    PREFIX,
    Cursor,
    Offset,
    TraceIdPath,
    TraceIdQuery,
)
from trajhub.service.api.scopes import Project, Rt
from trajhub.service.api.stored import no_trajectory, paged_read
from trajhub.service.prices import cost_json, prices_for
from trajhub.service.runtime import Runtime
from trajhub.service.stored_spans import iso_time, to_model
from trajhub.storage import replay_reads, step_chunks

# every route here reads runs or evaluations that may not exist (404)
router = APIRouter(prefix=PREFIX, route_class=CheckedRoute, tags=["replay"], responses=NOT_FOUND)

# ------------------------------------------------------------------------------ helpers

#: `offset` without `limit`: every event from there on
MAX_OFFSET = 2**31


class LoadedRun:
    def __init__(self, trace_id: str, row: Any, document: dict[str, Any]) -> None:
        self.trace_id = trace_id
        self.revision: int = row["revision"]
        self.status: str = row["status"]
        self.document = document
        self.events = step_events(document)

        self.duration_ms = run_duration_ms(document)


def _revision_headers(run: LoadedRun) -> dict[str, str]:
    return {"ETag": f'"{run.revision}"', "X-Trajectory-Status": run.status,
            "X-Trajectory-Revision": str(run.revision)}


def _usable(trace_id: str, project: str, row: Any) -> dict[str, Any]:
    if row is None:
        raise no_trajectory(trace_id, project)
    if row["document"] is None:
        raise HTTPException(422, f"the trajectory of trace {trace_id} could not be derived: "
                                 f"{row['derivation_error']}")
    document: dict[str, Any] = orjson.loads(row["document"])
    return document


async def load_run(rt: Runtime, project: str, trace_id: str) -> LoadedRun:
    async with rt.db.acquire() as conn:
        rows = await replay_reads.documents(conn, project, [trace_id])
    row = rows.get(trace_id)

    def parse() -> LoadedRun:
        return LoadedRun(trace_id, row, _usable(trace_id, project, row))

    # a large run's document takes seconds to parse and play back (docs/large-traces.md): off
    # the event loop, so that other requests (a first page) are answered meanwhile
    return await run_in_threadpool(parse)


class NDJSONResponse(Response):
    media_type = "application/x-ndjson"


def step_cost_json(cost: StepCost, prices: Prices) -> dict[str, Any]:
    return {"usd": cost.usd, "priced_as": cost.priced_as,
            "price_source": prices.label(cost.source) if cost.source is not None else None}


def event_json(event: StepEvent, costs: dict[str, StepCost], prices: Prices) -> dict[str, Any]:
    out = asdict(event)
    # the API's time vocabulary (README, "Times"): the moment as RFC 3339 text
    out["start_time"] = iso_time(event.started_at_ms * 1_000_000)
    cost = costs.get(event.step_id)
    out["cost"] = (step_cost_json(cost, prices)
                   if cost is not None and event.type == "model" else None)
    return out


def _field(value: ContractField) -> dict[str, Any]:
    return {"known": value.known, "values": [asdict(v) for v in value.values]}


# ------------------------------------------------------------------------------ routes


@router.get("/trajectories/compare", response_model=ComparisonView,
            summary="Two runs' steps aligned: first divergence, edits and metric deltas")
async def compare_runs(
    rt: Rt, project: Project,
    a: Annotated[TraceIdQuery, Query(description="trace id of the first (baseline) run")],
    b: Annotated[TraceIdQuery, Query(description="trace id of the second (candidate) run")],
) -> Any:
    """Steps are aligned by minimum edit distance over (type, name, canonical arguments);
    parallel tool calls are compared in a canonical order. Deltas are b − a."""
    prices = prices_for(rt.settings)
    run_a, run_b = await load_run(rt, project, a), await load_run(rt, project, b)
    c = compare(run_a.events, run_a.duration_ms, run_b.events, run_b.duration_ms)
    cost_a = run_cost(prices, run_a.events).run
    cost_b = run_cost(prices, run_b.events).run
    deltas: dict[str, float | None] = {**c.deltas}
    deltas["cost_usd"] = (round(cost_b.usd - cost_a.usd, 10)
                          if cost_a.usd is not None and cost_b.usd is not None
                          and cost_a.complete and cost_b.complete else None)
    return {
        "a": {"trace_id": run_a.trace_id, "revision": run_a.revision, "status": run_a.status,
              "metrics": c.a.model_dump(), "cost": cost_json(cost_a, prices)},
        "b": {"trace_id": run_b.trace_id, "revision": run_b.revision, "status": run_b.status,
              "metrics": c.b.model_dump(), "cost": cost_json(cost_b, prices)},
        "distance": c.distance, "counts": c.counts,
        "first_divergence": c.first_divergence.model_dump() if c.first_divergence else None,
        "alignment": [p.model_dump() for p in c.alignment], "deltas": deltas,
    }


@router.get("/trajectories/{trace_id}/cost", response_model=RunCostView,
            summary="Tokens and money per model step, per agent and for the run")
async def cost(trace_id: TraceIdPath, rt: Rt, project: Project) -> Any:
    """Priced with genai-prices' bundled data, under the TRAJHUB_PRICES table when one is set
    (docs/costs.md); a model neither knows has no price (`usd` null) and is named in
    `unpriced_models`. Each step says which source priced it, with its date."""
    prices = prices_for(rt.settings)
    run = await load_run(rt, project, trace_id)
    costs = run_cost(prices, run.events)
    names = {e.agent_step_id: e.agent for e in run.events}
    model_events = [e for e in run.events if e.type == "model"]
    return {
        "trace_id": run.trace_id, "revision": run.revision, "status": run.status,
        "run": cost_json(costs.run, prices),
        "agents": [{"agent_step_id": agent_id, "agent": names.get(agent_id, ""),
                    "cost": cost_json(c, prices)} for agent_id, c in costs.agents.items()],
        "steps": [{"step_id": e.step_id, "agent": e.agent, "model": e.model,
                   **step_cost_json(costs.steps[e.step_id], prices)} for e in model_events],
    }


@router.get("/trajectories/{trace_id}/contract", response_model=RunContract,
            summary="The run contract: models, sampling, prompt and tool-schema hashes, versions")
async def contract(trace_id: TraceIdPath, rt: Rt, project: Project) -> Any:
    """Read from whatever the instrumentation recorded; each value says where it came from,
    and `unknown` lists what nothing recorded."""
    async with rt.db.acquire() as conn:
        row, span_rows, envelopes = await replay_reads.trajectory_with_spans(
            conn, project, trace_id)
    document = _usable(trace_id, project, row)
    assert row is not None
    c = run_contract(to_model(span_rows, envelopes), document)
    return {
        "trace_id": trace_id, "revision": row["revision"], "status": row["status"],
        **{name: _field(value) for name, value in vars(c).items()
           if isinstance(value, ContractField)},
        "sampling": {name: _field(value) for name, value in c.sampling.items()},
        "unknown": c.unknown(),
    }


@router.get(
    "/trajectories/{trace_id}/events",
    summary="Playback: the run's steps as ordered, append-only events (NDJSON), whole or a page",
    response_class=NDJSONResponse,
    responses={200: {"model": StepEventView,
                     "description": "One StepEventView per line, in the order the steps "
                     "started. Headers: `ETag` / `X-Trajectory-Revision` (the trajectory "
                     "revision the events come from), `X-Trajectory-Status`, `X-Total-Count` "
                     "(the run's events) and, with `limit` unless this is the last page, "
                     "`X-Next-Cursor` (pass as `cursor` for the next page; `X-Next-Offset`, "
                     "its deprecated alias, as `offset`). Without `limit`, a large run's "
                     "events are streamed.",
                     "headers": {
                         "X-Total-Count": {"description": "how many events the run has",
                                           "schema": {"type": "integer"}},
                         "X-Next-Cursor": {"description": "with `limit`, unless the page is "
                                           "the last: pass as `cursor` for the next page",
                                           "schema": {"type": "string"}},
                         "X-Next-Offset": {"description": "with `limit`, unless the page is "
                                           "the last: the `offset` of the next page; "
                                           "deprecated: use `X-Next-Cursor` (kept for one "
                                           "version)",
                                           "deprecated": True,
                                           "schema": {"type": "integer"}}}},
               404: {"description": "No spans of this trace yet"},
               422: {"description": "The trajectory could not be derived"}},
)
async def events(
    trace_id: TraceIdPath, rt: Rt, project: Project, cursor: Cursor = None, offset: Offset = 0,
    limit: Annotated[int | None, Query(ge=1, le=MAX_PAGE, description="a page of at most this "
                                       "many events from `cursor` (docs/large-traces.md); "
                                       "without it, every event from there on")] = None,
) -> Response:
    offset = page_offset(cursor, offset)
    prices = prices_for(rt.settings)
    count = MAX_OFFSET if limit is None else limit
    # without `limit`, a large run's events are streamed a page at a time from its chunks,
    # each read when its page needs it: the whole playback is hundreds of MiB as objects
    stream = limit is None

    def wanted(head: object, order: dict[str, Any] | None) -> set[int]:
        assert order is not None
        return pages.event_chunks(order, offset, count)

    read = await paged_read(rt, project, trace_id, wanted, order=True, raw=stream)
    headers = {"ETag": f'"{read.revision}"', "X-Trajectory-Status": read.status,
               "X-Trajectory-Revision": str(read.revision)}
    if read.order is None:
        assert read.document is not None
        document = read.document

        def whole_page() -> tuple[int, bytes, int]:
            every = step_events(document)
            page = every[offset:offset + count]
            return len(every), _ndjson(page, run_cost(prices, page).steps, prices), len(page)

        # a document's playback takes long for a large one: off the event loop
        total, body, shown = await run_in_threadpool(whole_page)
    elif stream:
        order = read.order
        total = len(order["event_steps"])
        headers["X-Total-Count"] = str(total)
        return StreamingResponse(_streamed(order, read.stored, offset, prices),
                                 media_type=NDJSONResponse.media_type, headers=headers)
    else:
        total = len(read.order["event_steps"])
        page = pages.page_events(read.order, read.chunks, offset, count)
        body, shown = _ndjson(page, run_cost(prices, page).steps, prices), len(page)
    headers["X-Total-Count"] = str(total)
    if offset + shown < total:
        headers["X-Next-Cursor"] = offset_cursor(offset + shown)
        headers["X-Next-Offset"] = str(offset + shown)
    return NDJSONResponse(body, headers=headers)


#: events per streamed piece of a whole playback
STREAM_PAGE = 1000


def _streamed(order: dict[str, Any], stored: dict[int, bytes], offset: int, prices: Prices
              ) -> Iterator[bytes]:
    """A large run's events from `offset` on as NDJSON, a page at a time; each page parses
    the chunks it needs (keeping those the next page needs again), so memory stays that of a
    page. Starlette runs this iterator off the event loop."""
    parsed: dict[int, Any] = {}
    for start in range(offset, len(order["event_steps"]), STREAM_PAGE):
        needed = pages.event_chunks(order, start, STREAM_PAGE)
        parsed = {n: parsed[n] if n in parsed else step_chunks.loads(stored[n])
                  for n in needed}
        page = pages.page_events(order, parsed, start, STREAM_PAGE)
        yield _ndjson(page, run_cost(prices, page).steps, prices)


def _ndjson(events: list[StepEvent], costs: dict[str, StepCost], prices: Prices) -> bytes:
    return b"".join(orjson.dumps(StepEventView.model_validate(
        event_json(e, costs, prices)).model_dump()) + b"\n" for e in events)


@router.get("/trajectories/{trace_id}/tool-results", response_model=ToolResults,
            summary="Recorded tool outputs, keyed for hybrid replay")
async def recorded_tool_results(trace_id: TraceIdPath, rt: Rt, project: Project,
                                response: Response) -> Any:
    """Every tool call of the run: tool name, call id, the canonical hash of its arguments,
    its output and error. `trajhub.service.client.replay` serves them to a re-run agent."""
    run = await load_run(rt, project, trace_id)
    response.headers.update(_revision_headers(run))
    return {"trace_id": run.trace_id, "revision": run.revision, "status": run.status,
            "results": [asdict(r) for r in tool_results(run.events)]}
