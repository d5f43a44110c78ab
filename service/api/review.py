"""REST: review queues (README, "Review by people"; docs/review.md).

A project's queue holds trajectories for people to review and names the scores (score configs)
each review must give. A reviewer takes the next item (`next`: it is held by them for a lease,
renewed by taking `next` again), scores it (scores of source `human`, through the scores'
checks: a score outside its config is a 400 naming it), may comment and correct the expected
behaviour, then completes or skips it. The completed items flow into a dataset in one
step (`export-to-dataset`), with their corrected expectations.

The records are declared once in trajhub.records.review."""

from __future__ import annotations

import contextlib
import dataclasses
from typing import Annotated, Any, Literal

import orjson
from fastapi import APIRouter, HTTPException, Path, Query, Response
from pydantic import AfterValidator, BaseModel, Field

from trajhub.records import review as declared
from trajhub.records.pages import Page, deprecated_alias
from trajhub.records.queues import ExportOutcome, ItemsAdded
from trajhub.records.review import (
    DESCRIPTION_MAX,
    LEASE_MAX,
    LEASE_MIN,
    LEASE_SECONDS,
    NAME_MAX,
    NAME_PATTERN,
)
from trajhub.records.scores import COMMENT_MAX, Score
from trajhub.service.api import dataset_fill
from trajhub.service.api.answers import CheckedRoute
from trajhub.service.api.datasets import (
    EXPECTATIONS_SCHEMA,
    FillQuery,
    TraceSelection,
    stored_expectations,
)
from trajhub.service.api.datasets import Name as DatasetName
from trajhub.service.api.found import deleted
from trajhub.service.api.models import BODY_CONFIG, NOT_FOUND, ErrorDetail, example_config
from trajhub.service.api.page_examples import aliased_page_example
from trajhub.service.api.params import INT64_MAX, PREFIX, JsonInt, TraceIdText, no_nul
from trajhub.service.api.records import answer
from trajhub.service.api.scopes import Key, Project, Rt, needs
from trajhub.service.api.scores import (
    ScoreCreate,
    ScoreName,
    ScoreValue,
    check_configs,
    checked_score,
    step_ids,
)
from trajhub.service.auth import ADMIN, BOOTSTRAP_KEY_ID
from trajhub.storage import datasets, review, trajectory_reads
from trajhub.storage import scores as score_store
from trajhub.storage.database import Connection

router = APIRouter(prefix=PREFIX, route_class=CheckedRoute, tags=["review"])

QueueName = Annotated[str, Field(min_length=1, max_length=NAME_MAX, pattern=NAME_PATTERN,
                                 description=f"up to {NAME_MAX} letters, digits and `_.:-`, "
                                 "starting with a letter or digit")]
QueuePath = Annotated[str, Path(min_length=1, max_length=NAME_MAX, pattern=NAME_PATTERN,
                                description="the queue's name")]
ItemIdPath = Annotated[int, Path(ge=1, le=INT64_MAX, description="the item's `id`")]
Author = Annotated[str, Field(min_length=1, max_length=200), AfterValidator(no_nul)]
_AUTHOR_HELP = ("the reviewer; only, and always, when the server runs without API keys (with a "
                "key, the reviewer is the key's name)")

_QUEUE_EXAMPLE = declared.ReviewQueue.example()
_ITEM_EXAMPLE = declared.ReviewItem.example()


class ReviewQueue(declared.ReviewQueue):
    """The declared record's model (trajhub.records.review), with its example."""

    model_config = example_config(_QUEUE_EXAMPLE)


class ReviewItem(declared.ReviewItem):
    """The declared record's model (trajhub.records.review), with its example."""

    model_config = example_config(_ITEM_EXAMPLE)


class ReviewQueueList(Page[ReviewQueue]):
    model_config = example_config(aliased_page_example(_QUEUE_EXAMPLE, "queues"))
    items: list[ReviewQueue] = Field(description="by name")
    queues: list[ReviewQueue] = deprecated_alias(description="by name")


