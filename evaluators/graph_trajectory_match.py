"""Graph trajectory matching: the LangGraph node steps of each graph run against the expected
ones (agentevals' `graph_trajectory_strict_match`, plus the superset mode its users ask for in
langchain-ai/agentevals#49).

- `strict` (agentevals): the same number of runs, and each run the same node steps in the same
  order, `__start__` and `__interrupt__` included.
- `superset`: every expected run has a counterpart at the same index whose node steps contain
  the expected ones (as a multiset: extra steps and any order are fine); extra runs are fine.

The actual runs come from the trajectory's node metadata (graph_runs.py); the expected ones from
the item's `graph_runs`. agentevals answers true/false; the score is graded: for strict, node
steps equal at the same position over the larger side's count (runs compared index by index);
for superset, expected steps found over expected steps.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from trajhub.evaluators._config import ConfigError, Options
from trajhub.evaluators.expectations import Expectations
from trajhub.evaluators.graph_runs import graph_runs
from trajhub.evaluators.result import EvaluatorOutput
from trajhub.evaluators.trajectory_view import parse_trajectory

NAME = "graph_trajectory_match"
MODES = ("strict", "superset")


@dataclass(frozen=True)
class GraphTrajectoryMatchConfig(Options):
    EVALUATOR = NAME

    mode: str = "strict"

    def __post_init__(self) -> None:
        if self.mode not in MODES:
            raise ConfigError(f"{NAME}: option 'mode' must be one of {', '.join(MODES)}")


@dataclass(frozen=True)
class RunDiff:
    """One run compared: its index, and what was expected but not found / found but not
    expected (strict: by position; superset: as multisets)."""

    run: int
    missing: tuple[str, ...]
    extra: tuple[str, ...]


@dataclass(frozen=True)
class GraphTrajectoryMatchReason:
    mode: str
    expected: tuple[tuple[str, ...], ...]
    actual: tuple[tuple[str, ...], ...]
    matched: int
    differences: tuple[RunDiff, ...]

    def explain_lines(self) -> list[str]:
        lines = [
            f"{self.mode} match of {len(self.expected)} expected graph run(s) against"
            f" {len(self.actual)} actual: {self.matched} node step(s) matched",
            f"expected: {_runs(self.expected)}",
            f"actual: {_runs(self.actual)}",
        ]
        for diff in self.differences:
            parts = []
            if diff.missing:
                parts.append(f"missing {', '.join(diff.missing)}")
            if diff.extra:
                parts.append(f"unexpected {', '.join(diff.extra)}")
            lines.append(f"run {diff.run}: {'; '.join(parts)}")
        return lines


def graph_trajectory_match(
    doc: Mapping[str, Any],
    expectations: Expectations,
    config: GraphTrajectoryMatchConfig,
) -> EvaluatorOutput:
    if expectations.graph_runs is None:
        raise ValueError(f"{NAME}: the item has no expected graph runs (graph_runs)")
    expected = tuple(tuple(run) for run in expectations.graph_runs)
    actual = tuple(tuple(run) for run in graph_runs(parse_trajectory(doc)))
    if expected and not actual:
        # not a failed match: there is nothing to match (e.g. an instrumentation that does not
        # record LangGraph node metadata), and the result should say so
        raise ValueError(
            f"{NAME}: the trajectory records no LangGraph node steps (langgraph_node metadata)"
        )
    if config.mode == "strict":
        matched, diffs = _strict(expected, actual)
        total = max(_count(expected), _count(actual))
        passed = expected == actual
    else:
        matched, diffs = _superset(expected, actual)
        total = _count(expected)
        passed = matched == total and len(actual) >= len(expected)
    # runs are never empty (expectations refuse []), so a full score means an exact match
    score = matched / total if total else 1.0
    reason = GraphTrajectoryMatchReason(
        mode=config.mode, expected=expected, actual=actual, matched=matched,
        differences=tuple(diffs),
    )
    return EvaluatorOutput(evaluator=NAME, score=score, passed=passed, reason=reason)


def _strict(expected: Sequence[Sequence[str]], actual: Sequence[Sequence[str]]
            ) -> tuple[int, list[RunDiff]]:
    matched = 0
    diffs: list[RunDiff] = []
    for index in range(max(len(expected), len(actual))):
        want = expected[index] if index < len(expected) else ()
        got = actual[index] if index < len(actual) else ()
        same = sum(1 for a, b in zip(want, got, strict=False) if a == b)
        matched += same
        if tuple(want) != tuple(got):
            missing = [a for i, a in enumerate(want) if i >= len(got) or got[i] != a]
            extra = [b for i, b in enumerate(got) if i >= len(want) or want[i] != b]
            diffs.append(RunDiff(index, tuple(missing), tuple(extra)))
    return matched, diffs


def _superset(expected: Sequence[Sequence[str]], actual: Sequence[Sequence[str]]
              ) -> tuple[int, list[RunDiff]]:
    matched = 0
    diffs: list[RunDiff] = []
    for index, want in enumerate(expected):
        got = Counter(actual[index]) if index < len(actual) else Counter()
        lacking = Counter(want) - got
        matched += len(want) - sum(lacking.values())
        if lacking:
            diffs.append(RunDiff(index, tuple(lacking.elements()), ()))
    return matched, diffs


def _count(runs: Sequence[Sequence[str]]) -> int:
    return sum(len(run) for run in runs)


def _runs(runs: Sequence[Sequence[str]]) -> str:
    return " | ".join("[" + ", ".join(run) + "]" for run in runs) if runs else "none"
