"""The LLM judges, each as a pair of pure halves the service calls around its HTTP request:
`build_request` (the chat.completions body) and `parse_response` (the verdict, or a
JudgeResponseError). They are not in REGISTRY because they need that request.

- `llm_judge`: the original rubric judge (llm_judge.py), pass/fail from the judge itself;
- `trajectory_judge`: graded trajectory judge, with or without a reference;
- `tool_choice_judge`: was each tool call appropriate; score = fraction appropriate.

Every judge takes the same connection options (judge_protocol.JudgeSettings): model,
temperature, endpoint, api_key_env.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from trajhub.evaluators._config import require_type
from trajhub.evaluators.expectations import Expectations
from trajhub.evaluators.judge_protocol import JudgeContext, JudgeOptions
from trajhub.evaluators.llm_judge import build_judge_request, parse_judge_response
from trajhub.evaluators.result import EvaluatorOutput
from trajhub.evaluators.tool_choice_judge import (
    ToolChoiceJudgeConfig,
    build_tool_choice_request,
    parse_tool_choice_response,
)
from trajhub.evaluators.trajectory_judge import (
    TrajectoryJudgeConfig,
    build_trajectory_judge_request,
    judged_with_reference,
    parse_trajectory_judge_response,
)

LLM_JUDGE = "llm_judge"


@dataclass(frozen=True)
class LlmJudgeConfig(JudgeOptions):
    EVALUATOR = LLM_JUDGE

    rubric: str | None = None

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.rubric is not None:
            require_type(LLM_JUDGE, "rubric", self.rubric, str)


Doc = Mapping[str, Any]


@dataclass(frozen=True)
class JudgeSpec:
    name: str
    config_from_dict: Callable[[Mapping[str, Any] | None], Any]
    #: (trajectory, context, expectations, config, model) -> request body
    build_request: Callable[[Doc, JudgeContext, Expectations, Any, str], dict[str, Any]]
    #: (response body, trajectory, context, expectations, config) -> result
    parse_response: Callable[[Doc, Doc, JudgeContext, Expectations, Any], EvaluatorOutput]


def _llm_request(doc: Doc, context: JudgeContext, expectations: Expectations,
                 config: LlmJudgeConfig, model: str) -> dict[str, Any]:
    body = build_judge_request(doc, context.input, context.reference_output, expectations,
                               model, config.rubric)
    body["temperature"] = config.temperature
    return body


def _llm_parse(body: Doc, doc: Doc, context: JudgeContext, expectations: Expectations,
               config: LlmJudgeConfig) -> EvaluatorOutput:
    return parse_judge_response(body)


def _trajectory_parse(body: Doc, doc: Doc, context: JudgeContext, expectations: Expectations,
                      config: TrajectoryJudgeConfig) -> EvaluatorOutput:
    with_reference = judged_with_reference(context, expectations, config)
    return parse_trajectory_judge_response(body, config, with_reference)


def _tool_choice_request(doc: Doc, context: JudgeContext, expectations: Expectations,
                         config: ToolChoiceJudgeConfig, model: str) -> dict[str, Any]:
    return build_tool_choice_request(doc, context, config, model)


def _tool_choice_parse(body: Doc, doc: Doc, context: JudgeContext, expectations: Expectations,
                       config: ToolChoiceJudgeConfig) -> EvaluatorOutput:
    return parse_tool_choice_response(body, doc, config)


JUDGES: Mapping[str, JudgeSpec] = {
    spec.name: spec
    for spec in (
        JudgeSpec(LLM_JUDGE, LlmJudgeConfig.from_dict, _llm_request, _llm_parse),
        JudgeSpec("trajectory_judge", TrajectoryJudgeConfig.from_dict,
                  build_trajectory_judge_request, _trajectory_parse),
        JudgeSpec("tool_choice_judge", ToolChoiceJudgeConfig.from_dict, _tool_choice_request,
                  _tool_choice_parse),
    )
}
