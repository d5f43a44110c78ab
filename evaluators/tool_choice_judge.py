"""tool_choice_judge: an LLM decides, call by call, whether each tool call was an appropriate
choice for the request and the context the agent had at that point (after Mastra's LLM tool-call
accuracy scorer; the prompt is trajhub's own).

The judge answers {"calls": [{"call": n, "appropriate": bool, "reasoning": str}, …],
"missing_tools": [str, …]} with exactly one entry per numbered call. Score = appropriate calls /
calls; a run without tool calls scores 1, or 0 when the judge names tools that were needed but
not called (Mastra's rule). Passes when score >= `threshold` (default 1: every call fits).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from trajhub.evaluators._config import require_names
from trajhub.evaluators.judge_protocol import (
    JudgeContext,
    JudgeOptions,
    JudgeResponseError,
    bool_field,
    chat_request,
    check_threshold,
    render_steps,
    request_section,
    section,
    verdict_object,
)
from trajhub.evaluators.result import EvaluatorOutput
from trajhub.evaluators.trajectory_view import parse_trajectory

NAME = "tool_choice_judge"

_SYSTEM = """\
You check the tool calls of an AI agent one by one. For each numbered call decide whether it
was an appropriate choice for the user's request, given what the agent knew at that point: the
conversation and the results of its earlier calls. A call is appropriate when the tool serves
the request and its arguments fit the request and the earlier results. It is not when the tool
is irrelevant, premature, repeats what an earlier result already gave, or is called with
arguments the request does not support. A call that failed can still have been the right
choice. Also list tools that were clearly needed but never called (only tools you know exist).
Answer with one JSON object and nothing else, with exactly one entry per numbered call:
{"calls": [{"call": <call number>, "appropriate": <true or false>,
"reasoning": "<one or two sentences>"}], "missing_tools": ["<tool name>"]}"""


@dataclass(frozen=True)
class ToolChoiceJudgeConfig(JudgeOptions):
    EVALUATOR = NAME

    threshold: float = 1.0
    #: the tools the agent could call, as "name" or "name: description" (the prompt lists them)
    available_tools: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        super().__post_init__()
        check_threshold(NAME, self.threshold)
        require_names(self, NAME, "available_tools")


@dataclass(frozen=True)
class CallVerdict:
    call: int
    tool: str
    appropriate: bool
    reasoning: str


@dataclass(frozen=True)
class ToolChoiceReason:
    calls: tuple[CallVerdict, ...]
    missing_tools: tuple[str, ...]
    threshold: float
    model: str

    def explain_lines(self) -> list[str]:
        fitting = sum(1 for c in self.calls if c.appropriate)
        judge = f" (judge: {self.model})" if self.model else ""
        lines = [f"{fitting} of {len(self.calls)} tool call(s) appropriate{judge}"]
        for c in self.calls:
            mark = "ok" if c.appropriate else "NOT appropriate"
            lines.append(f"call {c.call} {c.tool}: {mark}: {c.reasoning}")
        if self.missing_tools:
            lines.append(f"needed but not called: {', '.join(self.missing_tools)}")
        return lines


def build_tool_choice_request(
    doc: Mapping[str, Any], context: JudgeContext, config: ToolChoiceJudgeConfig, model: str
) -> dict[str, Any]:
    view = parse_trajectory(doc)
    steps, calls = render_steps(view)
    parts = [request_section(context, view)]
    if config.available_tools:
        parts.append(section("available tools", "\n".join(config.available_tools)))
    parts.append(section("agent trajectory", steps))
    parts.append(f"The trajectory has {len(calls)} numbered tool call(s) to judge.")
    return chat_request(model, config.temperature, _SYSTEM, "\n\n".join(parts))


def parse_tool_choice_response(
    body: Mapping[str, Any], doc: Mapping[str, Any], config: ToolChoiceJudgeConfig
) -> EvaluatorOutput:
    verdict, model = verdict_object(body)
    _, steps = render_steps(parse_trajectory(doc))
    raw = verdict.get("calls")
    if not isinstance(raw, list):
        raise JudgeResponseError("verdict field 'calls' must be a list")
    by_number: dict[int, CallVerdict] = {}
    for entry in raw:
        if not isinstance(entry, Mapping):
            raise JudgeResponseError("each entry of 'calls' must be an object")
        number = entry.get("call")
        if isinstance(number, bool) or not isinstance(number, int) \
                or not 1 <= number <= len(steps):
            raise JudgeResponseError(
                f"'calls' entry has call {number!r}; the calls are numbered 1 to {len(steps)}"
            )
        if number in by_number:
            raise JudgeResponseError(f"call {number} is judged twice")
        reasoning = entry.get("reasoning")
        if not isinstance(reasoning, str):
            raise JudgeResponseError(f"call {number}: field 'reasoning' must be a string")
        by_number[number] = CallVerdict(
            number, steps[number - 1].name, bool_field(entry, "appropriate", f"call {number}"),
            reasoning,
        )
    unjudged = [n for n in range(1, len(steps) + 1) if n not in by_number]
    if unjudged:
        raise JudgeResponseError(f"the verdict does not judge call(s) {_numbers(unjudged)}")
    missing = verdict.get("missing_tools", [])
    if not isinstance(missing, list) or not all(isinstance(t, str) for t in missing):
        raise JudgeResponseError("verdict field 'missing_tools' must be a list of strings")
    calls = tuple(by_number[n] for n in range(1, len(steps) + 1))
    if calls:
        score = sum(1 for c in calls if c.appropriate) / len(calls)
    else:
        score = 0.0 if missing else 1.0
    return EvaluatorOutput(
        evaluator=NAME,
        score=score,
        passed=score >= config.threshold,
        reason=ToolChoiceReason(calls, tuple(missing), config.threshold, model),
    )


def _numbers(values: Sequence[int]) -> str:
    return ", ".join(map(str, values))
