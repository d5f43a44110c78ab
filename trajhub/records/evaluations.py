"""One evaluator's result for one item of an evaluation run (a row of
`GET /api/v1/evaluations/{id}/results`), declared once (`trajhub.records`) for the API's model
and the client's. Only served so far: the evaluation worker still writes the row by hand
(service/workers/evaluations.py)."""

from __future__ import annotations

from typing import Any

from trajhub.records import Field, Record
from trajhub.records.trajectories import TRACE_ID


def _served(name: str, type_: Any, description: str = "", example: Any = None,
            key: bool = False) -> Field:
    return Field(name, type_, description, column=None, example=example,
                 written_by="key" if key else "")


EVALUATION_RESULT = Record("EvaluationResult", "One evaluator's result for one item.", (
    _served("item_id", str, "the item of the evaluation set",
            "6f1d0c6b1c7e4a0e9d5b0f3a8e2c4b71", key=True),
    _served("evaluator", str, "the evaluator's name", "expected_agents_tools"),
    _served("trace_id", str | None, "the trajectory it scored", TRACE_ID),
    _served("score", float | None, "0 to 1; null when the evaluator failed", 1.0),
    _served("passed", bool | None, "null when the evaluator failed", True),
    _served("error", str | None, "why the evaluator could not score the item", None),
    _served("reason", Any, "the evaluator's structured reason", {}),
    _served("explanation", str | None, "the reason, readable",
            "all expected agents and tools were called"),
))