class ReviewItemList(Page[ReviewItem]):
    model_config = example_config({"items": [_ITEM_EXAMPLE], "next_cursor": None})
    items: list[ReviewItem] = Field(description="in the order they were added")


class ReviewNext(BaseModel):
    model_config = example_config({"item": _ITEM_EXAMPLE})
    item: ReviewItem | None = Field(description="the item the reviewer now holds; null when "
                                    "every pending item is done or held by someone else")


class ReviewCompleted(BaseModel):
    model_config = example_config({"item": {**_ITEM_EXAMPLE, "status": "done"},
                                   "scores": [{**Score.example(), "source": "human"}]})
    item: ReviewItem
    scores: list[Score] = Field(
        description="the scores stored (source `human`)")


class QueueCreate(BaseModel):
    model_config = BODY_CONFIG
    name: QueueName
    description: Annotated[str, Field(max_length=DESCRIPTION_MAX),
                           AfterValidator(no_nul)] = ""
    score_names: list[ScoreName] = Field(
        [], max_length=50, json_schema_extra={"uniqueItems": True},
        description="the scores a reviewer must give each item, each once: names of the "
        "project's score configs (PUT /api/v1/score-configs/{name})")


class ItemsAdd(TraceSelection):
    trace_ids: list[TraceIdText] | None = Field(None, min_length=1, max_length=10_000,
                                                description="add these trajectories")
    query: FillQuery | None = Field(
        None, description="add the trajectories the trajectory list shows for these filters "
        "(GET /api/v1/trajectories), newest first")
    limit: JsonInt = Field(100, ge=1, le=10_000, description="with `query`: add at most this "
                           "many")


class NextRequest(BaseModel):
    model_config = BODY_CONFIG
    author: Author | None = Field(None, description=_AUTHOR_HELP)
    lease_seconds: JsonInt = Field(LEASE_SECONDS, ge=LEASE_MIN, le=LEASE_MAX,
                                   description="hold the item this long")


class ReviewScore(BaseModel):
    """One score of the review (stored with source `human`)."""

    model_config = BODY_CONFIG
    name: ScoreName
    value: ScoreValue = Field(description="a number, a boolean or a category, as the score's "
                              "config says")
    step_id: Annotated[str, Field(min_length=1, max_length=128)] | None = Field(
        None, description="a step of the trajectory (its `id`); leave it out to score the run")
    comment: Annotated[str, Field(max_length=COMMENT_MAX)] | None = None


class CompleteRequest(BaseModel):
    model_config = BODY_CONFIG
    scores: list[ReviewScore] = Field([], max_length=100, description="every score the "
                                      "queue names (its `score_names`), and any others")
    comment: Annotated[str, Field(max_length=COMMENT_MAX), AfterValidator(no_nul)] | None = \
        Field(None, description="the reviewer's comment on the run")
    expectations: dict[str, Any] | None = Field(
        None, json_schema_extra=EXPECTATIONS_SCHEMA,
        description="the expected behaviour, corrected: a dataset item's expectations "
        "(agents, tools, tool_order, trajectory, ...), used by export-to-dataset")
    author: Author | None = Field(None, description=_AUTHOR_HELP)


class SkipRequest(BaseModel):
    model_config = BODY_CONFIG
    comment: Annotated[str, Field(max_length=COMMENT_MAX), AfterValidator(no_nul)] | None = \
        Field(None, description="why it was skipped")
    author: Author | None = Field(None, description=_AUTHOR_HELP)


class ExportRequest(BaseModel):
    model_config = BODY_CONFIG
    dataset: DatasetName = Field(description="the dataset (created when missing)")
    tags: list[Annotated[str, Field(max_length=200), AfterValidator(no_nul)]] = Field(
        [], max_length=50, description="tags for the new items (each also gets "
        "`review:<queue>`)")


# ----------------------------------------------------------------------------------- helpers

