"""trajectory_judge: an LLM grades the whole trajectory — model turns, tool calls with their
arguments, results and errors, and the final answer — with or without a reference.

The reference, when there is one: the item's reference trajectory (its stored snapshot, when a
live run is evaluated against it), else its expected steps, plus the reference answer. The judge
answers {"reasoning": str, "score": 0..1}; the run passes when score >= `threshold`. The prompt
is trajhub's own; the criteria follow what agentevals' and Mastra's trajectory judges look at
(progress toward the goal, fitting tool use, use of results and errors, economy, outcome).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from trajhub.evaluators._config import ConfigError, require_type
from trajhub.evaluators.expectations import Expectations
from trajhub.evaluators.judge_protocol import (
    JudgeContext,
    JudgeOptions,
    chat_request,
    check_threshold,
    clip,
    render_steps,
    render_value,
    request_section,
    section,
    text_field,
    unit_score,
    verdict_object,
)
from trajhub.evaluators.result import EvaluatorOutput
from trajhub.evaluators.trajectory_view import parse_trajectory

NAME = "trajectory_judge"
REFERENCE_MODES = ("auto", "none")

_SYSTEM = """\
You grade the trajectory of an AI agent: everything it did to handle one request - its model
turns, the tools it called and with which arguments, what the tools returned, and the errors it
hit. Judge the process as well as the final answer:
1. Progress: every step moves toward what the user asked; no detours that serve nothing.
2. Tool use: fitting tools, called with arguments that fit the request and earlier results.
3. Use of results: the agent reads tool results and errors and acts on them (retries sensibly,
   reports a failure honestly, never invents a result it did not get).
4. Economy: no repeated or pointless calls.
5. Outcome: the final answer follows from the steps and addresses the request.
{reference}{criteria}
Answer with one JSON object and nothing else:
{{"reasoning": "<your assessment, citing step numbers>", "score": <number from 0 to 1>}}
1 means a careful expert agent would have done the same; 0 means the run does not serve the
request at all."""

_WITH_REFERENCE = """
A reference of a good run of the same request is given. The agent need not repeat it step for
step: judge whether its steps are equivalent in effect (the same information gathered, the same
actions taken) and count missing or contradicting steps against it.
"""


@dataclass(frozen=True)
class TrajectoryJudgeConfig(JudgeOptions):
    EVALUATOR = NAME

    #: pass when score >= threshold
    threshold: float = 0.5
    #: "auto": use the item's reference when it has one; "none": judge without a reference
    reference: str = "auto"
    #: extra criteria appended to the prompt
    criteria: str | None = None

    def __post_init__(self) -> None:
        super().__post_init__()
        check_threshold(NAME, self.threshold)
        if self.reference not in REFERENCE_MODES:
            raise ConfigError(f"{NAME}: option 'reference' must be one of auto, none")
        if self.criteria is not None:
            require_type(NAME, "criteria", self.criteria, str)


@dataclass(frozen=True)
class TrajectoryJudgeReason:
    reasoning: str
    threshold: float
    with_reference: bool
    model: str

    def explain_lines(self) -> list[str]:
        judge = f" (judge: {self.model})" if self.model else ""
        reference = "against the reference" if self.with_reference else "without a reference"
        return [f"judged {reference}, pass at >= {self.threshold:g}{judge}", self.reasoning]


def build_trajectory_judge_request(
    doc: Mapping[str, Any],
    context: JudgeContext,
    expectations: Expectations,
    config: TrajectoryJudgeConfig,
    model: str,
) -> dict[str, Any]:
    view = parse_trajectory(doc)
    steps, _ = render_steps(view)
    parts = [
        request_section(context, view),
        section("agent trajectory", steps),
        section("agent final answer", clip(view.output) or "(none)"),
    ]
    reference = _reference(context, expectations) if config.reference == "auto" else None
    if reference is not None:
        parts.append(reference)
    if config.reference == "auto" and context.reference_output is not None:
        parts.append(section("reference answer", render_value(context.reference_output)))
    with_reference = judged_with_reference(context, expectations, config)
    criteria = f"\nAlso: {config.criteria}\n" if config.criteria else ""
    system = _SYSTEM.format(reference=_WITH_REFERENCE if with_reference else "",
                            criteria=criteria)
    return chat_request(model, config.temperature, system, "\n\n".join(parts))


def parse_trajectory_judge_response(
    body: Mapping[str, Any], config: TrajectoryJudgeConfig, with_reference: bool
) -> EvaluatorOutput:
    verdict, model = verdict_object(body)
    score = unit_score(verdict)
    reasoning = text_field(verdict, "reasoning")
    return EvaluatorOutput(
        evaluator=NAME,
        score=score,
        passed=score >= config.threshold,
        reason=TrajectoryJudgeReason(reasoning, config.threshold, with_reference, model),
    )


def judged_with_reference(
    context: JudgeContext, expectations: Expectations, config: TrajectoryJudgeConfig
) -> bool:
    return config.reference == "auto" and (
        _reference(context, expectations) is not None or context.reference_output is not None
    )


def _reference(context: JudgeContext, expectations: Expectations) -> str | None:
    if context.reference_trajectory is not None:
        steps, _ = render_steps(parse_trajectory(context.reference_trajectory))
        return section("reference trajectory", steps)
    if expectations.trajectory:
        lines = [
            f"{i}. {step.type} {step.name}"
            + (f"({clip(render_value(step.args))})" if step.args is not None else "")
            for i, step in enumerate(expectations.trajectory, 1)
        ]
        return section("expected steps", "\n".join(lines))
    return None
