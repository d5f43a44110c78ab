"""REST: replay — a run's contract, its step events (playback), its recorded tool results (hybrid
replay) and run-to-run comparison. Everything is read from the stored trajectory (and, for the
contract, the raw spans), so it follows the trajectory's revisions."""

from __future__ import annotations

from dataclasses import asdict
from typing import Annotated, Any

import orjson
from fastapi import APIRouter, HTTPException, Query, Response
from pydantic import BaseModel, Field

from trajhub.evaluators.compare import compare
from trajhub.evaluators.pricing import StepCost, run_cost
from trajhub.normalizers.contract import ContractField, run_contract
from trajhub.normalizers.playback import StepEvent, run_duration_ms, step_events, tool_results
from trajhub.service.api.common import ROUTER_CHECKS, Project, Rt, trace_id_param
from trajhub.service.api.models import ERRORS, CostView
from trajhub.service.prices import cost_json, table_for
from trajhub.service.runtime import Runtime
from trajhub.service.stored_spans import to_model
from trajhub.storage import replay_reads

router = APIRouter(prefix="/api/v1", tags=["replay"], dependencies=ROUTER_CHECKS,
                   responses=ERRORS)

# ------------------------------------------------------------------------------ response models


class Sourced(BaseModel):
    value: Any
    source: str = Field(description="where the value was read: a span attribute, a resource "
                        "attribute, the trajectory document, …")


class ContractValue(BaseModel):
    known: bool = Field(description="false: nothing in the run recorded this")
    values: list[Sourced] = Field(description="the distinct values, in the order seen")


class RunContract(BaseModel):
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


class EventError(BaseModel):
    code: int
    msg: str


class Tokens(BaseModel):
    input: int
    output: int
    reasoning: int
    cached_input: int


class StepCostView(BaseModel):
    usd: float | None = Field(description="null: no price for this model")
    priced_as: str | None


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
    started_at_ms: int
    duration_ms: int
    input: str
    output: str
    error: EventError | None
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
    error: EventError | None
    step_id: str
    agent: str
    seq: int


class ToolResults(BaseModel):
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
    priced_as: str | None


class RunCostView(BaseModel):
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


class RunMetricsView(BaseModel):
    path_length: int
    model_steps: int
    tool_calls: int
    retries: int
    input_tokens: int
    output_tokens: int
    duration_ms: int
    failed_steps: int


class ComparedRun(BaseModel):
    trace_id: str
    revision: int
    status: str
    metrics: RunMetricsView
    cost: CostView


class ComparisonView(BaseModel):
    a: ComparedRun
    b: ComparedRun
    distance: int = Field(description="edit distance of the aligned step sequences")
    counts: dict[str, int]
    first_divergence: AlignedPairView | None
    alignment: list[AlignedPairView]
    deltas: dict[str, float | None] = Field(description="b − a per metric, and cost_usd "
                                            "(null when either cost is unknown)")


# ------------------------------------------------------------------------------ helpers


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
        raise HTTPException(404, f"no trajectory for trace {trace_id} in project {project!r} "
                                 "(yet)")
    if row["document"] is None:
        raise HTTPException(422, f"the trajectory of trace {trace_id} could not be derived: "
                                 f"{row['derivation_error']}")
    document: dict[str, Any] = orjson.loads(row["document"])
    return document


async def load_run(rt: Runtime, project: str, trace_id: str) -> LoadedRun:
    trace_id = trace_id_param(trace_id)
    async with rt.db.acquire() as conn:
        rows = await replay_reads.documents(conn, project, [trace_id])
    row = rows.get(trace_id)
    return LoadedRun(trace_id, row, _usable(trace_id, project, row))


class NDJSONResponse(Response):
    media_type = "application/x-ndjson"


def event_json(event: StepEvent, costs: dict[str, StepCost]) -> dict[str, Any]:
    out = asdict(event)
    cost = costs.get(event.step_id)
    out["cost"] = ({"usd": cost.usd, "priced_as": cost.priced_as}
                   if cost is not None and event.type == "model" else None)
    return out


def _field(value: ContractField) -> dict[str, Any]:
    return {"known": value.known, "values": [asdict(v) for v in value.values]}


# ------------------------------------------------------------------------------ routes


@router.get("/trajectories/compare", response_model=ComparisonView,
            summary="Two runs' steps aligned: first divergence, edits and metric deltas")
