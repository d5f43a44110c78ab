"""A regression report as the REST API answers it (`POST /api/v1/regressions`): a baseline and
a candidate run over one dataset, item by item, with a verdict per metric."""

from __future__ import annotations

from pydantic import BaseModel, Field

from trajhub.records.examples import example_config
from trajhub.records.replay import AlignedPairView


class QualityView(BaseModel):
    baseline_score: float | None
    candidate_score: float | None
    baseline_passed: bool | None
    candidate_passed: bool | None
    score_delta: float | None


class ItemReportView(BaseModel):
    item_id: str
    baseline_trace_id: str | None
    candidate_trace_id: str | None
    baseline: dict[str, float | None] = Field(description="path_length, tool_calls, retries, "
                                              "tokens, cost_usd, duration_ms, failed_steps")
    candidate: dict[str, float | None]
    deltas: dict[str, float | None] = Field(description="candidate − baseline; null when "
                                            "either side is unknown")
    quality: dict[str, QualityView] = Field(description="per evaluator")
    distance: int | None
    first_divergence: AlignedPairView | None
    problems: list[str]


class MetricVerdictView(BaseModel):
    metric: str
    verdict: str = Field(description="better, same or worse: better when more items improved "
                         "than regressed")
    better: int
    same: int
    worse: int
    missing: int


class SideView(BaseModel):
    evaluation: int | None = Field(description="the evaluation whose results were used")
    run: str | None


class RegressionReport(BaseModel):
    model_config = example_config({
        "dataset": "sums",
        "baseline": {"evaluation": 1, "run": "v1"},
        "candidate": {"evaluation": 2, "run": "v2"},
        "verdicts": [
            {"metric": "path_length", "verdict": "worse", "better": 0, "same": 1, "worse": 1,
             "missing": 0},
            {"metric": "retries", "verdict": "same", "better": 0, "same": 2, "worse": 0,
             "missing": 0}],
        "items": [{
            "item_id": "a78efa5c8a7f4a528f2e16f0ad0dde2f",
            "baseline_trace_id": "07496c7684d074983cb8f9387e1156f2",
            "candidate_trace_id": "f15936868cc8af52134b0f65722bf35c",
            "baseline": {"path_length": 2.0, "tool_calls": 1.0, "retries": 0.0, "tokens": 16.0,
                         "cost_usd": 4.2e-06, "duration_ms": 0.0, "failed_steps": 0.0},
            "candidate": {"path_length": 4.0, "tool_calls": 2.0, "retries": 0.0, "tokens": 32.0,
                          "cost_usd": 8.4e-06, "duration_ms": 0.0, "failed_steps": 0.0},
            "deltas": {"path_length": 2.0, "tool_calls": 1.0, "retries": 0.0, "tokens": 16.0,
                       "cost_usd": 4.2e-06, "duration_ms": 0.0, "failed_steps": 0.0},
            "quality": {"efficiency": {"baseline_score": 1.0, "candidate_score": 0.0,
                                       "baseline_passed": True, "candidate_passed": False,
                                       "score_delta": -1.0}},
            "distance": 2,
            "first_divergence": {"op": "inserted", "position": 2, "a": None, "b": {
                "seq": 2, "step_id": "418893ffe6da18c7", "type": "model",
                "name": "chat gpt-4o-mini", "agent": "calc_agent", "arguments_hash": None}},
            "problems": []}],
        "price_table": "genai-prices 0.2.3, data of 2026-11-10", "prices_as_of": "2026-11-10"})
    dataset: str
    baseline: SideView
    candidate: SideView
    verdicts: list[MetricVerdictView]
    items: list[ItemReportView]
    price_table: str
    prices_as_of: str
