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
from pydantic import BaseModel, Field
from starlette.concurrency import run_in_threadpool

from trajhub.evaluators.compare import RunMetrics, compare
from trajhub.evaluators.pricing import Prices, StepCost, run_cost
from trajhub.normalizers import pages
from trajhub.normalizers.contract import ContractField, run_contract

# the step events' parts are the normalizer's own dataclasses (one definition each)
from trajhub.normalizers.playback import (
    StepEvent,
    Tokens,
    run_duration_ms,
    step_events,
    tool_results,
)
from trajhub.normalizers.trajectory import StepError
from trajhub.service.api.answers import CheckedRoute
from trajhub.service.api.cursors import offset_cursor, page_offset
from trajhub.service.api.models import NOT_FOUND, CostView, example_config
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

# ------------------------------------------------------------------------------ response models


class Sourced(BaseModel):
    value: Any
    source: str = Field(description="where the value was read: a span attribute, a resource "
                        "attribute, the trajectory document, …")


class ContractValue(BaseModel):
    known: bool = Field(description="false: nothing in the run recorded this")
    values: list[Sourced] = Field(description="the distinct values, in the order seen")


class RunContract(BaseModel):
    model_config = example_config({
        "trace_id": "1de9ea6670d3da1fc735df5ef7697fb9", "revision": 1, "status": "final",
        "model_names": {"known": True, "values": [{
            "value": "fake-gpt-4o-mini",
            "source": "trajectory step 19322fed157cf9c6 metadata.model_name"}]},
        "model_versions": {"known": False, "values": []},
        "model_providers": {"known": True, "values": [{
            "value": "openai", "source": "trajectory step 19322fed157cf9c6 "
            "metadata.model_provider"}]},
        "sampling": {
            "temperature": {"known": True, "values": [{
                "value": 0.0, "source": "span 19322fed157cf9c6 attribute "
                "llm.invocation_parameters.temperature"}]},
            "top_p": {"known": False, "values": []}, "top_k": {"known": False, "values": []},
            "max_tokens": {"known": False, "values": []},
            "seed": {"known": False, "values": []}, "stop": {"known": False, "values": []},
            "frequency_penalty": {"known": False, "values": []},
            "presence_penalty": {"known": False, "values": []}},
        "system_prompt_hash": {"known": True, "values": [{
            "value": "sha256:7753e3382dcda9164e49aeb48db6d7265bbbd2f496be8b5941db5a193831dc39",
            "source": "trajectory step 19322fed157cf9c6 input (system message)"}]},
        "system_prompt_version": {"known": False, "values": []},
        "tool_schema_hash": {"known": True, "values": [{
            "value": "sha256:da09ad3ebe37be7c88a5d293cd1e2b175c60b5d75c237bc29205249393fbff3d",
            "source": "span 19322fed157cf9c6 attribute llm.tools.*.tool.json_schema"}]},
        "tool_names": {"known": True, "values": [{
            "value": ["add", "divide", "get_weather"],
            "source": "span 19322fed157cf9c6 attribute llm.tools.*.tool.json_schema"}]},
        "framework": {"known": True, "values": [{
            "value": "langgraph", "source": "trajectory root_step metadata.framework"}]},
        "framework_version": {"known": False, "values": []},
        "instrumentation": {"known": True, "values": [{
            "value": "openinference.instrumentation.langchain 0.1.80",
            "source": "instrumentation scope of span 17346b4501eaf614"}]},
        "sdk": {"known": True, "values": [{
            "value": "opentelemetry-python 1.45.2",
            "source": "resource of span 17346b4501eaf614 attribute telemetry.sdk.*"}]},
        "service_version": {"known": True, "values": [{
            "value": "0.0.1",
            "source": "resource of span 17346b4501eaf614 attribute service.version"}]},
        "unknown": ["model_versions", "system_prompt_version", "framework_version",
                    "sampling.top_p", "sampling.top_k", "sampling.max_tokens", "sampling.seed",
                    "sampling.stop", "sampling.frequency_penalty",
                    "sampling.presence_penalty"]})
    trace_id: str
    revision: int
    status: str
    model_names: ContractValue
    model_versions: ContractValue = Field(description="the model version the provider "
                                          "answered with (e.g. gen_ai.response.model)")
    model_providers: ContractValue
    sampling: dict[str, ContractValue] = Field(description="temperature, top_p, top_k, "
                                               "max_tokens, seed, stop, frequency_penalty, "
                                               "presence_penalty")
    system_prompt_hash: ContractValue = Field(description="sha256 of each system prompt text")
    system_prompt_version: ContractValue
    tool_schema_hash: ContractValue = Field(description="sha256 of the canonical JSON of the "
                                            "tool definitions given to the model, sorted by name")
    tool_names: ContractValue
    framework: ContractValue
    framework_version: ContractValue
    instrumentation: ContractValue
    sdk: ContractValue
    service_version: ContractValue
    unknown: list[str] = Field(description="the fields nothing recorded")


