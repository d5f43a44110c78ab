"""REST: online evaluation rules — create, list, read, edit (switch on and off), delete, and
backfill a rule over the trajectories already stored (docs/rules.md).

The record is declared once in trajhub.records.rules; this module checks what a client sends:
the evaluator and its config (as a dataset evaluation checks them), the filter (the trajectory
list's own parameters and checks), the sample rate. Changing rules takes an admin key; reading
them a read key (the key scopes of docs and /openapi.json's `x-trajhub-scope`)."""

from __future__ import annotations

from dataclasses import replace
from typing import Annotated, Any

from fastapi import APIRouter, HTTPException, Path, Response
from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
)

from trajhub.evaluators import ConfigError, Expectations
from trajhub.records import rules as declared
from trajhub.records.pages import Page, deprecated_alias
from trajhub.records.rules import NAME_MAX
from trajhub.records.scores import NAME_PATTERN
from trajhub.service.api.answers import CheckedRoute
from trajhub.service.api.evaluations import EvaluatorName
from trajhub.service.api.filters import stored_filter
from trajhub.service.api.found import RecordKind, deleted, edited, found, patched
from trajhub.service.api.models import BODY_CONFIG, NOT_FOUND, ErrorDetail, example_config
from trajhub.service.api.page_examples import aliased_page_example
from trajhub.service.api.params import (
    INT64_MAX,
    PREFIX,
    TimeText,
    storable_json,
    time_ns,
    whole_number,
)
from trajhub.service.api.records import answer
from trajhub.service.api.scopes import Project, Rt, needs
from trajhub.service.auth import ADMIN
from trajhub.service.config import Settings
from trajhub.service.workers.rules import check_evaluator
from trajhub.storage import review as review_store
from trajhub.storage import rules as rule_store
from trajhub.storage.database import Connection
from trajhub.storage.rules import RuleRow

router = APIRouter(prefix=PREFIX, route_class=CheckedRoute, tags=["rules"])

RuleId = Annotated[int, Path(ge=1, le=INT64_MAX, description="the rule's `id`")]
BackfillId = Annotated[int, Path(ge=1, le=INT64_MAX, description="the backfill's `id`")]
RuleName = Annotated[str, Field(min_length=1, max_length=NAME_MAX, pattern=NAME_PATTERN,
                                description=f"unique in the project: up to {NAME_MAX} "
                                "letters, digits and `_.:/-`")]
# one float type (an integer is one too; a boolean or a string is not), so that
# /openapi.json states the bounds as `minimum` / `maximum`
SampleRate = Annotated[float, Field(ge=0, le=1, strict=True, allow_inf_nan=False,
                                    description="the share of matching trajectories it runs "
                                    "on, 0 to 1")]
JudgeCap = Annotated[int, Field(ge=1, le=1_000_000, description="LLM judges: at most this "
                                "many judge calls a minute; null for no cap"),
                     BeforeValidator(whole_number)]

FailBelow = Annotated[float, Field(ge=0, le=1, allow_inf_nan=False, description="a score "
                     "below this is a failure (for `review_queue`); 1.0: short of a full "
                     "score")]
QueueName = Annotated[str, Field(min_length=1, max_length=200, description="an annotation "
                      "queue's name (docs/review.md)")]

_BAD: dict[int | str, dict[str, Any]] = {400: {
    "model": ErrorDetail, "description": "an unknown evaluator, a bad option, a filter that "
    "does not parse, bad expectations (the message names it)"}}
_TAKEN: dict[int | str, dict[str, Any]] = {409: {
    "model": ErrorDetail, "description": "the project has a rule of that name"}}


class RuleCreate(BaseModel):
    """A new rule."""

    model_config = ConfigDict(**BODY_CONFIG)
    name: RuleName
    evaluator: EvaluatorName = Field(description="the evaluator, as `POST /api/v1/evaluations` "
                                     "names it (the LLM judges included)")
    config: dict[str, Any] = Field({}, description="the evaluator's options")
    expectations: dict[str, Any] | None = Field(
        None, description="what each trajectory should have done, as an evaluation item's "
        "expectations (for evaluators that compare against them)")
    filter: dict[str, Any] = Field(
        {}, description="the trajectory list's filters (`GET /api/v1/trajectories` query "
        "parameters) by name, e.g. {\"agent\": \"planner\", \"has_error\": false}")
    sample_rate: SampleRate = 1.0
    enabled: bool = True
    max_judge_calls_per_minute: JudgeCap | None = None
    review_queue: QueueName | None = Field(None, description="the review queue its "
                                           "failures go to (it must exist); null for none")
    fail_below: FailBelow = 1.0


