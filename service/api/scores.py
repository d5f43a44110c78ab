"""REST: scores of a trajectory or of its steps — add (one or a batch), list, delete.

The record is declared once in trajhub.records.scores; this module checks what a client sends
(the value's type, the source and its fields, the step id) and answers with the declared
model."""

from __future__ import annotations

from typing import Annotated, Any, Literal

import orjson
from fastapi import APIRouter, HTTPException, Path, Response
from pydantic import (
    AllowInfNan,
    BaseModel,
    ConfigDict,
    Discriminator,
    Field,
    StrictBool,
    StrictFloat,
    StrictStr,
    Tag,
)

from trajhub.records.pages import Page, deprecated_alias
from trajhub.records.scores import (
    CATEGORY_MAX,
    COMMENT_MAX,
    NAME_MAX,
    NAME_PATTERN,
    Score,
    outside_config,
)
from trajhub.records.scores import ScoreConfig as DeclaredScoreConfig
from trajhub.service.api.answers import CheckedRoute
from trajhub.service.api.found import deleted
from trajhub.service.api.models import BODY_CONFIG, NOT_FOUND, ErrorDetail, example_config
from trajhub.service.api.page_examples import aliased_page_example
from trajhub.service.api.params import INT64_MAX, PREFIX, TraceIdPath, storable_json
from trajhub.service.api.records import answer
from trajhub.service.api.scopes import Key, Project, Rt, needs
from trajhub.service.api.stored import no_trajectory
from trajhub.service.auth import ADMIN, BOOTSTRAP_KEY_ID
from trajhub.storage import scores as score_store
from trajhub.storage import trajectory_reads

router = APIRouter(prefix=PREFIX, route_class=CheckedRoute, tags=["scores"])

#: the longest batch one request may add
MAX_BATCH = 1000

ScoreName = Annotated[str, Field(min_length=1, max_length=NAME_MAX, pattern=NAME_PATTERN,
                                 description=f"what it measures: up to {NAME_MAX} letters, "
                                 "digits and `_.:/-`, starting with a letter or digit")]
ScoreValue = (StrictBool | Annotated[StrictFloat, AllowInfNan(False)]
              | Annotated[StrictStr, Field(min_length=1, max_length=CATEGORY_MAX)])


class ScoreCreate(BaseModel):
    """One score to add."""

    model_config = ConfigDict(**BODY_CONFIG)
    name: ScoreName
    value: ScoreValue | None = Field(
        None, description="a number, a boolean (true/false) or a category (a string of up to "
        f"{CATEGORY_MAX} characters); leave it out only with `error`")
    data_type: Literal["number", "boolean", "category"] | None = Field(
        None, description="the value's type: when given, a value of another type is a 400 "
        "(otherwise it is the value's JSON type)")
    step_id: Annotated[str, Field(min_length=1, max_length=128)] | None = Field(
        None, description="a step of the trajectory (its `id` in the document); leave it out "
        "to score the whole trajectory. A step id the trajectory does not have is a 400")
    comment: Annotated[str, Field(max_length=COMMENT_MAX)] | None = Field(
        None, description="why, in words")
    source: Literal["evaluator", "api", "human"] = Field(
        "api", description="evaluator (give `evaluator`, and `evaluator_config` if any), api, "
        "or human (a reviewer)")
    evaluator: Annotated[str, Field(min_length=1, max_length=NAME_MAX)] | None = Field(
        None, description="the evaluator's name: only, and always, with source `evaluator`")
    evaluator_config: dict[str, Any] | None = Field(
        None, description="the evaluator's config (source `evaluator`)")
    error: Annotated[str, Field(min_length=1, max_length=COMMENT_MAX)] | None = Field(
        None, description="source `evaluator` only: why it gave no value (then no `value`)")
    author: Annotated[str, Field(min_length=1, max_length=200)] | None = Field(
        None, description="who scored; only when the server runs without API keys (with a "
        "key, the author is the key's name)")


