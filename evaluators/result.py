"""The result every evaluator returns.

A score for ranking and dashboards, a boolean for gates, and a reason that is both structured
(for the UI and the API) and readable (`explain()`, in the spirit of seed 001's `formatResult`).
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Any, ClassVar, Protocol


class Reason(Protocol):
    """What an evaluator-specific reason provides: it is a dataclass, whose fields are its
    structured form (`EvaluatorOutput.to_dict`), and it has readable lines."""

    __dataclass_fields__: ClassVar[dict[str, Any]]

    def explain_lines(self) -> list[str]:
        """Human-readable lines, without the verdict header."""
        ...


@dataclass(frozen=True)
class EvaluatorOutput:
    evaluator: str
    score: float
    passed: bool
    reason: Reason

    def __post_init__(self) -> None:
        # A score outside [0, 1] would silently distort every average built on top of it.
        if isinstance(self.score, bool) or not isinstance(self.score, int | float):
            raise TypeError(f"score must be a number, got {type(self.score).__name__}")
        if not math.isfinite(self.score) or not 0.0 <= self.score <= 1.0:
            raise ValueError(f"score must be within [0, 1], got {self.score!r}")

    def explain(self) -> str:
        mark = "✅" if self.passed else "❌"
        verdict = "passed" if self.passed else "failed"
        header = f"{mark} {self.evaluator}: {verdict} (score {self.score:.2f})"
        return "\n".join([header, *(f"   {line}" for line in self.reason.explain_lines())]) + "\n"

    def to_dict(self) -> dict[str, Any]:
        return {
            "evaluator": self.evaluator,
            "score": self.score,
            "passed": self.passed,
            "reason": asdict(self.reason),
            "explanation": self.explain(),
        }


def join_or_none(items: list[str] | tuple[str, ...]) -> str:
    """seed 001 (docs/evaluators.md) prints '无' (none) for an empty list; keep that, in English."""
    return ", ".join(items) if items else "none"
