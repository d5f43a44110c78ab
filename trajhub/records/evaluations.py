"""One evaluator's result for one item of an evaluation run (a row of
`GET /api/v1/evaluations/{id}/results`), and a run's outcome per evaluator and over its items
(`GET /api/v1/evaluations/{id}`), declared once (`trajhub.records`) for the API's models and the
client's. Only served so far: the evaluation worker still writes the rows by hand
(service/workers/evaluations.py), and storage/rows.py reads the outcomes (`AggregateRow`,
`ItemOutcomesRow`). The run itself is not declared here yet (service/api/models.py
`Evaluation`)."""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import Field

from trajhub.records import SERVED_ONLY, Example, Record, Stored
from trajhub.records.trajectories import TRACE_ID


class EvaluationResult(Record):
    """One evaluator's result for one item."""

    item_id: Annotated[
        str,
        Stored(column=None, written_by="key"),
        Example("6f1d0c6b1c7e4a0e9d5b0f3a8e2c4b71"),
    ] = Field(description="the item of the evaluation set")
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


# no docstring: the model's description in /openapi.json would change
class EvaluatorAggregate(Record):
    evaluator: Annotated[str, Stored(column=None, written_by="key")]
    total: Annotated[int, SERVED_ONLY] = 0
    passed: Annotated[int, SERVED_ONLY] = 0
    failed: Annotated[int, SERVED_ONLY] = 0
    errors: Annotated[int, SERVED_ONLY] = 0
    pass_rate: Annotated[float | None, SERVED_ONLY] = Field(
        default=None, description="errors count as not passed")
    mean_score: Annotated[float | None, SERVED_ONLY] = None


# no docstring: the model's description in /openapi.json would change
class ItemOutcomes(Record):
    total: Annotated[int, SERVED_ONLY] = 0
    evaluated: Annotated[int, SERVED_ONLY] = 0
    passed: Annotated[int, SERVED_ONLY] = 0
    errors: Annotated[int, SERVED_ONLY] = 0
    failed: Annotated[int, SERVED_ONLY] = 0