async def _queue(conn: Connection, project: str, name: str) -> review.QueueRow:
    found = await review.queue(conn, project, name)
    if found is None:
        raise HTTPException(404, f"no review queue {name!r} in project {project!r}")
    return found


async def _reviewer(conn: Connection, key: Any, author: str | None) -> str:
    """The reviewer: the key's name, or the given author when auth is off."""
    if key is not None:
        if author is not None:
            raise HTTPException(400, "`author` is set from the API key; leave it out")
        if key.key_id == BOOTSTRAP_KEY_ID:
            return "bootstrap"
        return await score_store.key_name(conn, key.key_id)
    if author is None:
        raise HTTPException(400, "`author` is required when the server runs without API "
                            "keys: it names the reviewer")
    return author


async def _held(conn: Connection, queue: review.QueueRow, item_id: int, reviewer: str
                ) -> review.ItemRow:
    held = await review.held_by(conn, queue.queue_id, item_id, reviewer)
    if held is not None:
        return held
    found = await review.item(conn, queue.queue_id, item_id)
    if found is None:
        raise HTTPException(404, f"no item {item_id} in review queue {queue['name']!r}")
    raise HTTPException(409, f"item {item_id} is not held by {reviewer!r} (status "
                        f"{found['status']}): take it with POST .../next first")


# ------------------------------------------------------------------------------------ routes

@router.get("/review-queues", response_model=ReviewQueueList,
            summary="The project's review queues with their progress, by name")
async def list_queues(rt: Rt, project: Project) -> Any:
    async with rt.db.acquire() as conn:
        rows = await review.queues(conn, project)
    return ReviewQueueList.answer([answer(declared.ReviewQueue, r) for r in rows])


@router.post("/review-queues", status_code=201, response_model=ReviewQueue,
             openapi_extra=needs(ADMIN), summary="Create a review queue",
             responses={400: {"model": ErrorDetail, "description": "a score name with no "
                              "score config"},
                        409: {"model": ErrorDetail, "description": "the name is taken"}})
async def create_queue(rt: Rt, project: Project, body: QueueCreate) -> Any:
    """Each of `score_names` must be one of the project's score configs, so a reviewer's
    scores are checked against it."""
    if len(set(body.score_names)) != len(body.score_names):
        raise HTTPException(400, "score_names lists a name twice")
    async with rt.db.acquire() as conn:
        known = {r["name"] for r in await score_store.configs(conn, project, body.score_names)}
        missing = [n for n in body.score_names if n not in known]
        if missing:
            raise HTTPException(400, f"score_names: no score config named {', '.join(missing)} "
                                "(create it with PUT /api/v1/score-configs/{name})")
        try:
            row = await review.create_queue(conn, project, body.name, body.description,
                                            body.score_names)
        except review.DuplicateQueue:
            raise HTTPException(409, f"project {project!r} has a review queue named "
                                f"{body.name!r}") from None
    return answer(declared.ReviewQueue, row)


@router.get("/review-queues/{name}", response_model=ReviewQueue, responses=NOT_FOUND,
            summary="A review queue and its progress")
async def get_queue(name: QueuePath, rt: Rt, project: Project) -> Any:
    async with rt.db.acquire() as conn:
        row = await _queue(conn, project, name)
    return answer(declared.ReviewQueue, row)


@router.delete("/review-queues/{name}", status_code=204, responses=NOT_FOUND,
               summary="Delete a review queue and its items (not their scores)")
async def delete_queue(name: QueuePath, rt: Rt, project: Project) -> Response:
    return await deleted(rt.db, f"no review queue {name!r} in project {project!r}",
                         review.delete_queue, project, name)


@router.post("/review-queues/{name}/items", response_model=ItemsAdded, responses=NOT_FOUND,
             summary="Add trajectories to the queue, by trace id or by the list's filters")