async def compare_runs(
    rt: Rt, project: Project,
    a: Annotated[str, Query(description="trace id of the first (baseline) run")],
    b: Annotated[str, Query(description="trace id of the second (candidate) run")],
) -> Any:
    """Steps are aligned by minimum edit distance over (type, name, canonical arguments);
    parallel tool calls are compared in a canonical order. Deltas are b − a."""
    table = table_for(rt.settings)
    run_a, run_b = await load_run(rt, project, a), await load_run(rt, project, b)
    c = compare(run_a.events, run_a.duration_ms, run_b.events, run_b.duration_ms)
    cost_a = run_cost(table, run_a.events).run
    cost_b = run_cost(table, run_b.events).run
    deltas: dict[str, float | None] = {**c.deltas}
    deltas["cost_usd"] = (round(cost_b.usd - cost_a.usd, 10)
                          if cost_a.usd is not None and cost_b.usd is not None
                          and cost_a.complete and cost_b.complete else None)
    return {
        "a": {"trace_id": run_a.trace_id, "revision": run_a.revision, "status": run_a.status,
              "metrics": asdict(c.a), "cost": cost_json(cost_a, table)},
        "b": {"trace_id": run_b.trace_id, "revision": run_b.revision, "status": run_b.status,
              "metrics": asdict(c.b), "cost": cost_json(cost_b, table)},
        "distance": c.distance, "counts": c.counts,
        "first_divergence": asdict(c.first_divergence) if c.first_divergence else None,
        "alignment": [asdict(p) for p in c.alignment], "deltas": deltas,
    }


@router.get("/trajectories/{trace_id}/cost", response_model=RunCostView,
            summary="Tokens and money per model step, per agent and for the run")
async def cost(trace_id: str, rt: Rt, project: Project) -> Any:
    """Priced with TRAJHUB_PRICES or the default table shipped with trajhub; a model the table
    does not list has no price (`usd` null) and is named in `unpriced_models`."""
    table = table_for(rt.settings)
    run = await load_run(rt, project, trace_id)
    costs = run_cost(table, run.events)
    names = {e.agent_step_id: e.agent for e in run.events}
    model_events = [e for e in run.events if e.type == "model"]
    return {
        "trace_id": run.trace_id, "revision": run.revision, "status": run.status,
        "run": cost_json(costs.run, table),
        "agents": [{"agent_step_id": agent_id, "agent": names.get(agent_id, ""),
                    "cost": cost_json(c, table)} for agent_id, c in costs.agents.items()],
        "steps": [{"step_id": e.step_id, "agent": e.agent, "model": e.model,
                   "usd": costs.steps[e.step_id].usd,
                   "priced_as": costs.steps[e.step_id].priced_as} for e in model_events],
    }


@router.get("/trajectories/{trace_id}/contract", response_model=RunContract,
            summary="The run contract: models, sampling, prompt and tool-schema hashes, versions")
async def contract(trace_id: str, rt: Rt, project: Project) -> Any:
    """Read from whatever the instrumentation recorded; each value says where it came from,
    and `unknown` lists what nothing recorded."""
    trace_id = trace_id_param(trace_id)
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
    summary="Playback: the run's steps as ordered, append-only events (NDJSON)",
    response_class=NDJSONResponse,
    responses={200: {"model": StepEventView,
                     "description": "One StepEventView per line, in the order the steps "
                     "started. Headers: `ETag` / `X-Trajectory-Revision` (the trajectory "
                     "revision the events come from), `X-Trajectory-Status`."},
               404: {"description": "No spans of this trace yet"},
               422: {"description": "The trajectory could not be derived"}},
)
async def events(trace_id: str, rt: Rt, project: Project) -> NDJSONResponse:
    table = table_for(rt.settings)
    run = await load_run(rt, project, trace_id)
    costs = run_cost(table, run.events).steps
    body = b"".join(orjson.dumps(StepEventView.model_validate(
        event_json(e, costs)).model_dump()) + b"\n" for e in run.events)
    return NDJSONResponse(body, headers=_revision_headers(run))


@router.get("/trajectories/{trace_id}/tool-results", response_model=ToolResults,
            summary="Recorded tool outputs, keyed for hybrid replay")
async def recorded_tool_results(trace_id: str, rt: Rt, project: Project,
                                response: Response) -> Any:
    """Every tool call of the run: tool name, call id, the canonical hash of its arguments,
    its output and error. `trajhub.service.client.replay` serves them to a re-run agent."""
    run = await load_run(rt, project, trace_id)
    response.headers.update(_revision_headers(run))
    return {"trace_id": run.trace_id, "revision": run.revision, "status": run.status,
            "results": [asdict(r) for r in tool_results(run.events)]}