class StepCostView(BaseModel):
    usd: float | None = Field(description="null: no price for this model")
    priced_as: str | None = Field(description="the price entry used: `provider:model` of "
                                  "genai-prices, or the TRAJHUB_PRICES key")
    price_source: str | None = Field(description="where the price came from, with its date "
                                     "(see CostView.price_sources); null when not priced")


class StepEventView(BaseModel):
    """One line of the NDJSON playback."""

    seq: int
    step_id: str
    parent_id: str
    type: str = Field(description="model, tool, agent or graph")
    name: str
    agent: str = Field(description="the agent (or graph) activation the step belongs to")
    agent_step_id: str
    agent_path: list[str] = Field(description="the agent and graph activations from the "
                                  "outermost down to `agent`")
    start_time: str = Field(description="RFC 3339: when the step started")
    started_at_ms: int = Field(description="the start as Unix milliseconds; deprecated: use "
                               "`start_time` (kept for one version)", deprecated=True)
    duration_ms: int
    input: str
    output: str
    error: StepError | None
    model: str | None
    tokens: Tokens | None
    tool_call_id: str | None
    arguments_hash: str | None
    metadata: dict[str, str]
    cost: StepCostView | None = Field(description="model steps only")


class ToolResultView(BaseModel):
    tool_name: str
    call_id: str | None
    arguments: Any
    arguments_hash: str = Field(description="sha256 of the arguments' canonical JSON (keys "
                                "sorted, no whitespace, integral floats as integers)")
    output: str
    error: StepError | None
    step_id: str
    agent: str
    seq: int


class ToolResults(BaseModel):
    model_config = example_config({
        "trace_id": "1de9ea6670d3da1fc735df5ef7697fb9", "revision": 1, "status": "final",
        "results": [
            {"tool_name": "get_weather", "call_id": "call_weather_1",
             "arguments": {"city": "Paris"},
             "arguments_hash": "sha256:6e1e312d537bc71b5410b0599f5a508142149e13174c6ee0d1671658"
                               "845bc67d",
             "output": "Sunny, 22C in Paris", "error": None, "step_id": "040e1e30c9ed0248",
             "agent": "LangGraph", "seq": 1},
            {"tool_name": "divide", "call_id": "call_div_1", "arguments": {"a": 1, "b": 0},
             "arguments_hash": "sha256:70c75ca39048db680b52c5fd0040136c6bcb678be341277eaaac5af"
                               "d16d4e70d",
             "output": "",
             "error": {"code": -1, "msg": "ZeroDivisionError: float division by zero"},
             "step_id": "3ff4bb8cf703c9ff", "agent": "LangGraph", "seq": 4}]})
    trace_id: str
    revision: int
    status: str
    results: list[ToolResultView]




class AgentCostView(BaseModel):
    agent_step_id: str
    agent: str
    cost: CostView


class StepCostEntry(BaseModel):
    step_id: str
    agent: str
    model: str | None
    usd: float | None = Field(description="null: no price for this model")
    priced_as: str | None = Field(description="the price entry used: `provider:model` of "
                                  "genai-prices, or the TRAJHUB_PRICES key")
    price_source: str | None = Field(description="where the price came from, with its date; "
                                     "null when not priced")


_GENAI = "genai-prices 0.2.3, data of 2026-11-10"
_UNPRICED_COST = {"input_tokens": 530, "output_tokens": 73, "cached_input_tokens": 160,
                  "cache_write_tokens": 0, "reasoning_tokens": 0,
                  "usd": None, "complete": False, "unpriced_models": ["fake-gpt-4o-mini"],
                  "price_sources": [], "currency": "USD", "price_table": _GENAI,
                  "prices_as_of": "2026-11-10"}