class ScoreBatch(BaseModel):
    """Several scores of one trajectory, added together (all or none)."""

    model_config = ConfigDict(**BODY_CONFIG)
    scores: list[ScoreCreate] = Field(min_length=1, max_length=MAX_BATCH)


def _body_kind(value: Any) -> str:
    return "batch" if isinstance(value, dict) and "scores" in value else "one"


ScoreBody = Annotated[Annotated[ScoreCreate, Tag("one")] | Annotated[ScoreBatch, Tag("batch")],
                      Discriminator(_body_kind)]

# the declared record (trajhub.records.scores) is the response model
_EXAMPLE = Score.example()


class ScoreList(Page[Score]):
    model_config = example_config(aliased_page_example(_EXAMPLE, "scores"))
    items: list[Score] = Field(description="oldest first")
    scores: list[Score] = deprecated_alias(
        description="oldest first")


ScoreId = Annotated[int, Path(ge=1, le=INT64_MAX, description="the score's `id`")]


def _type_of(value: Any) -> str:
    if isinstance(value, bool):
        return "boolean"
    return "number" if isinstance(value, int | float) else "category"


def checked_score(score: ScoreCreate, at: str, steps: set[str] | None, author: str | None,
             keyed: bool) -> dict[str, Any]:
    """The stored columns of one score; a 400 naming what is wrong (`at` says which score of
    a batch)."""
    def bad(message: str) -> HTTPException:
        return HTTPException(400, f"{at}{message}")

    if score.error is not None:
        if score.source != "evaluator":
            raise bad("`error` is for scores from an evaluator (source `evaluator`)")
        if score.value is not None:
            raise bad("a score with an `error` has no `value`")
    elif score.value is None:
        raise bad(f"score {score.name!r} has no `value` (a number, a boolean or a category)")
    value_type = _type_of(score.value) if score.value is not None else None
    if score.data_type is not None and value_type is not None and \
            score.data_type != value_type:
        raise bad(f"score {score.name!r}: value {score.value!r} is a {value_type}, not a "
                  f"{score.data_type} (data_type)")
    if score.source == "evaluator" and score.evaluator is None:
        raise bad("source `evaluator` needs the evaluator's name (`evaluator`)")
    if score.source != "evaluator" and (score.evaluator is not None
                                        or score.evaluator_config is not None):
        raise bad(f"`evaluator` and `evaluator_config` are for source `evaluator`, not "
                  f"{score.source!r}")
    if score.author is not None and keyed:
        raise bad("`author` is set from the API key; leave it out")
    if score.step_id is not None and steps is not None and score.step_id not in steps:
        raise bad(f"the trajectory has no step {score.step_id[:128]!r}")
    if score.step_id is not None and steps is None:
        raise bad("the trajectory could not be derived, so it has no steps to score; "
                  "leave out `step_id`")
    value = score.value
    return {
        "step_id": score.step_id, "name": score.name, "value_type": value_type,
        "number_value": float(value) if isinstance(value, bool | int | float) else None,
        "category_value": value if isinstance(value, str) else None,
        "comment": score.comment, "source": score.source, "evaluator": score.evaluator,
        "evaluator_config": (storable_json(score.evaluator_config, "evaluator_config")
                             if score.evaluator_config is not None else None),
        "evaluation_id": None, "author": author if keyed else score.author,
        "error": score.error,
    }


async def check_configs(conn: Any, project: str, given: list[ScoreCreate], batch: bool
                         ) -> None:
    """A score of a name the project has a config for must fit it: 400 naming the score and
    what is wrong."""
    found = {r["name"]: answer(DeclaredScoreConfig, r) for r in await score_store.configs(
        conn, project, sorted({s.name for s in given}))}
    for i, score in enumerate(given):
        config = found.get(score.name)
        if config is None or score.value is None:
            continue
        why = outside_config(_type_of(score.value), score.value, config)
        if why is not None:
            at = f"scores[{i}]: " if batch else ""
            raise HTTPException(400, f"{at}score {score.name!r} is outside its config: {why}")


