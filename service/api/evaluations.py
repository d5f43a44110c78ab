"""REST: evaluations — start one over a set, follow it, read its aggregates and results."""

from __future__ import annotations

from typing import Annotated, Any, Literal

import orjson
from fastapi import APIRouter, HTTPException, Path, Query
from pydantic import BaseModel, ConfigDict, Field

from trajhub.evaluators import JUDGES, REGISTRY, ConfigError
from trajhub.records import evaluations as declared
from trajhub.service.api.answers import CheckedRoute
from trajhub.service.api.cursors import decode_cursor, next_page_cursor
from trajhub.service.api.found import found
from trajhub.service.api.models import (
    BODY_CONFIG,
    NOT_FOUND,
    Evaluation,
    EvaluationDetail,
    EvaluationPage,
    ResultPage,
)
from trajhub.service.api.params import INT64_MAX, PREFIX, Cursor, PageLimit, Text, storable_json
from trajhub.service.api.records import answer
from trajhub.service.api.scopes import Project, Rt
from trajhub.service.runtime import Runtime
from trajhub.service.workers import evaluations as evaluation_runner
from trajhub.storage import datasets, evaluations
from trajhub.storage.rows import EvaluationRow

router = APIRouter(prefix=PREFIX, route_class=CheckedRoute, tags=["evaluations"])

#: an evaluation id (a bigint)
EvaluationId = Annotated[int, Path(ge=1, le=INT64_MAX)]


#: the evaluators a run may name, as /openapi.json lists them (an unknown one is a 400 naming
#: the known ones)
EvaluatorName = Annotated[str, Field(json_schema_extra={"enum": sorted([*REGISTRY, *JUDGES])})]


class EvaluatorEntry(BaseModel):
    model_config = BODY_CONFIG
    name: EvaluatorName
    config: dict[str, Any] = {}


def _run_for_live_only(schema: dict[str, Any]) -> None:
    # the live target needs a run name; the snapshot target (the default) takes none
    schema["anyOf"] = [
        {"required": ["target", "run"],
         "properties": {"target": {"const": "live"}, "run": {"type": "string"}}},
        {"properties": {"target": {"const": "snapshot"}, "run": {"type": "null"}}},
    ]


class EvaluationCreate(BaseModel):
    model_config = ConfigDict(**BODY_CONFIG, json_schema_extra=_run_for_live_only)
    dataset: Text = Field(description="the dataset")
    evaluators: list[EvaluatorName | EvaluatorEntry] = Field(
        min_length=1,
        description="names, or {name, config}: expected_agents_tools, tool_call_accuracy, "
                    "trajectory_match, graph_trajectory_match, efficiency, and the LLM judges "
                    "llm_judge, trajectory_judge, tool_choice_judge (endpoint and model from "
                    "their config or the server's TRAJHUB_JUDGE_URL / TRAJHUB_JUDGE_MODEL)")
    target: Literal["snapshot", "live"] = Field(
        "snapshot", description="snapshot: each item's stored trajectory; live: the trajectory "
        "whose root span carries trajhub.dataset_item_id = the item id and trajhub.run = run")
    run: Text | None = Field(None, min_length=1, description="the run name (live target)")


def evaluation_json(row: EvaluationRow) -> dict[str, Any]:
    return answer(declared.Evaluation, row)


def result_json(row: evaluations.ResultRow) -> dict[str, Any]:
    return {
        "item_id": row.item_id, "evaluator": row.evaluator, "trace_id": row.trace_id,
        "score": row.score, "passed": row.passed, "error": row.error,
        "reason": orjson.loads(row.reason) if row.reason else None,
        "explanation": row.explanation,
    }


@router.post("/evaluations", status_code=202, summary="Start an evaluation over a set",
             response_model=Evaluation, responses=NOT_FOUND)