class RulePatch(BaseModel):
    """The fields to change; the others stay. A null leaves a field as it is, but for
    `expectations` and `max_judge_calls_per_minute`, where null means none."""

    model_config = ConfigDict(**BODY_CONFIG)
    name: RuleName | None = None
    evaluator: EvaluatorName | None = None
    config: dict[str, Any] | None = None
    expectations: dict[str, Any] | None = None
    filter: dict[str, Any] | None = None
    sample_rate: SampleRate | None = None
    enabled: bool | None = Field(None, description="false switches the rule off (its queued "
                                 "runs wait), true on again")
    max_judge_calls_per_minute: JudgeCap | None = None
    review_queue: QueueName | None = Field(None, description="the review queue its "
                                           "failures go to; null for none")
    fail_below: FailBelow | None = None


class Rule(declared.Rule):
    """The declared record's model (trajhub.records.rules), with its example."""

    model_config = example_config(declared.Rule.example())


class RuleList(Page[Rule]):
    model_config = example_config(aliased_page_example(declared.Rule.example(), "rules"))
    items: list[Rule] = Field(description="oldest first")
    rules: list[Rule] = deprecated_alias(description="oldest first")


class RuleBackfill(declared.RuleBackfill):
    model_config = example_config(declared.RuleBackfill.example())


class BackfillList(Page[RuleBackfill]):
    model_config = example_config(
        aliased_page_example(declared.RuleBackfill.example(), "backfills"))
    items: list[RuleBackfill] = Field(description="newest first")
    backfills: list[RuleBackfill] = deprecated_alias(description="newest first")


class BackfillRequest(BaseModel):
    model_config = BODY_CONFIG
    since: TimeText | None = Field(None, description="only trajectories starting at or after "
                                   "(RFC 3339 or Unix ns), besides the rule's filter")


def checked(values: dict[str, Any], settings: Settings) -> dict[str, Any]:
    """A rule's columns checked as a whole (the evaluator with its config, the expectations,
    the filter); 400 naming the problem."""
    try:
        check_evaluator(values["evaluator"], values["config"], settings)
    except (ConfigError, ValueError) as exc:
        raise HTTPException(400, str(exc)) from None
    if values.get("expectations") is not None:
        try:
            Expectations.from_dict(values["expectations"])
        except ValueError as exc:
            raise HTTPException(400, f"expectations: {exc}") from None
    try:
        values["filter"], _ = stored_filter(values["filter"])
    except ValueError as exc:
        raise HTTPException(400, str(exc)) from None
    for column in ("config", "expectations", "filter"):
        if values.get(column) is not None:
            # as jsonb text: a 422 for what jsonb cannot hold, integers beyond 64 bits kept
            values[column] = storable_json(values[column], column)
    if "sample_rate" in values:
        values["sample_rate"] = float(values["sample_rate"])
    return values


async def _queue_exists(conn: Connection, project: str, name: str | None) -> None:
    """A rule's `review_queue` names one of the project's review queues: 400 otherwise."""
    if name is not None and await review_store.queue(conn, project, name) is None:
        raise HTTPException(400, f"review_queue: project {project!r} has no review queue "
                                 f"named {name!r} (create it with POST /api/v1/review-queues)")


_RULE = RecordKind("rule")


async def _stored_rule(conn: Connection, project: str, rule_id: int) -> RuleRow:
    """The project's rule, or a 404."""
    return found(await rule_store.get(conn, project, rule_id),
                 _RULE.missing(rule_id, project))


@router.post("/rules", status_code=201, response_model=Rule, openapi_extra=needs(ADMIN),
             summary="Create an online evaluation rule", responses={**_BAD, **_TAKEN})
async def create_rule(rt: Rt, project: Project, body: RuleCreate) -> Any:
    """From now on, each trajectory of the project that becomes final, matches `filter` and
    falls in the sample is judged by the evaluator; the verdict is a score named after the
    evaluator (source `evaluator`, with this rule's `rule_id`). Trajectories already stored are
    judged only by a backfill (`POST /api/v1/rules/{id}/backfills`)."""
    values = checked(body.model_dump(), rt.settings)
    async with rt.db.acquire() as conn:
        await _queue_exists(conn, project, values.get("review_queue"))
        row = await rule_store.create(conn, project, values)
    if row is None:
        raise HTTPException(409, _RULE.taken(project, body.name))
    return answer(declared.Rule, row)


