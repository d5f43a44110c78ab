"""One evaluator's result for one item of an evaluation (a row of
`GET /api/v1/evaluations/{id}/results`), and a run's outcome per evaluator and over its items
(`GET /api/v1/evaluations/{id}`), declared once (`trajhub.records`) for the API's models and the
client's. Only served so far: the evaluation worker still writes the rows by hand
(service/workers/evaluations.py), and storage/rows.py reads the outcomes (`AggregateRow`,
`ItemOutcomesRow`); and the run itself (`Evaluation`, `EvaluationDetail`)."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import Field

from trajhub.records import SERVED_ONLY, Example, Record, Stored, computed, json_column
from trajhub.records.pages import deprecated_alias
from trajhub.records.times import written_when
from trajhub.records.trajectories import TRACE_ID


class EvaluationResult(Record):
    """One evaluator's result for one item."""

    item_id: Annotated[
        str,
        Stored(column=None, written_by="key"),
        Example("6f1d0c6b1c7e4a0e9d5b0f3a8e2c4b71"),
    ] = Field(description="the item of the dataset")
    evaluator: Annotated[str, SERVED_ONLY, Example("expected_agents_tools")] = Field(
        default="", description="the evaluator's name")
    trace_id: Annotated[str | None, SERVED_ONLY, Example(TRACE_ID)] = Field(
        default=None, description="the trajectory it scored")
    score: Annotated[float | None, SERVED_ONLY, Example(1.0)] = Field(
        default=None, description="0 to 1; null when the evaluator failed")
    passed: Annotated[bool | None, SERVED_ONLY, Example(True)] = Field(
        default=None, description="null when the evaluator failed")
    error: Annotated[str | None, SERVED_ONLY] = Field(
        default=None, description="why the evaluator could not score the item")
    reason: Annotated[Any, SERVED_ONLY, Example({})] = Field(
        default=None, description="the evaluator's structured reason")
    explanation: Annotated[
        str | None,
        SERVED_ONLY,
        Example("all expected agents and tools were called"),
    ] = Field(default=None, description="the reason, readable")


# One evaluator's results over a run, aggregated over its rows of `evaluation_results`
# (storage/evaluations.py, `aggregates`); `failed` and `pass_rate` the API computes. No
# docstring: the model's description in /openapi.json would change.
class EvaluatorAggregate(Record):
    evaluator: Annotated[str, Stored(written_by="key")]
    total: Annotated[int, computed("count(*)")] = 0
    passed: Annotated[int, computed("count(*) FILTER (WHERE passed)")] = 0
    failed: Annotated[int, SERVED_ONLY] = 0
    errors: Annotated[int, computed("count(*) FILTER (WHERE error IS NOT NULL)")] = 0
    pass_rate: Annotated[float | None, SERVED_ONLY] = Field(
        default=None, description="errors count as not passed")
    mean_score: Annotated[float | None, computed("avg(score)")] = None


# A run's items judged so far, over one row per item (storage/evaluations.py,
# `item_outcomes`): passed every evaluator, failed one, or hit an error; `total` and `failed`
# the API computes. No docstring: the model's description in /openapi.json would change.
class ItemOutcomes(Record):
    total: Annotated[int, SERVED_ONLY] = 0
    evaluated: Annotated[int, computed("count(*)")] = 0
    passed: Annotated[int, computed("count(*) FILTER (WHERE all_passed)")] = 0
    errors: Annotated[int, computed("count(*) FILTER (WHERE any_error)")] = 0
    failed: Annotated[int, SERVED_ONLY] = 0


_CREATED = written_when("created_at")
_FINISHED = written_when("finished_at")


class Evaluation(Record):
    """An evaluation: evaluators scoring the items of a dataset (storage/rows.py
    `EvaluationRow` reads it with this select list)."""

    id: Annotated[int, Stored(written_by="database")]
    dataset: Annotated[str, Stored(column="dataset_name")] = ""
    target: Literal["snapshot", "live"] = "snapshot"
    run: Annotated[str | None, Stored(column="run_name")] = None
    evaluators: Annotated[list[dict[str, Any]], json_column("evaluators")] = Field(
        default_factory=list)
    status: str = Field(default="", description="running, done or failed")
    error: str | None = None
    item_count: int = 0
    done_items: int = 0
    created_time: Annotated[str | None, _CREATED] = None
    finished_time: Annotated[str | None, _FINISHED] = None
    created_at: Annotated[str | None, _CREATED] = deprecated_alias(
        "created_time", default=None, renamed=True)
    finished_at: Annotated[str | None, _FINISHED] = deprecated_alias(
        "finished_time", default=None, renamed=True)

    @property
    def running(self) -> bool:
        return self.status == "running"


def _no_outcomes() -> ItemOutcomes:
    return ItemOutcomes()


class EvaluationDetail(Evaluation):
    """An evaluation with its outcome per evaluator and over its items (the client's
    `Evaluation`: a list's runs leave both empty)."""

    aggregates: Annotated[list[EvaluatorAggregate], SERVED_ONLY] = Field(default_factory=list)
    items: Annotated[ItemOutcomes, SERVED_ONLY] = Field(default_factory=_no_outcomes)
