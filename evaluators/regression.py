"""Regression report: a baseline and a candidate run of the same dataset compared item by
item — path length, cost and quality deltas, where each item's two runs diverged — and a verdict
per metric (better / same / worse, with counts). Pure; the service gathers each item's runs and
evaluation results and passes them in.

Path-length, cost, token, duration and failure metrics are better when lower; evaluation scores
are better when higher, and a pass is better than a fail.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from trajhub.evaluators.compare import compare, run_metrics
from trajhub.normalizers.coerce import to_float
from trajhub.normalizers.playback import StepEvent
from trajhub.records.replay import AlignedPairView

#: metrics where lower is better, as RunMetrics field names plus `cost_usd` and `tokens`
LOWER_IS_BETTER = ("path_length", "tool_calls", "retries", "tokens", "cost_usd", "duration_ms",
                   "failed_steps")
BETTER, SAME, WORSE = "better", "same", "worse"


@dataclass(frozen=True, slots=True)
class Verdict:
    """One evaluator's outcome on one item (score and passed are None when it errored)."""

    score: float | None
    passed: bool | None
    error: str | None = None


@dataclass(frozen=True, slots=True)
class ItemSide:
    """One side of one item: its run (None when missing) and evaluation results."""

    trace_id: str | None
    events: Sequence[StepEvent] | None  # None: no usable trajectory
    duration_ms: int = 0
    cost_usd: float | None = None
    quality: Mapping[str, Verdict] = field(default_factory=dict)
    problem: str | None = None  # why the run is missing


@dataclass(frozen=True, slots=True)
class ItemReport:
    item_id: str
    baseline_trace_id: str | None
    candidate_trace_id: str | None
    baseline: dict[str, float | None]  # metric → value
    candidate: dict[str, float | None]
    deltas: dict[str, float | None]  # candidate − baseline; None when either is unknown
    quality: dict[str, dict[str, float | bool | None]]  # evaluator → scores, passes, delta
    distance: int | None
    first_divergence: AlignedPairView | None
    problems: list[str]


@dataclass(frozen=True, slots=True)
class MetricVerdict:
    metric: str
    verdict: str
    better: int
    same: int
    worse: int
    missing: int


def _metrics(run: ItemSide) -> dict[str, float | None]:
    if run.events is None:
        return dict.fromkeys(LOWER_IS_BETTER)
    m = run_metrics(run.events, run.duration_ms)
    return {"path_length": m.path_length, "tool_calls": m.tool_calls, "retries": m.retries,
            "tokens": m.input_tokens + m.output_tokens, "cost_usd": run.cost_usd,
            "duration_ms": m.duration_ms, "failed_steps": m.failed_steps}


def _delta(a: float | None, b: float | None) -> float | None:
    if a is None or b is None:
        return None
    return round(b - a, 10)


def item_report(item_id: str, baseline: ItemSide, candidate: ItemSide) -> ItemReport:
    mb, mc = _metrics(baseline), _metrics(candidate)
    distance, first = None, None
    if baseline.events is not None and candidate.events is not None:
        c = compare(baseline.events, baseline.duration_ms, candidate.events,
                    candidate.duration_ms)
        distance, first = c.distance, c.first_divergence
    quality: dict[str, dict[str, float | bool | None]] = {}
    for name in sorted(set(baseline.quality) | set(candidate.quality)):
        vb, vc = baseline.quality.get(name), candidate.quality.get(name)
        sb = vb.score if vb else None
        sc = vc.score if vc else None
        quality[name] = {"baseline_score": sb, "candidate_score": sc,
                         "baseline_passed": vb.passed if vb else None,
                         "candidate_passed": vc.passed if vc else None,
                         "score_delta": _delta(sb, sc)}
    problems = [f"{side}: {run.problem}" for side, run in (("baseline", baseline),
                                                            ("candidate", candidate))
                if run.problem]
    return ItemReport(item_id=item_id, baseline_trace_id=baseline.trace_id,
                      candidate_trace_id=candidate.trace_id, baseline=mb, candidate=mc,
                      deltas={k: _delta(mb[k], mc[k]) for k in LOWER_IS_BETTER},
                      quality=quality, distance=distance, first_divergence=first,
                      problems=problems)


def _verdict(metric: str, outcomes: list[int | None]) -> MetricVerdict:
    """outcomes: +1 better, 0 same, −1 worse, None unknown, per item."""
    better = sum(1 for o in outcomes if o == 1)
    worse = sum(1 for o in outcomes if o == -1)
    same = sum(1 for o in outcomes if o == 0)
    verdict = BETTER if better > worse else WORSE if worse > better else SAME
    return MetricVerdict(metric, verdict, better, same, worse,
                         sum(1 for o in outcomes if o is None))


def _sign(value: float | None) -> int | None:
    if value is None:
        return None
    return (value > 0) - (value < 0)


def aggregate(items: Sequence[ItemReport]) -> list[MetricVerdict]:
    """A verdict per metric: better when more items improved than regressed, worse when the
    opposite, else same."""
    verdicts = []
    for metric in LOWER_IS_BETTER:
        outcomes: list[int | None] = []
        for item in items:
            sign = _sign(item.deltas[metric])
            outcomes.append(None if sign is None else -sign)
        verdicts.append(_verdict(metric, outcomes))
    evaluators = sorted({name for item in items for name in item.quality})
    for name in evaluators:
        scores: list[int | None] = []
        passes: list[int | None] = []
        for item in items:
            q = item.quality.get(name)
            if q is None:
                scores.append(None)
                passes.append(None)
                continue
            delta = q["score_delta"]
            scores.append(_sign(to_float(delta)))
            pb, pc = q["baseline_passed"], q["candidate_passed"]
            passes.append(None if pb is None or pc is None else int(pc) - int(pb))
        verdicts.append(_verdict(f"{name}.score", scores))
        verdicts.append(_verdict(f"{name}.passed", passes))
    return verdicts
