"""Mastra's code-based tool-call accuracy scorer (seed 004), over the trajectory's tool calls.

Binary score:
- no tool calls at all -> 0;
- an expected tool order (per item, else from the config) -> 1 iff the order holds: strict = the
  exact sequence, no extras; flexible = the expected tools form an ordered subsequence;
- else `expected_tool`: lenient -> 1 iff it was called; strict -> 1 iff it is the one and only call.

`correct_tool_called` follows Mastra's current preprocess step: in strict mode it is true only when
the expected tool is the one and only call, so "called among others" reads false there too.

One deliberate difference: Mastra's flexible check looks up each expected tool's *first*
occurrence (`indexOf`), so actual [b, a, b] fails expected [a, b] and a repeated expected tool can
never pass. The documented intent (docs/evaluators.md §a3) is "an ordered subsequence"; we check
exactly that.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from trajhub.evaluators._config import Options, require_names, require_type
from trajhub.evaluators.expectations import Expectations
from trajhub.evaluators.result import EvaluatorOutput, join_or_none
from trajhub.evaluators.trajectory_view import parse_trajectory

NAME = "tool_call_accuracy"


@dataclass(frozen=True)
class ToolCallAccuracyConfig(Options):
    EVALUATOR = NAME

    expected_tool: str | None = None
    strict_mode: bool = False
    expected_tool_order: tuple[str, ...] | None = None

    def __post_init__(self) -> None:
        if self.expected_tool is not None:
            require_type(NAME, "expected_tool", self.expected_tool, str)
        require_type(NAME, "strict_mode", self.strict_mode, bool)
        if self.expected_tool_order is not None:
            require_names(self, NAME, "expected_tool_order")


@dataclass(frozen=True)
class ToolCallAccuracyReason:
    """Mastra's preprocessStepResult, minus the message plumbing."""

    expected_tool: str | None
    actual_tools: tuple[str, ...]
    strict_mode: bool
    expected_tool_order: tuple[str, ...] | None
    has_tool_calls: bool
    correct_tool_called: bool
    correct_order_called: bool | None

    def explain_lines(self) -> list[str]:
        lines = [f"actual tool calls: {join_or_none(self.actual_tools)}"]
        if not self.has_tool_calls:
            lines.append("no tool was called")
        mode = "strict" if self.strict_mode else "lenient"
        if self.expected_tool_order:
            verdict = "holds" if self.correct_order_called else "does not hold"
            kind = "exact sequence" if self.strict_mode else "ordered subsequence, extras allowed"
            order = ", ".join(self.expected_tool_order)
            lines.append(f"expected order [{order}] ({kind}): {verdict}")
        elif self.expected_tool is not None:
            called = self.expected_tool in self.actual_tools
            verdict = "was called" if called else "was not called"
            lines.append(f"expected tool {self.expected_tool} ({mode}) {verdict}")
            if self.strict_mode and called and len(self.actual_tools) != 1:
                lines.append(f"strict mode needs exactly one call, got {len(self.actual_tools)}")
        return lines


def is_ordered_subsequence(expected: Sequence[str], actual: Sequence[str]) -> bool:
    remaining = iter(actual)
    # `in` on an iterator consumes it up to the match, which is exactly subsequence search.
    return all(tool in remaining for tool in expected)


def check_tool_order(actual: Sequence[str], expected: Sequence[str], strict: bool) -> bool:
    if strict:
        return list(actual) == list(expected)
    return is_ordered_subsequence(expected, actual)


def _correct_tool_called(expected: str | None, actual: Sequence[str], strict: bool) -> bool:
    """Mastra: strict -> the expected tool is the only call; lenient -> it is among the calls."""
    if not expected:
        return False
    return tuple(actual) == (expected,) if strict else expected in actual


def tool_call_accuracy(
    doc: Mapping[str, Any],
    expectations: Expectations,
    config: ToolCallAccuracyConfig,
) -> EvaluatorOutput:
    # The item's own expected order overrides the config's default, as Mastra lets a per-item
    # expectation override the scorer's constructor options.
    order = expectations.tool_order or config.expected_tool_order or None
    if config.expected_tool is None and not order:
        raise ValueError(f"{NAME}: needs expected_tool or an expected tool order")
    actual = tuple(call.name for call in parse_trajectory(doc).tool_calls)
    correct_order = check_tool_order(actual, order, config.strict_mode) if order else None
    correct_tool = _correct_tool_called(config.expected_tool, actual, config.strict_mode)

    if not actual:
        score = 0.0
    elif order:
        score = 1.0 if correct_order else 0.0
    else:
        score = 1.0 if correct_tool else 0.0

    reason = ToolCallAccuracyReason(
        expected_tool=config.expected_tool,
        actual_tools=actual,
        strict_mode=config.strict_mode,
        expected_tool_order=order,
        has_tool_calls=bool(actual),
        correct_tool_called=correct_tool,
        correct_order_called=correct_order,
    )
    return EvaluatorOutput(evaluator=NAME, score=score, passed=score == 1.0, reason=reason)