async def add_items(name: QueuePath, rt: Rt, project: Project, body: ItemsAdd) -> Any:
    """`query` takes the filters of GET /api/v1/trajectories and means exactly what the list
    means; the newest `limit` matches are added. A trajectory the queue holds is not added
    again."""
    async with rt.db.acquire() as conn:
        await _queue(conn, project, name)
        if body.trace_ids is not None:
            trace_ids = body.trace_ids
        else:
            assert body.query is not None
            f = body.query.to_filter(sort="start_time", descending=True, limit=body.limit)
            trace_ids = [r.trace_id for r in
                         await trajectory_reads.list_trajectories(conn, project, f)]
        try:
            outcome = await review.add_items(conn, project, name, trace_ids)
        except KeyError:  # deleted meanwhile
            raise HTTPException(404, f"no review queue {name!r} in project "
                                f"{project!r}") from None
    return {"added": outcome.added,
                                       "already_queued": outcome.already_queued,
                                       "not_found": outcome.not_found}


@router.get("/review-queues/{name}/items", response_model=ReviewItemList, responses=NOT_FOUND,
            summary="The queue's items, in the order they were added")
async def list_items(
    name: QueuePath, rt: Rt, project: Project,
    status: Annotated[Literal["pending", "done", "skipped"] | None,
                      Query(description="only items of this status")] = None,
    limit: Annotated[int, Query(ge=1, le=10_000)] = 1000,
) -> Any:
    async with rt.db.acquire() as conn:
        queue = await _queue(conn, project, name)
        rows = await review.items(conn, queue.queue_id, status, limit)
    return ReviewItemList.answer([answer(declared.ReviewItem, r) for r in rows])


@router.post("/review-queues/{name}/next", response_model=ReviewNext, responses=NOT_FOUND,
             summary="Take the next item to review: it is held by you for a lease")
async def next_item(name: QueuePath, rt: Rt, project: Project, key: Key,
                    body: NextRequest) -> Any:
    """The item you hold already (its lease renewed: call again to keep it), else the first
    pending item nobody holds. Two reviewers are never given the same item while its lease
    runs; when it runs out, the item is free for anyone."""
    async with rt.db.acquire() as conn:
        queue = await _queue(conn, project, name)
        reviewer = await _reviewer(conn, key, body.author)
        row = await review.claim_next(conn, queue.queue_id, reviewer, body.lease_seconds)
    return {"item": answer(declared.ReviewItem, row) if row is not None else None}


@router.post("/review-queues/{name}/items/{item_id}/complete", response_model=ReviewCompleted,
             summary="Complete a review: its scores, comment and corrected expectations",
             responses={**NOT_FOUND,
                        400: {"model": ErrorDetail, "description": "a score the queue needs "
                              "is missing, or a score is outside its config (the message "
                              "names it)"},
                        409: {"model": ErrorDetail, "description": "you do not hold the item "
                              "(take it with next)"}})
async def complete_item(name: QueuePath, item_id: ItemIdPath, rt: Rt, project: Project,
                        key: Key, body: CompleteRequest) -> Any:
    """The scores are stored on the trajectory with source `human` and the reviewer as author,
    checked as POST /api/v1/trajectories/{trace_id}/scores checks them."""
    given = {s.name for s in body.scores}
    expectations = stored_expectations(body.expectations) if body.expectations is not None else None
    async with rt.db.acquire() as conn:
        queue = await _queue(conn, project, name)
        missing = [n for n in queue.score_names if n not in given]
        if missing:
            raise HTTPException(400, f"scores: the queue needs {', '.join(missing)}")
        reviewer = await _reviewer(conn, key, body.author)
        async with conn.transaction():
            held = await _held(conn, queue, item_id, reviewer)
            trace_id = str(held["trace_id"])
            trajectory = await trajectory_reads.trajectory(conn, project, trace_id)
            if trajectory is None:
                raise HTTPException(404, f"no trajectory for trace {trace_id} in project "
                                    f"{project!r} any more")
            steps = step_ids(trajectory.document) if trajectory.document is not None else None
            creates = [ScoreCreate.model_validate({
                "name": s.name, "value": s.value, "step_id": s.step_id, "comment": s.comment,
                "source": "human", "author": None if key is not None else reviewer})
                for s in body.scores]
            rows = [{"trace_id": trace_id,
                     **checked_score(c, f"scores[{i}]: ", steps, reviewer, key is not None)}
                    for i, c in enumerate(creates)]
            await check_configs(conn, project, creates, True)
            stored = await score_store.add(conn, project, rows)
            done = await review.finish(conn, held.id, "done", body.comment, expectations)
    return {"item": answer(declared.ReviewItem, done),
                                            "scores": [answer(Score, r) for r in stored]}


