"""The evaluators' view of one trajectory document: a projection of `normalizers.document`.

Every evaluator reads trajectories through `parse_trajectory`; the document itself is read (with
its tolerance rules: missing fields, numbers sent as strings, `agent_steps` inside `root_step`)
only by `normalizers.document.parse_document`. This module adds what scoring needs on top: steps
in execution order, tool calls with decoded arguments and the model turn that issued them, model
calls, graph node visits and totals.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from trajhub.normalizers.document import (
    ACTIVATION_TYPES,
    PlacedStep,
    parse_document,
    run_order,
    tool_arguments,
)
from trajhub.normalizers.trajectory import AgentStep, Step, StepError, Trajectory

__all__ = [
    "META_GRAPH_CHECKPOINT_NS",
    "META_GRAPH_NODE",
    "META_GRAPH_STEP",
    "META_TOOL_CALL_ID",
    "STEP_TYPES",
    "AgentView",
    "GraphNode",
    "ModelCall",
    "ToolCall",
    "Totals",
    "TrajectoryView",
    "parse_trajectory",
    "view_of",
]

#: Metadata keys the normalizers write where the schema has no field (docs/trajectory-rules.md §3).
META_TOOL_CALL_ID = "tool_call_id"
META_GRAPH_NODE = "langgraph_node"
META_GRAPH_STEP = "langgraph_step"
META_GRAPH_CHECKPOINT_NS = "langgraph_checkpoint_ns"

STEP_TYPES = ("agent", "graph", "model", "tool")


@dataclass(frozen=True)
class ToolCall:
    """A tool step with its input decoded. `arguments` is the decoded JSON when the input is JSON,
    else the input string as it was."""

    step: Step
    arguments: Any
    #: index of the model turn that issued the call; consecutive calls of one agent sharing a turn
    #: were issued together (parallel calls), which the strict trajectory match needs to know.
    turn: int

    @property
    def name(self) -> str:
        return self.step.name

    @property
    def failed(self) -> bool:
        return self.step.failed

    @property
    def tool_call_id(self) -> str | None:
        return self.step.tool_call_id


@dataclass(frozen=True)
class ModelCall:
    step: Step
    input_tokens: int
    output_tokens: int
    reasoning_tokens: int
    #: the turn this model step opened; the tool calls it issued carry the same number
    turn: int = 0

    @property
    def total_tokens(self) -> int:
        return self.input_tokens + self.output_tokens


@dataclass(frozen=True)
class GraphNode:
    """One visit of a graph node: from `langgraph_node` metadata, or a step of type graph."""

    name: str
    graph_step: str  # the langgraph_step counter when known, else ""


@dataclass(frozen=True)
class AgentView:
    id: str
    name: str
    parent_id: str
    input: str
    output: str
    error: StepError | None
    steps: tuple[Step, ...]
    tool_calls: tuple[ToolCall, ...]
    model_calls: tuple[ModelCall, ...]

    @property
    def failed(self) -> bool:
        return self.error is not None

    def tool_names(self) -> tuple[str, ...]:
        """Distinct tool names in first-call order (seed 001's collector, docs/evaluators.md)."""
        return tuple(dict.fromkeys(call.name for call in self.tool_calls))


@dataclass(frozen=True)
class Totals:
    steps: int
    tool_calls: int
    model_calls: int
    input_tokens: int
    output_tokens: int
    duration_ms: int | None
    failed_steps: int
    failed_tool_calls: int

    @property
    def total_tokens(self) -> int:
        return self.input_tokens + self.output_tokens

    @property
    def tool_error_rate(self) -> float:
        return self.failed_tool_calls / self.tool_calls if self.tool_calls else 0.0


@dataclass(frozen=True)
class TrajectoryView:
    id: str
    name: str
    input: str
    output: str
    error: StepError | None
    #: agent entries in execution order: a nested agent comes right where its parent invoked it
    agents: tuple[AgentView, ...]
    #: every step once, in execution order (a sub-agent's steps follow the step that invoked it)
    steps: tuple[Step, ...]
    #: the same steps, each with its agent activation and agent path
    placed: tuple[PlacedStep, ...]
    tool_calls: tuple[ToolCall, ...]
    model_calls: tuple[ModelCall, ...]
    graph_nodes: tuple[GraphNode, ...]
    totals: Totals

    def agent_names(self) -> tuple[str, ...]:
        """Distinct agent names in order of first appearance."""
        return tuple(dict.fromkeys(agent.name for agent in self.agents))

    def tools_by_agent(self) -> dict[str, tuple[str, ...]]:
        """Distinct tool names per agent name, merging entries that share a name."""
        merged: dict[str, dict[str, None]] = {}
        for agent in self.agents:
            bucket = merged.setdefault(agent.name, {})
            for tool in agent.tool_names():
                bucket[tool] = None
        return {name: tuple(tools) for name, tools in merged.items()}


def parse_trajectory(doc: object) -> TrajectoryView:
    """Read a trajectory document (trajectory.schema.json) into a TrajectoryView.

    Never raises: a trajectory of a crashed run is exactly what an evaluator must still be able
    to score (`normalizers.document` says how odd values read)."""
    return view_of(parse_document(doc))


def view_of(trajectory: Trajectory) -> TrajectoryView:
    """The view of an already parsed trajectory.

    Numbers model turns: a tool call belongs to the turn of the model step before it, and
    entering or leaving an agent activation (or passing an agent/graph step) starts a new turn,
    so calls of two agents never share one."""
    order = run_order(trajectory)
    tool_calls: list[ToolCall] = []
    model_calls: list[ModelCall] = []
    calls_by_agent: dict[int, list[ToolCall]] = {}
    models_by_agent: dict[int, list[ModelCall]] = {}
    turn = 0
    previous: PlacedStep | None = None
    for placed in order.steps:
        step, owner = placed.step, id(placed.agent)
        if (previous is None or previous.agent is not placed.agent
                or previous.step.type in ACTIVATION_TYPES):
            turn += 1
        if step.type == "model":
            turn += 1
            info = step.model_info
            model = ModelCall(
                step=step,
                input_tokens=info.input_tokens if info is not None else 0,
                output_tokens=info.output_tokens if info is not None else 0,
                reasoning_tokens=info.reasoning_tokens if info is not None else 0,
                turn=turn,
            )
            model_calls.append(model)
            models_by_agent.setdefault(owner, []).append(model)
        elif step.type == "tool":
            call = ToolCall(step, tool_arguments(step), turn)
            tool_calls.append(call)
            calls_by_agent.setdefault(owner, []).append(call)
        previous = placed
    agents = tuple(
        _agent_view(agent, calls_by_agent.get(id(agent), ()), models_by_agent.get(id(agent), ()))
        for agent in order.agents
    )
    root = trajectory.root_step
    steps = tuple(placed.step for placed in order.steps)
    totals = Totals(
        steps=len(steps),
        tool_calls=len(tool_calls),
        model_calls=len(model_calls),
        input_tokens=_tokens(model_calls, root.metrics_info.input_tokens, "input"),
        output_tokens=_tokens(model_calls, root.metrics_info.output_tokens, "output"),
        duration_ms=_first_known(root.basic_info.duration_ms, _span_ms(steps)),
        failed_steps=sum(1 for step in steps if step.failed),
        failed_tool_calls=sum(1 for call in tool_calls if call.failed),
    )
    return TrajectoryView(
        id=trajectory.id,
        name=root.name,
        input=root.input,
        output=root.output,
        error=root.basic_info.error,
        agents=agents,
        steps=steps,
        placed=order.steps,
        tool_calls=tuple(tool_calls),
        model_calls=tuple(model_calls),
        graph_nodes=_graph_nodes(steps),
        totals=totals,
    )


def _agent_view(agent: AgentStep, calls: Sequence[ToolCall],
                models: Sequence[ModelCall]) -> AgentView:
    return AgentView(
        id=agent.id,
        name=agent.name,
        parent_id=agent.parent_id,
        input=agent.input,
        output=agent.output,
        error=agent.basic_info.error,
        steps=tuple(agent.steps),
        tool_calls=tuple(calls),
        model_calls=tuple(models),
    )


def _graph_nodes(steps: Sequence[Step]) -> tuple[GraphNode, ...]:
    """Node visits in order. LangGraph node spans are dropped from trajectories (they are
    `other`), but the steps they contained keep `langgraph_node`/`langgraph_step` metadata, so a
    visit is a run of steps with the same (node, step counter). Without that metadata the graph
    level falls back to the steps of type graph."""
    visits: list[GraphNode] = []
    for step in steps:
        node = step.metadata.get(META_GRAPH_NODE, "")
        if not node:
            continue
        visit = GraphNode(node, step.metadata.get(META_GRAPH_STEP, ""))
        if not visits or visits[-1] != visit:
            visits.append(visit)
    if visits:
        return tuple(visits)
    return tuple(GraphNode(step.name, "") for step in steps if step.type == "graph")


def _tokens(model_calls: Sequence[ModelCall], root_total: int, side: str) -> int:
    """Sum over model steps; when no model step reports usage, fall back to the root's metrics
    (trajectories whose model steps lack model_info still carry the aggregate)."""
    if any(call.total_tokens for call in model_calls):
        if side == "input":
            return sum(call.input_tokens for call in model_calls)
        return sum(call.output_tokens for call in model_calls)
    return root_total


def _span_ms(steps: Sequence[Step]) -> int | None:
    timed = [(start, duration) for s in steps
             if (start := s.started_at_ms) is not None and (duration := s.duration_ms) is not None]
    if not timed:
        return None
    return max(start + duration for start, duration in timed) - min(start for start, _ in timed)


def _first_known(*values: int | None) -> int | None:
    return next((v for v in values if v is not None), None)
