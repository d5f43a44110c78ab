"""REST: regression reports — a baseline and a candidate run over the same dataset,
compared item by item on path length, cost and quality, with a verdict per metric."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Annotated, Any

import orjson
from fastapi import APIRouter, HTTPException
from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, model_validator

from trajhub.evaluators.pricing import Prices, run_cost
from trajhub.evaluators.regression import ItemReport, ItemSide, Verdict, aggregate, item_report
from trajhub.normalizers.playback import run_duration_ms, step_events
from trajhub.records.regressions import RegressionReport
from trajhub.service.api.answers import CheckedRoute
from trajhub.service.api.models import BODY_CONFIG, NOT_FOUND
from trajhub.service.api.params import INT64_MAX, PREFIX, whole_number
from trajhub.service.api.scopes import Project, Rt
from trajhub.service.prices import prices_for
from trajhub.storage import evaluations, replay_reads

# every route here reads runs or evaluations that may not exist (404)
router = APIRouter(prefix=PREFIX, route_class=CheckedRoute, tags=["regressions"],
                   responses=NOT_FOUND)


def _one_form(schema: dict[str, Any]) -> None:
    # exactly one of `evaluation` and `run` is given (not null)
    schema["oneOf"] = [
        {"required": ["evaluation"], "properties": {"evaluation": {"type": "integer"},
                                                    "run": {"type": "null"}}},
        {"required": ["run"], "properties": {"run": {"type": "string"},
                                             "evaluation": {"type": "null"}}},
    ]


class RunRef(BaseModel):
    """One side: an evaluation by id, or a live run by name over a set."""

    model_config = ConfigDict(**BODY_CONFIG, json_schema_extra=_one_form)
    # an id is a bigint: a larger number names no evaluation and is refused by the schema
    evaluation: Annotated[int, Field(ge=1, le=INT64_MAX),
                          BeforeValidator(whole_number)] | None = Field(
        None, description="an evaluation id: its items, traces and results")
    run: str | None = Field(None, min_length=1, description="a run name (the `trajhub.run` of "
                            "the traces); its newest finished evaluation supplies quality")
    dataset: str | None = Field(None, min_length=1, description="the set of a run name "
                                "(default: the request's `dataset`)")

    @model_validator(mode="after")
    def one_form(self) -> RunRef:
        if (self.evaluation is None) == (self.run is None):
            raise ValueError("give exactly one of `evaluation` and `run`")
        return self


def _run_names_have_a_set(schema: dict[str, Any]) -> None:
    # a side given by run name needs its set: its own `dataset`, or the request's
    def side_ok(side: str) -> dict[str, Any]:
        return {"anyOf": [
            {"properties": {side: {"not": {"required": ["run"],
                                           "properties": {"run": {"type": "string"}}}}}},
            {"properties": {side: {"required": ["dataset"],
                                   "properties": {"dataset": {"type": "string"}}}}},
            {"required": ["dataset"], "properties": {"dataset": {"type": "string"}}},
        ]}

    schema["allOf"] = [side_ok("baseline"), side_ok("candidate")]


class RegressionRequest(BaseModel):
    model_config = ConfigDict(**BODY_CONFIG, json_schema_extra=_run_names_have_a_set)
    baseline: RunRef
    candidate: RunRef
    dataset: str | None = Field(None, min_length=1, description="the dataset, for "
                                "sides given by run name")


@dataclass
class Side:
    dataset: str
    evaluation: int | None
    run: str | None
    items: list[tuple[str, int]] = field(default_factory=list)  # (item id, seq)
    traces: dict[str, str] = field(default_factory=dict)
    quality: dict[str, dict[str, Verdict]] = field(default_factory=dict)


def _fold_results(side: Side, rows: list[Any]) -> None:
    for r in rows:
        side.quality.setdefault(r["item_id"], {})[r["evaluator"]] = Verdict(
            r["score"], r["passed"], r["error"])


async def _side(conn: Any, project: str, ref: RunRef, default_dataset: str | None,
                which: str) -> Side:
    if ref.evaluation is not None:
        ev = await replay_reads.evaluation(conn, project, ref.evaluation)
        if ev is None:
            raise HTTPException(404, f"{which}: no evaluation {ref.evaluation} in project "
                                     f"{project!r}")
        side = Side(ev["dataset_name"], ev["id"], ev["run_name"])
        rows = await replay_reads.evaluation_results(conn, ev["id"])
        seen: set[str] = set()
        for r in rows:
            if r["item_id"] not in seen:
                seen.add(r["item_id"])
                side.items.append((r["item_id"], r["seq"]))
            if r["trace_id"]:
                side.traces[r["item_id"]] = r["trace_id"]
        _fold_results(side, list(rows))
        return side
    dataset = ref.dataset or default_dataset
    if not dataset:
        raise HTTPException(422, f"{which}: a run name needs its dataset (`dataset`)")
    assert ref.run is not None
    items = await replay_reads.dataset_items(conn, project, dataset)
    if items is None:
        raise HTTPException(404, f"{which}: no dataset {dataset!r} in project "
                                 f"{project!r}")
    evaluation = await replay_reads.latest_evaluation_of_run(conn, project, dataset, ref.run)
    side = Side(dataset, evaluation, ref.run, [(r["id"], r["seq"]) for r in items])
    side.traces = await evaluations.live_traces(conn, project, ref.run,
                                                [i for i, _ in side.items])
    if evaluation is not None:
        _fold_results(side, list(await replay_reads.evaluation_results(conn, evaluation)))
    return side


def _item_json(item: ItemReport) -> dict[str, Any]:
    # the first divergence is a pydantic model (trajhub.records.replay), which asdict keeps
    first = item.first_divergence
    return {**asdict(item), "first_divergence": first.model_dump() if first else None}


def _item_run(side: Side, item_id: str, docs: dict[str, Any], prices: Prices) -> ItemSide:
    quality = side.quality.get(item_id, {})
    trace_id = side.traces.get(item_id)
    if trace_id is None:
        return ItemSide(None, None, quality=quality, problem="no run of this item")
    row = docs.get(trace_id)
    if row is None or row["document"] is None:
        why = row["derivation_error"] if row is not None else "no trajectory yet"
        return ItemSide(trace_id, None, quality=quality, problem=f"trace {trace_id}: {why}")
    document = orjson.loads(row["document"])
    events = step_events(document)
    cost = run_cost(prices, events).run
    return ItemSide(trace_id, events, run_duration_ms(document),
                   cost.usd if cost.complete else None, quality)


@router.post("/regressions", response_model=RegressionReport,
             summary="Compare a candidate run with a baseline over the same dataset")
async def regression_report(rt: Rt, project: Project, body: RegressionRequest) -> Any:
    """Per item: path-length, cost and quality deltas and where the two runs diverged; per
    metric: a better / same / worse verdict with counts. Quality comes from evaluation results
    where they exist."""
    prices = prices_for(rt.settings)
    async with rt.db.acquire() as conn:
        base = await _side(conn, project, body.baseline, body.dataset, "baseline")
        cand = await _side(conn, project, body.candidate, body.dataset, "candidate")
        if base.dataset != cand.dataset:
            raise HTTPException(422, f"the baseline is over set {base.dataset!r} and the "
                                     f"candidate over {cand.dataset!r}: compare runs of one set")
        docs = await replay_reads.documents(
            conn, project, sorted({*base.traces.values(), *cand.traces.values()}))
    order: dict[str, int] = {}
    for item_id, seq in base.items + cand.items:
        order.setdefault(item_id, seq)
    items = [item_report(item_id, _item_run(base, item_id, docs, prices),
                         _item_run(cand, item_id, docs, prices))
             for item_id in sorted(order, key=lambda i: (order[i], i))]
    return {
        "dataset": base.dataset,
        "baseline": {"evaluation": base.evaluation, "run": base.run},
        "candidate": {"evaluation": cand.evaluation, "run": cand.run},
        "verdicts": [asdict(v) for v in aggregate(items)],
        "items": [_item_json(i) for i in items],
        "price_table": prices.description, "prices_as_of": prices.as_of,
    }
