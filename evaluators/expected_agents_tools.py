"""Seed 001's agent evaluator: were the expected agents and tools called, and nothing else?

Same semantics as its `evaluate` (docs/evaluators.md): agents and tools are compared as sets of
names (the seed's collector de-duplicates them); an agent missing from `expected.tools` expects no
tools, so every tool it called is extra. The seed has no score; ours is the mean of its two
verdicts (agent match, tool match) so that "right agents, wrong tools" ranks above "everything
wrong".
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from trajhub.evaluators._config import Options
from trajhub.evaluators.expectations import Expectations
from trajhub.evaluators.result import EvaluatorOutput, join_or_none
from trajhub.evaluators.trajectory_view import parse_trajectory

NAME = "expected_agents_tools"


@dataclass(frozen=True)
class ExpectedAgentsToolsConfig(Options):
    """No options: the expectations say everything. Kept so every evaluator has a config type."""

    EVALUATOR = NAME



@dataclass(frozen=True)
class AgentTool:
    agent: str
    tool: str

    def __str__(self) -> str:
        return f"{self.agent}.{self.tool}"


@dataclass(frozen=True)
class AgentsToolsReason:
    expected_agents: tuple[str, ...]
    actual_agents: tuple[str, ...]
    missed_agents: tuple[str, ...]
    extra_agents: tuple[str, ...]
    expected_tools: Mapping[str, tuple[str, ...]]
    actual_tools: Mapping[str, tuple[str, ...]]
    missed_tools: tuple[AgentTool, ...]
    extra_tools: tuple[AgentTool, ...]
    agent_match: bool
    tool_match: bool

    def explain_lines(self) -> list[str]:
        # Mirrors seed 001's formatResult line for line.
        lines = [_verdict("agents", self.agent_match)]
        if not self.agent_match:
            lines.append(f"   expected: {join_or_none(self.expected_agents)}")
            lines.append(f"   actual: {join_or_none(self.actual_agents)}")
            lines += _differences(self.missed_agents, self.extra_agents)
        lines.append(_verdict("tools", self.tool_match))
        if not self.tool_match:
            lines += _differences(self.missed_tools, self.extra_tools)
        return lines


def _verdict(what: str, right: bool) -> str:
    return f"✅ {what} called correctly" if right else f"❌ {what} called incorrectly"


def _differences(missed: Sequence[object], extra: Sequence[object]) -> list[str]:
    """The seed's `missed:` and `extra:` lines, each only when it lists something."""
    return [f"   {label}: {', '.join(map(str, names))}"
            for label, names in (("missed", missed), ("extra", extra)) if names]


def expected_agents_tools(
    doc: Mapping[str, Any],
    expectations: Expectations,
    config: ExpectedAgentsToolsConfig | None = None,
) -> EvaluatorOutput:
    view = parse_trajectory(doc)
    actual_agents = view.agent_names()
    actual_tools = view.tools_by_agent()
    expected_agents = expectations.agents
    expected_tools = expectations.tools

    missed_agents = tuple(a for a in expected_agents if a not in actual_agents)
    extra_agents = tuple(a for a in actual_agents if a not in expected_agents)
    agent_match = not missed_agents and not extra_agents

    missed_tools = tuple(
        AgentTool(agent, tool)
        for agent, tools in expected_tools.items()
        for tool in tools
        if tool not in actual_tools.get(agent, ())
    )
    extra_tools = tuple(
        AgentTool(agent, tool)
        for agent, tools in actual_tools.items()
        for tool in tools
        if tool not in expected_tools.get(agent, ())
    )
    tool_match = not missed_tools and not extra_tools

    reason = AgentsToolsReason(
        expected_agents=expected_agents,
        actual_agents=actual_agents,
        missed_agents=missed_agents,
        extra_agents=extra_agents,
        expected_tools=dict(expected_tools),
        actual_tools=actual_tools,
        missed_tools=missed_tools,
        extra_tools=extra_tools,
        agent_match=agent_match,
        tool_match=tool_match,
    )
    return EvaluatorOutput(
        evaluator=NAME,
        score=(int(agent_match) + int(tool_match)) / 2,
        passed=agent_match and tool_match,
        reason=reason,
    )