class RunCostView(BaseModel):
    model_config = example_config({
        "trace_id": "1de9ea6670d3da1fc735df5ef7697fb9", "revision": 1, "status": "final",
        "run": _UNPRICED_COST,
        "agents": [{"agent_step_id": "17346b4501eaf614", "agent": "LangGraph",
                    "cost": _UNPRICED_COST}],
        "steps": [{"step_id": "19322fed157cf9c6", "agent": "LangGraph",
                   "model": "fake-gpt-4o-mini", "usd": None, "priced_as": None,
                   "price_source": None},
                  {"step_id": "d868c2cf1d4a2b12", "agent": "LangGraph",
                   "model": "fake-gpt-4o-mini", "usd": None, "priced_as": None,
                   "price_source": None}]})
    trace_id: str
    revision: int
    status: str
    run: CostView
    agents: list[AgentCostView] = Field(description="each agent activation's own model steps")
    steps: list[StepCostEntry] = Field(description="every model step")


class StepRefView(BaseModel):
    seq: int
    step_id: str
    type: str
    name: str
    agent: str
    arguments_hash: str | None


class AlignedPairView(BaseModel):
    op: str = Field(description="same, changed, inserted (only in b) or deleted (only in a)")
    position: int
    a: StepRefView | None
    b: StepRefView | None


class ComparedRun(BaseModel):
    trace_id: str
    revision: int
    status: str
    metrics: RunMetrics
    cost: CostView


def _priced_cost(input_tokens: int, output_tokens: int, usd: float) -> dict[str, Any]:
    return {"input_tokens": input_tokens, "output_tokens": output_tokens,
            "cached_input_tokens": 0, "cache_write_tokens": 0, "reasoning_tokens": 0,
            "usd": usd, "complete": True, "unpriced_models": [], "price_sources": [_GENAI],
            "currency": "USD", "price_table": _GENAI, "prices_as_of": "2026-11-10"}


_ADD_HASH = "sha256:206f7b5543e6f2ef39bf334988fd7097b725caeed16588cd9d785480f2f0f8f6"
_SECOND_CHAT = {"op": "inserted", "position": 2, "a": None, "b": {
    "seq": 2, "step_id": "418893ffe6da18c7", "type": "model", "name": "chat gpt-4o-mini",
    "agent": "calc_agent", "arguments_hash": None}}


class ComparisonView(BaseModel):
    model_config = example_config({
        "a": {"trace_id": "07496c7684d074983cb8f9387e1156f2", "revision": 1, "status": "final",
              "metrics": {"path_length": 2, "model_steps": 1, "tool_calls": 1, "retries": 0,
                          "input_tokens": 12, "output_tokens": 4, "duration_ms": 0,
                          "failed_steps": 0},
              "cost": _priced_cost(12, 4, 4.2e-06)},
        "b": {"trace_id": "f15936868cc8af52134b0f65722bf35c", "revision": 1, "status": "final",
              "metrics": {"path_length": 4, "model_steps": 2, "tool_calls": 2, "retries": 0,
                          "input_tokens": 24, "output_tokens": 8, "duration_ms": 0,
                          "failed_steps": 0},
              "cost": _priced_cost(24, 8, 8.4e-06)},
        "distance": 2, "counts": {"same": 2, "changed": 0, "inserted": 2, "deleted": 0},
        "first_divergence": _SECOND_CHAT,
        "alignment": [
            {"op": "same", "position": 1,
             "a": {"seq": 1, "step_id": "16be4ed3456605f2", "type": "tool", "name": "add",
                   "agent": "calc_agent", "arguments_hash": _ADD_HASH},
             "b": {"seq": 1, "step_id": "d4acac58964efd7a", "type": "tool", "name": "add",
                   "agent": "calc_agent", "arguments_hash": _ADD_HASH}},
            _SECOND_CHAT],
        "deltas": {"path_length": 2.0, "model_steps": 1.0, "tool_calls": 1.0, "retries": 0.0,
                   "input_tokens": 12.0, "output_tokens": 4.0, "duration_ms": 0.0,
                   "failed_steps": 0.0, "cost_usd": 4.2e-06}})
    a: ComparedRun
    b: ComparedRun
    distance: int = Field(description="edit distance of the aligned step sequences")
    counts: dict[str, int]
    first_divergence: AlignedPairView | None
    alignment: list[AlignedPairView]
    deltas: dict[str, float | None] = Field(description="b − a per metric, and cost_usd "
                                            "(null when either cost is unknown)")


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
              "metrics": asdict(c.a), "cost": cost_json(cost_a, prices)},
        "b": {"trace_id": run_b.trace_id, "revision": run_b.revision, "status": run_b.status,
              "metrics": asdict(c.b), "cost": cost_json(cost_b, prices)},
        "distance": c.distance, "counts": c.counts,
        "first_divergence": asdict(c.first_divergence) if c.first_divergence else None,
        "alignment": [asdict(p) for p in c.alignment], "deltas": deltas,
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