@router.get("/rules", response_model=RuleList, summary="The project's rules, oldest first")
async def list_rules(rt: Rt, project: Project) -> Any:
    async with rt.db.acquire() as conn:
        rows = await rule_store.list_rules(conn, project)
    return RuleList.answer([answer(declared.Rule, r) for r in rows])


@router.get("/rules/{rule_id}", response_model=Rule, summary="One rule",
            responses=NOT_FOUND)
async def get_rule(rule_id: RuleId, rt: Rt, project: Project) -> Any:
    async with rt.db.acquire() as conn:
        row = await _stored_rule(conn, project, rule_id)
    return answer(declared.Rule, row)


@router.patch("/rules/{rule_id}", response_model=Rule, openapi_extra=needs(ADMIN),
              summary="Edit a rule, or switch it off (`enabled: false`) and on",
              responses={**NOT_FOUND, **_BAD, **_TAKEN})
async def edit_rule(rule_id: RuleId, rt: Rt, project: Project, body: RulePatch) -> Any:
    """Only the fields given change. Runs already queued run with the rule as it is when they
    run; a rule switched off keeps its queued runs until it is on again."""
    given = patched(body, nullable=("expectations", "max_judge_calls_per_minute",
                                    "review_queue"))
    async with rt.db.acquire() as conn:
        current = answer(declared.Rule, await _stored_rule(conn, project, rule_id))
        merged = checked({**{c: current[c] for c in ("evaluator", "config", "expectations",
                                                     "filter")}, **given}, rt.settings)
        changes = {c: merged[c] for c in given}
        await _queue_exists(conn, project, changes.get("review_queue"))
        updated = await edited(rule_store.update(conn, project, rule_id, changes),
                               _RULE.missing(rule_id, project),
                               _RULE.taken(project, given.get("name")))
    return answer(declared.Rule, updated)


@router.delete("/rules/{rule_id}", status_code=204, responses=NOT_FOUND,
               summary="Delete a rule and its queued runs (its scores stay)")
async def delete_rule(rule_id: RuleId, rt: Rt, project: Project) -> Response:
    return await deleted(rt.db, _RULE.missing(rule_id, project),
                         rule_store.delete, project, rule_id)


@router.post("/rules/{rule_id}/backfills", status_code=202, response_model=RuleBackfill,
             openapi_extra=needs(ADMIN), responses={**NOT_FOUND, **_BAD},
             summary="Run a rule over the stored final trajectories that match its filter")
async def start_backfill(rule_id: RuleId, rt: Rt, project: Project,
                         body: BackfillRequest) -> Any:
    """Queues one run per final trajectory matching the rule's filter and in its sample, and
    answers at once: follow `done` against `total` with
    `GET /api/v1/rules/{id}/backfills/{backfill_id}`. The runs go through the same queue as
    the new trajectories' (a switched-off rule's wait until it is on)."""
    async with rt.db.acquire() as conn:
        row = await _stored_rule(conn, project, rule_id)
        try:
            _, trajectory_filter = stored_filter(answer(declared.Rule, row)["filter"])
        except ValueError as exc:
            raise HTTPException(400, str(exc)) from None
        since = time_ns(body.since, "since")
        if since is not None:
            start = max(since, trajectory_filter.values.get("start") or since)
            trajectory_filter = replace(trajectory_filter,
                                        values={**trajectory_filter.values, "start": start})
        job = await rule_store.backfill(conn, project, rule_id, trajectory_filter)
    return answer(declared.RuleBackfill, job)


@router.get("/rules/{rule_id}/backfills", response_model=BackfillList, responses=NOT_FOUND,
            summary="A rule's backfills, newest first, with their progress")
async def list_backfills(rule_id: RuleId, rt: Rt, project: Project) -> Any:
    async with rt.db.acquire() as conn:
        await _stored_rule(conn, project, rule_id)
        rows = await rule_store.backfills(conn, project, rule_id)
    return BackfillList.answer([answer(declared.RuleBackfill, r) for r in rows])


@router.get("/rules/{rule_id}/backfills/{backfill_id}", response_model=RuleBackfill,
            responses=NOT_FOUND, summary="One backfill's progress")
async def get_backfill(rule_id: RuleId, backfill_id: BackfillId, rt: Rt,
                       project: Project) -> Any:
    async with rt.db.acquire() as conn:
        row = await rule_store.get_backfill(conn, project, rule_id, backfill_id)
    if row is None:
        raise HTTPException(404, f"rule {rule_id} has no backfill {backfill_id} in project "
                                 f"{project!r}")
    return answer(declared.RuleBackfill, row)