def step_ids(document: str) -> set[str]:
    """Every step id of a trajectory document: the root's, each agent step's and each of
    their steps'."""
    doc = orjson.loads(document)
    ids: set[str] = set()
    root = doc.get("root_step") or {}
    if root.get("id"):
        ids.add(str(root["id"]))
    for agent in doc.get("agent_steps") or []:
        if agent.get("id"):
            ids.add(str(agent["id"]))
        ids.update(str(s["id"]) for s in agent.get("steps") or [] if s.get("id"))
    return ids


def _scores_json(rows: list[score_store.ScoreRow]) -> dict[str, Any]:
    return ScoreList.answer([answer(Score, r) for r in rows])


@router.post(
    "/trajectories/{trace_id}/scores", status_code=201, response_model=ScoreList,
    summary="Score a trajectory or its steps: one score, or a batch {scores: [...]}",
    responses={**NOT_FOUND, 400: {"model": ErrorDetail, "description": "a value of the "
               "wrong type, a step the trajectory does not have, a source without its "
               "fields, a score outside its config (the message names it)"}})
async def add_scores(trace_id: TraceIdPath, rt: Rt, project: Project, key: Key,
                     body: ScoreBody) -> Any:
    """Each score is kept with the trajectory's current revision, and stays on the trajectory
    (a step's on the step of the same id) when it is re-derived. A batch is stored all or
    none."""
    given = body.scores if isinstance(body, ScoreBatch) else [body]
    async with rt.db.acquire() as conn:
        row = await trajectory_reads.trajectory(conn, project, trace_id)
        if row is None:
            raise no_trajectory(trace_id, project)
        steps = step_ids(row.document) if row.document is not None else None
        author = None
        if key is not None:
            author = ("bootstrap" if key.key_id == BOOTSTRAP_KEY_ID
                      else await score_store.key_name(conn, key.key_id))
        batch = isinstance(body, ScoreBatch)
        rows = [{"trace_id": trace_id,
                 **checked_score(s, f"scores[{i}]: " if batch else "", steps, author,
                            key is not None)}
                for i, s in enumerate(given)]
        await check_configs(conn, project, given, batch)
        stored = await score_store.add(conn, project, rows)
    if len(stored) != len(rows):  # the trajectory went away meanwhile (retention)
        raise no_trajectory(trace_id, project)
    return _scores_json(stored)


@router.get("/trajectories/{trace_id}/scores", response_model=ScoreList,
            summary="A trajectory's scores, its steps' included, oldest first",
            responses=NOT_FOUND)
async def list_scores(trace_id: TraceIdPath, rt: Rt, project: Project) -> Any:
    """Scores of earlier revisions are listed too: each says its `revision`."""
    async with rt.db.acquire() as conn:
        row = await trajectory_reads.trajectory(conn, project, trace_id)
        if row is None:
            raise no_trajectory(trace_id, project)
        stored = await score_store.for_trajectory(conn, project, trace_id)
    return _scores_json(stored)


@router.delete("/trajectories/{trace_id}/scores/{score_id}", status_code=204,
               summary="Delete one score", responses=NOT_FOUND)
async def delete_score(trace_id: TraceIdPath, score_id: ScoreId, rt: Rt,
                       project: Project) -> Response:
    return await deleted(rt.db, f"trace {trace_id} has no score {score_id} in project {project!r}",
                         score_store.delete, project, trace_id, score_id)




# ----------------------------------------------------------------------------- score configs

# (the docstring is /openapi.json's description of the model, kept as it was)
class ScoreConfig(DeclaredScoreConfig):
    """The declared record's model (SCORE_CONFIG), with its example: PUT answers it alone."""

    model_config = example_config(DeclaredScoreConfig.example())