async def create_evaluation(rt: Rt, project: Project, body: EvaluationCreate) -> Any:
    """Checks the evaluators and their options, then runs in the background: poll
    `GET /api/v1/evaluations/{id}` until `status` is `done` (or `failed`)."""
    if body.target == "live" and not body.run:
        raise HTTPException(422, "the live target needs a run name (`run`)")
    if body.target == "snapshot" and body.run:
        raise HTTPException(422, "`run` is only for the live target")
    raw = [e if isinstance(e, str) else e.model_dump() for e in body.evaluators]
    try:
        runs = evaluation_runner.parse_evaluators(raw, rt.settings)
    except (ConfigError, ValueError) as exc:  # a bad evaluator or option: a bad request
        raise HTTPException(400, str(exc)) from None
    async with rt.db.acquire() as conn:
        dataset = await datasets.dataset_id(conn, project, body.dataset)
        if dataset is None:
            raise HTTPException(404, f"no dataset {body.dataset!r} in project "
                                     f"{project!r}")
        count = await evaluations.item_count(conn, dataset)
        async with conn.transaction():
            evaluation = await evaluations.create_evaluation(
                conn, project, dataset, body.dataset, body.target, body.run,
                storable_json([r.to_dict() for r in runs], "evaluators"), count)
            # the server's evaluation worker takes it from the queue (migration 0056)
            await evaluations.enqueue(conn, evaluation)
        row = await evaluations.get_evaluation(conn, project, evaluation)
    assert row is not None
    return evaluation_json(row)


@router.get("/evaluations", summary="List evaluations, newest first",
            response_model=EvaluationPage)
async def list_evaluations(
    rt: Rt, project: Project,
    dataset: Annotated[Text | None, Query(description="only runs over this set")] = None,
    limit: PageLimit = 50,
    cursor: Cursor = None,
) -> Any:
    before = decode_cursor(cursor, (int,))
    async with rt.db.acquire() as conn:
        rows = await evaluations.list_evaluations(conn, project, dataset,
                                                  before[0] if before else None, limit)
    return {
        "items": [evaluation_json(r) for r in rows],
        "next_cursor": next_page_cursor(rows, limit, lambda r: (r.id,))}


async def _evaluation(rt: Runtime, project: str, evaluation: int) -> EvaluationRow:
    async with rt.db.acquire() as conn:
        row = await evaluations.get_evaluation(conn, project, evaluation)
    return found(row, f"no evaluation {evaluation} in project {project!r}")


@router.get("/evaluations/{evaluation_id}",
            summary="An evaluation: status, progress and per-evaluator aggregates",
            response_model=EvaluationDetail, responses=NOT_FOUND)
async def get_evaluation(rt: Rt, project: Project, evaluation_id: EvaluationId) -> Any:
    """`aggregates`: per evaluator, the pass rate (errors count as not passed) and the mean
    score of the verdicts. `items`: how many items passed every evaluator, failed one, or hit
    an error."""
    row = await _evaluation(rt, project, evaluation_id)
    async with rt.db.acquire() as conn:
        per_evaluator = await evaluations.aggregates(conn, evaluation_id)
        items = await evaluations.item_outcomes(conn, evaluation_id)
    out = evaluation_json(row)
    out["aggregates"] = [{
        **a, "failed": a["total"] - a["passed"] - a["errors"],
        "pass_rate": a["passed"] / a["total"] if a["total"] else None,
    } for a in per_evaluator]
    out["items"] = {**items, "total": row["item_count"],
                    "failed": items["evaluated"] - items["passed"]}
    return out


@router.get("/evaluations/{evaluation_id}/results",
            summary="Per-item results of an evaluation", response_model=ResultPage,
            responses=NOT_FOUND)
async def get_results(
    rt: Rt, project: Project, evaluation_id: EvaluationId,
    failed: Annotated[bool, Query(description="only results that did not pass (failures "
                                  "and errors)")] = False,
    limit: Annotated[int, Query(ge=1, le=5000)] = 500,
    cursor: Cursor = None,
) -> Any:
    await _evaluation(rt, project, evaluation_id)
    after = decode_cursor(cursor, (int, str))
    async with rt.db.acquire() as conn:
        rows = await evaluations.results(conn, evaluation_id, failed,
                                         after,
                                         limit)
    next_cursor = next_page_cursor(rows, limit, lambda r: (r.seq, r.evaluator))
    return {"items": [result_json(r) for r in rows],
                                       "next_cursor": next_cursor}
