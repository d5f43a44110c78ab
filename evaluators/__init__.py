"""Pure scoring of trajectories against expectations.

Every evaluator is a pure function `(trajectory_doc, expectations, config) -> EvaluatorOutput`:
no I/O, no clock, no randomness, so a score can always be recomputed from stored data. The LLM
judges (JUDGES) are split into request building and strict response parsing; their HTTP call
belongs to the service, which is why they are not in REGISTRY.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from trajhub.evaluators._config import ConfigError
from trajhub.evaluators.agentevals_format import to_agentevals_messages
from trajhub.evaluators.efficiency import EfficiencyConfig, efficiency
from trajhub.evaluators.expectations import (
    Expectations,
    ExpectationsError,
    ExpectedStep,
    expectations_from_trajectory,
)
from trajhub.evaluators.expected_agents_tools import (
    ExpectedAgentsToolsConfig,
    expected_agents_tools,
)
from trajhub.evaluators.graph_runs import graph_runs
from trajhub.evaluators.graph_trajectory_match import (
    GraphTrajectoryMatchConfig,
    graph_trajectory_match,
)
from trajhub.evaluators.judge_protocol import JudgeContext, JudgeSettings
from trajhub.evaluators.judges import JUDGES, JudgeSpec, LlmJudgeConfig
from trajhub.evaluators.llm_judge import (
    JudgeResponseError,
    build_judge_request,
    parse_judge_response,
)
from trajhub.evaluators.result import EvaluatorOutput
from trajhub.evaluators.tool_call_accuracy import ToolCallAccuracyConfig, tool_call_accuracy
from trajhub.evaluators.trajectory_match import TrajectoryMatchConfig, trajectory_match
from trajhub.evaluators.trajectory_view import TrajectoryView, parse_trajectory

__all__ = [
    "JUDGES",
    "REGISTRY",
    "ConfigError",
    "EfficiencyConfig",
    "EvaluatorOutput",
    "EvaluatorSpec",
    "Expectations",
    "ExpectationsError",
    "ExpectedAgentsToolsConfig",
    "ExpectedStep",
    "GraphTrajectoryMatchConfig",
    "JudgeContext",
    "JudgeResponseError",
    "JudgeSettings",
    "JudgeSpec",
    "LlmJudgeConfig",
    "ToolCallAccuracyConfig",
    "TrajectoryMatchConfig",
    "TrajectoryView",
    "build_judge_request",
    "evaluate",
    "expectations_from_trajectory",
    "graph_runs",
    "parse_judge_response",
    "parse_trajectory",
    "to_agentevals_messages",
]


@dataclass(frozen=True)
class EvaluatorSpec:
    """One registered evaluator: its config type (parsed from JSON options) and its function."""

    name: str
    config_from_dict: Callable[[Mapping[str, Any] | None], Any]
    run: Callable[[Mapping[str, Any], Expectations, Any], EvaluatorOutput]


REGISTRY: Mapping[str, EvaluatorSpec] = {
    spec.name: spec
    for spec in (
        EvaluatorSpec(
            "expected_agents_tools",
            ExpectedAgentsToolsConfig.from_dict,
            expected_agents_tools,
        ),
        EvaluatorSpec("tool_call_accuracy", ToolCallAccuracyConfig.from_dict, tool_call_accuracy),
        EvaluatorSpec("trajectory_match", TrajectoryMatchConfig.from_dict, trajectory_match),
        EvaluatorSpec("efficiency", EfficiencyConfig.from_dict, efficiency),
        EvaluatorSpec(
            "graph_trajectory_match",
            GraphTrajectoryMatchConfig.from_dict,
            graph_trajectory_match,
        ),
    )
}

_CONFIG_TYPES: Mapping[str, type] = {
    "expected_agents_tools": ExpectedAgentsToolsConfig,
    "tool_call_accuracy": ToolCallAccuracyConfig,
    "trajectory_match": TrajectoryMatchConfig,
    "efficiency": EfficiencyConfig,
    "graph_trajectory_match": GraphTrajectoryMatchConfig,
}


def evaluate(
    name: str,
    doc: Mapping[str, Any],
    expectations: Expectations | Mapping[str, Any] | None,
    config: Mapping[str, Any] | object | None = None,
) -> EvaluatorOutput:
    """Run evaluator `name`. `expectations` may be an Expectations or its JSON form; `config` the
    evaluator's config dataclass or its JSON options. Unknown evaluator or option -> ConfigError
    (a ValueError) naming it."""
    spec = REGISTRY.get(name)
    if spec is None:
        raise ConfigError(f"unknown evaluator {name!r} (known: {', '.join(sorted(REGISTRY))})")
    if expectations is None:
        expectations = Expectations()
    elif not isinstance(expectations, Expectations):
        expectations = Expectations.from_dict(expectations)
    if config is None or isinstance(config, Mapping):
        parsed = spec.config_from_dict(config)
    elif isinstance(config, _CONFIG_TYPES[name]):
        parsed = config
    else:
        raise ConfigError(f"{name}: config must be {_CONFIG_TYPES[name].__name__} or an object")
    return spec.run(doc, expectations, parsed)