@router.post("/review-queues/{name}/items/{item_id}/skip", response_model=ReviewItem,
             summary="Skip an item you hold: it is released, and counted as skipped",
             responses={**NOT_FOUND, 409: {"model": ErrorDetail, "description": "you do not "
                                           "hold the item"}})
async def skip_item(name: QueuePath, item_id: ItemIdPath, rt: Rt, project: Project,
                    key: Key, body: SkipRequest) -> Any:
    async with rt.db.acquire() as conn:
        queue = await _queue(conn, project, name)
        reviewer = await _reviewer(conn, key, body.author)
        async with conn.transaction():
            held = await _held(conn, queue, item_id, reviewer)
            row = await review.finish(conn, held.id, "skipped", body.comment, None)
    return answer(declared.ReviewItem, row)


@router.post("/review-queues/{name}/export-to-dataset", response_model=ExportOutcome,
             responses=NOT_FOUND,
             summary="Turn the completed items into dataset items, in one step")
async def export_to_dataset(name: QueuePath, rt: Rt, project: Project,
                            body: ExportRequest) -> Any:
    """Each completed item becomes an item of the set (created when missing), filled from its
    trajectory as a dataset fill fills one, with the reviewer's corrected expectations when
    given (else those pre-filled from what the run did), and the reviewer's comment in its
    metadata (`review_comment`). A trajectory the set holds already is skipped."""
    async with rt.db.acquire() as conn:
        queue = await _queue(conn, project, name)
        done = await review.done_items(conn, queue.queue_id)
        dataset = await datasets.dataset_id(conn, project, body.dataset)
        if dataset is None:
            with contextlib.suppress(datasets.DuplicateName):  # created meanwhile
                await datasets.create_dataset(conn, project, body.dataset,
                                              f"reviewed in queue {name}")
            dataset = await datasets.dataset_id(conn, project, body.dataset)
            assert dataset is not None
        trace_ids = [str(i["trace_id"]) for i in done]
        docs = await trajectory_reads.trajectory_documents(
            conn, project, trajectory_reads.TrajectoryFilter(
                trace_ids=trace_ids, limit=max(len(trace_ids), 1)))
        documents = {r.trace_id: r.document for r in docs if r.document is not None}
        tags = [*body.tags, f"review:{name}"]
        items = []
        for done_item in done:
            trace_id = str(done_item["trace_id"])
            if trace_id not in documents:
                continue
            item = dataset_fill.item_from_trajectory(trace_id, documents[trace_id], tags)
            corrected = done_item["expectations"]
            if corrected is not None:
                item = _with(item, expectations=str(corrected))
            if done_item["comment"]:
                item = _with(item, metadata=_add_comment(item.metadata,
                                                         str(done_item["comment"])))
            items.append(item)
        async with conn.transaction():
            added = await datasets.insert_items(conn, dataset, items)
    return {"dataset": body.dataset, "added": len(added),
                                          "skipped_duplicates": len(done) - len(added),
                                          "item_ids": added}


def _with(item: datasets.NewItem, **changes: Any) -> datasets.NewItem:
    return dataclasses.replace(item, **changes)


def _add_comment(metadata: str, comment: str) -> str:
    doc = orjson.loads(metadata)
    doc["review_comment"] = comment
    return orjson.dumps(doc).decode()