class ScoreConfigList(Page[ScoreConfig]):
    model_config = example_config(aliased_page_example(DeclaredScoreConfig.example(), "configs"))
    items: list[ScoreConfig] = Field(description="by name")
    configs: list[ScoreConfig] = deprecated_alias(description="by name")


Finite = Annotated[StrictFloat, AllowInfNan(False)]
Category = Annotated[StrictStr, Field(min_length=1, max_length=CATEGORY_MAX)]


def _fields_of_each_type(schema: dict[str, Any]) -> None:
    # a range is a number's, categories a category's (min <= max is the route's own check)
    none = {"type": "null"}
    schema["anyOf"] = [
        {"properties": {"data_type": {"const": "number"}, "categories": none}},
        {"properties": {"data_type": {"const": "boolean"}, "min": none, "max": none,
                        "categories": none}},
        {"properties": {"data_type": {"const": "category"}, "min": none, "max": none}},
    ]


class ScoreConfigPut(BaseModel):
    """What the project's scores of this name must be."""

    model_config = ConfigDict(**BODY_CONFIG, json_schema_extra=_fields_of_each_type)
    data_type: Literal["number", "boolean", "category"]
    min: Finite | None = Field(None, description="the least number allowed (number only)")
    max: Finite | None = Field(None, description="the greatest number allowed (number only)")
    categories: list[Category] | None = Field(
        None, min_length=1, max_length=100, json_schema_extra={"uniqueItems": True},
        description="the categories allowed, each once (category only; without it, any "
        "category)")
    description: Annotated[str, Field(max_length=COMMENT_MAX)] = ""


ConfigName = Annotated[str, Path(min_length=1, max_length=NAME_MAX, pattern=NAME_PATTERN,
                                 description="the score's name")]


@router.get("/score-configs", response_model=ScoreConfigList,
            summary="The project's score configs, by name")
async def list_score_configs(rt: Rt, project: Project) -> Any:
    """A score of a name listed here must have its type, and a number its range or a category
    one of its categories; a score of any other name is not checked."""
    async with rt.db.acquire() as conn:
        rows = await score_store.configs(conn, project)
    return ScoreConfigList.answer([answer(DeclaredScoreConfig, r) for r in rows])


@router.put("/score-configs/{name}", response_model=ScoreConfig, openapi_extra=needs(ADMIN),
            summary="Create or replace the config of a score name",
            responses={400: {"model": ErrorDetail, "description": "a range or categories "
                             "that do not fit the type (the message says which)"}})
async def put_score_config(name: ConfigName, rt: Rt, project: Project,
                           body: ScoreConfigPut) -> Any:
    """Scores already stored are not checked again; new ones are."""
    if body.data_type != "number" and (body.min is not None or body.max is not None):
        raise HTTPException(400, f"min and max are for a number, not a {body.data_type}")
    if body.min is not None and body.max is not None and body.min > body.max:
        raise HTTPException(400, f"min ({body.min}) is above max ({body.max})")
    if body.data_type != "category" and body.categories is not None:
        raise HTTPException(400, f"categories are for a category, not a {body.data_type}")
    if body.categories is not None and len(set(body.categories)) != len(body.categories):
        raise HTTPException(400, "categories are listed twice: "
                            + ", ".join(sorted({c for c in body.categories
                                                if body.categories.count(c) > 1})))
    async with rt.db.acquire() as conn:
        row = await score_store.put_config(conn, project, {
            "name": name, "data_type": body.data_type, "min_value": body.min,
            "max_value": body.max, "categories": body.categories,
            "description": body.description})
    return answer(DeclaredScoreConfig, row)


@router.delete("/score-configs/{name}", status_code=204, responses=NOT_FOUND,
               summary="Delete the config of a score name")
async def delete_score_config(name: ConfigName, rt: Rt, project: Project) -> Response:
    return await deleted(rt.db, f"no score config {name!r} in project {project!r}",
                         score_store.delete_config, project, name)
