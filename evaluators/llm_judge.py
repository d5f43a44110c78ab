"""The pure halves of the LLM-as-judge evaluator: build the request, parse the answer.

The service sends the request (any OpenAI-compatible chat.completions endpoint) and hands the
response body back to `parse_judge_response`. Parsing is strict on purpose: a judge that answers
in prose, truncates, refuses or puts the score out of range is a *failed evaluation*
(JudgeResponseError), never a pass — otherwise a broken judge would quietly approve everything.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from trajhub.evaluators.agentevals_format import to_agentevals_messages
from trajhub.evaluators.expectations import Expectations
from trajhub.evaluators.judge_protocol import JudgeResponseError as JudgeResponseError
from trajhub.evaluators.judge_protocol import unit_score, verdict_object
from trajhub.evaluators.result import EvaluatorOutput
from trajhub.normalizers.item_fields import final_answer

NAME = "llm_judge"

#: After agentevals' TRAJECTORY_ACCURACY_PROMPT(_WITH_REFERENCE) rubric (docs/evaluators.md §a3).
DEFAULT_RUBRIC = (
    "Grade the agent's trajectory: the sequence of its messages, tool calls and tool results.\n"
    "- The steps make logical sense and progress clearly toward the user's goal.\n"
    "- The trajectory is reasonably efficient: no needless, repeated or failed-and-ignored calls.\n"
    "- The agent used the right tools with sensible arguments.\n"
    "- When a reference output or expectations are given, the trajectory and its final answer are"
    " semantically equivalent to them; they need not be identical."
)

_SYSTEM = (
    "You are an expert evaluator of LLM agent trajectories.\n\n"
    "{rubric}\n\n"
    "Respond with one JSON object and nothing else, exactly of the form\n"
    '{"score": <number from 0 to 1>, "passed": <true or false>, "reason": "<one paragraph>"}'
)


@dataclass(frozen=True)
class JudgeReason:
    text: str
    model: str

    def explain_lines(self) -> list[str]:
        suffix = f" (judge: {self.model})" if self.model else ""
        return [self.text + suffix]


def build_judge_request(
    trajectory_doc: Mapping[str, Any],
    item_input: Any,
    reference_output: Any,
    expectations: Expectations | None,
    model: str,
    rubric: str | None = None,
) -> dict[str, Any]:
    """An OpenAI-compatible chat.completions request body asking for a strict JSON verdict."""
    if not model:
        raise ValueError(f"{NAME}: model must be a non-empty string")
    sections = [
        ("Input", item_input),
        ("Agent trajectory (OpenAI messages)", to_agentevals_messages(trajectory_doc)),
        # the run's answer apart from the reference: the judge compares the two, not a run
        # with itself
        ("Agent's final answer", final_answer(trajectory_doc)),
    ]
    if reference_output is not None:
        sections.append(("Reference output", reference_output))
    if expectations is not None:
        sections.append(("Expectations", expectations.to_dict()))
    user = "\n\n".join(f"<{title}>\n{_render(value)}\n</{title}>" for title, value in sections)
    return {
        "model": model,
        "temperature": 0,
        "response_format": {"type": "json_object"},
        "messages": [
            {"role": "system", "content": _SYSTEM.replace("{rubric}", rubric or DEFAULT_RUBRIC)},
            {"role": "user", "content": user},
        ],
    }


def parse_judge_response(body: Mapping[str, Any]) -> EvaluatorOutput:
    """The verdict in a chat.completions response body; JudgeResponseError if it is not exactly
    one JSON object with a number `score` in [0, 1], a boolean `passed` and a string `reason`."""
    verdict, model = verdict_object(body)
    score = unit_score(verdict)
    passed = verdict.get("passed")
    if not isinstance(passed, bool):
        raise JudgeResponseError("verdict field 'passed' must be a boolean")
    reason = verdict.get("reason")
    if not isinstance(reason, str):
        raise JudgeResponseError("verdict field 'reason' must be a string")
    return EvaluatorOutput(
        evaluator=NAME,
        score=score,
        passed=passed,
        reason=JudgeReason(text=reason, model=model),
    )


def _render(value: Any) -> str:
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False, indent=2, default=str)
