"""Budgets on how much a run cost, after Mastra's trajectory efficiency checks.

Each configured budget is met or not; score = budgets met / budgets configured, and the run
passes only when every budget is met. A budget the trajectory cannot be measured against (no
duration recorded) counts as not met: an unmeasurable run must not look efficient.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from itertools import pairwise
from typing import Any

from trajhub.evaluators._config import ConfigError, Options, require_budget
from trajhub.evaluators.expectations import Expectations
from trajhub.evaluators.result import EvaluatorOutput
from trajhub.evaluators.trajectory_view import ToolCall, parse_trajectory

NAME = "efficiency"
REPEAT_SCOPES = ("anywhere", "consecutive")


@dataclass(frozen=True)
class EfficiencyConfig(Options):
    EVALUATOR = NAME

    max_steps: int | None = None
    max_tokens: int | None = None
    max_duration_ms: int | None = None
    #: calls that repeat an earlier call with the same tool and the same arguments
    max_repeated_calls: int | None = None
    #: failed tool calls / tool calls, in [0, 1]
    max_tool_error_rate: float | None = None
    #: "anywhere": any earlier identical call counts; "consecutive": only the one right before
    #: (Mastra's noRedundantCalls)
    repeated_calls_scope: str = "anywhere"

    def __post_init__(self) -> None:
        for name in ("max_steps", "max_tokens", "max_duration_ms", "max_repeated_calls"):
            require_budget(NAME, name, getattr(self, name), integer=True)
        require_budget(NAME, "max_tool_error_rate", self.max_tool_error_rate, integer=False)
        if self.max_tool_error_rate is not None and self.max_tool_error_rate > 1:
            raise ConfigError(f"{NAME}: option 'max_tool_error_rate' must be within [0, 1]")
        if self.repeated_calls_scope not in REPEAT_SCOPES:
            raise ConfigError(
                f"{NAME}: option 'repeated_calls_scope' must be one of {', '.join(REPEAT_SCOPES)}"
            )
        if all(budget is None for budget, _ in self.budgets()):
            raise ConfigError(f"{NAME}: configure at least one budget")

    def budgets(self) -> list[tuple[float | None, str]]:
        return [
            (self.max_steps, "steps"),
            (self.max_tokens, "tokens"),
            (self.max_duration_ms, "duration_ms"),
            (self.max_repeated_calls, "repeated_calls"),
            (self.max_tool_error_rate, "tool_error_rate"),
        ]


@dataclass(frozen=True)
class BudgetCheck:
    budget: str
    actual: float | None  # None: the trajectory does not record it
    limit: float
    met: bool


@dataclass(frozen=True)
class EfficiencyReason:
    checks: tuple[BudgetCheck, ...]

    def explain_lines(self) -> list[str]:
        lines = []
        for check in self.checks:
            mark = "✅" if check.met else "❌"
            actual = "not recorded" if check.actual is None else _number(check.actual)
            lines.append(f"{mark} {check.budget}: {actual} (limit {_number(check.limit)})")
        return lines


def efficiency(
    doc: Mapping[str, Any],
    expectations: Expectations | None,
    config: EfficiencyConfig,
) -> EvaluatorOutput:
    """`expectations` is unused (budgets are per evaluator, not per item); it is accepted so every
    evaluator has the same shape."""
    view = parse_trajectory(doc)
    totals = view.totals
    actuals: dict[str, float | None] = {
        "steps": totals.steps,
        "tokens": totals.total_tokens,
        "duration_ms": totals.duration_ms,
        "repeated_calls": repeated_calls(view.tool_calls, config.repeated_calls_scope),
        "tool_error_rate": totals.tool_error_rate,
    }
    checks = tuple(
        BudgetCheck(
            budget=name,
            actual=actuals[name],
            limit=limit,
            met=actuals[name] is not None and (actuals[name] or 0) <= limit,
        )
        for limit, name in config.budgets()
        if limit is not None
    )
    met = sum(check.met for check in checks)
    return EvaluatorOutput(
        evaluator=NAME,
        score=met / len(checks),
        passed=met == len(checks),
        reason=EfficiencyReason(checks),
    )


def repeated_calls(calls: tuple[ToolCall, ...], scope: str) -> int:
    """Calls identical (same tool, same args) to an earlier call, or to the call just before."""
    keys = [json.dumps([c.name, c.arguments], sort_keys=True, default=str) for c in calls]
    if scope == "consecutive":
        return sum(1 for before, key in pairwise(keys) if key == before)
    return len(keys) - len(set(keys))


def _number(value: float) -> str:
    if float(value).is_integer():
        return str(int(value))
    return f"{value:.3g}"
