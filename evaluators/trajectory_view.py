"""A typed, read-only view of one trajectory document.

Every evaluator reads trajectories through `parse_trajectory`, so the tolerance rules (missing
fields, numbers sent as strings, `agent_steps` at the top level as the schema says or inside
`root_step` as the product spec's example has it) live in exactly one place.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

#: Metadata keys the normalizers write for what the schema has no field for (trajectory-rules 3).
META_TOOL_CALL_ID = "tool_call_id"
META_GRAPH_NODE = "langgraph_node"
META_GRAPH_STEP = "langgraph_step"
META_GRAPH_CHECKPOINT_NS = "langgraph_checkpoint_ns"

STEP_TYPES = ("agent", "graph", "model", "tool")


@dataclass(frozen=True)
class ViewStepError:
    code: int
    msg: str


@dataclass(frozen=True)
class ViewStep:
    """One atomic step of an agent entry, whatever its type."""

    id: str
    type: str
    name: str
    input: str
    output: str
    agent: str  # name of the agent entry that owns the step
    agent_id: str
    started_at_ms: int | None
    duration_ms: int | None
    error: ViewStepError | None
    metadata: Mapping[str, str] = field(default_factory=dict)

    @property
    def failed(self) -> bool:
        return self.error is not None


@dataclass(frozen=True)
class ToolCall:
    """A tool step with its input decoded. `arguments` is the decoded JSON when the input is JSON,
    else the input string as it was."""

    step: ViewStep
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
        return self.step.metadata.get(META_TOOL_CALL_ID) or None


@dataclass(frozen=True)
class ModelCall:
    step: ViewStep
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
    error: ViewStepError | None
    steps: tuple[ViewStep, ...]
    tool_calls: tuple[ToolCall, ...]
    model_calls: tuple[ModelCall, ...]

    @property
    def failed(self) -> bool:
        return self.error is not None

    def tool_names(self) -> tuple[str, ...]:
        """Distinct tool names in order of first call (what seed 001's collector records)."""
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
    error: ViewStepError | None
    #: agent entries in execution order: a nested agent comes right where its parent invoked it
    agents: tuple[AgentView, ...]
    #: every step once, in execution order (a sub-agent's steps follow the step that invoked it)
    steps: tuple[ViewStep, ...]
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


def decode_arguments(raw: str) -> Any:
    """Tool input is the JSON of its arguments; anything that is not JSON stays a string."""
    text = raw.strip()
    if not text:
        return raw
    try:
        return json.loads(text)
    except ValueError:
        return raw


def parse_trajectory(doc: Mapping[str, Any]) -> TrajectoryView:
    """Read a trajectory document (trajectory.schema.json) into a TrajectoryView.

    Never raises on missing or ill-typed optional fields: a trajectory of a crashed run is
    exactly what an evaluator must still be able to score.
    """
    root = _mapping(doc.get("root_step"))
    entries = [_mapping(e) for e in _sequence(doc.get("agent_steps"))]
    if not entries:
        entries = [_mapping(e) for e in _sequence(root.get("agent_steps"))]

    walk = _Walk([_agent_view(entry) for entry in entries])
    agents = tuple(
        _with_calls(
            walk.views[index],
            tuple(walk.calls_by_agent.get(index, ())),
            tuple(walk.models_by_agent.get(index, ())),
        )
        for index in walk.order
    )
    model_calls = tuple(walk.model_calls)
    tool_calls = tuple(walk.tool_calls)
    info = _mapping(root.get("basic_info"))
    steps = walk.steps
    totals = Totals(
        steps=len(steps),
        tool_calls=len(tool_calls),
        model_calls=len(model_calls),
        input_tokens=_tokens(model_calls, root, "input_tokens"),
        output_tokens=_tokens(model_calls, root, "output_tokens"),
        duration_ms=_first_known(_int(info.get("duration")), _span_ms(steps)),
        failed_steps=sum(1 for step in steps if step.failed),
        failed_tool_calls=sum(1 for call in tool_calls if call.failed),
    )
    return TrajectoryView(
        id=_str(doc.get("id")),
        name=_str(root.get("name")),
        input=_str(root.get("input")),
        output=_str(root.get("output")),
        error=_error(info),
        agents=agents,
        steps=tuple(steps),
        tool_calls=tool_calls,
        model_calls=model_calls,
        graph_nodes=_graph_nodes(steps),
        totals=totals,
    )


class _Walk:
    """Visit agent entries in execution order. `agent_steps` is in start order, which would put a
    sub-agent's tool calls after its parent's later steps; instead each entry is expanded at the
    step of type agent/graph that invoked it (same span id), depth first.

    Also numbers model turns: a tool call belongs to the turn of the model step before it, and
    entering or leaving an agent starts a new turn, so calls of two agents never share one.
    """

    def __init__(self, views: list[AgentView]) -> None:
        self.views = views
        self._by_id: dict[str, int] = {}
        for index, view in enumerate(views):
            if view.id:
                self._by_id.setdefault(view.id, index)
        invoked = {
            self._by_id[step.id]
            for view in views
            for step in view.steps
            if step.type in ("agent", "graph") and step.id in self._by_id
        }
        self._seen: set[int] = set()
        self._turn = 0
        self.order: list[int] = []
        self.calls_by_agent: dict[int, list[ToolCall]] = {}
        self.model_calls: list[ModelCall] = []
        self.models_by_agent: dict[int, list[ModelCall]] = {}
        self.steps: list[ViewStep] = []
        self.tool_calls: list[ToolCall] = []
        for index in range(len(views)):
            if index not in invoked:
                self._visit(index)
        for index in range(len(views)):  # entries reachable only through a cycle
            self._visit(index)

    def _visit(self, index: int) -> None:
        if index in self._seen:
            return
        self._seen.add(index)
        view = self.views[index]
        self.order.append(index)
        self._turn += 1
        models = iter(view.model_calls)
        for step in view.steps:
            self.steps.append(step)
            if step.type == "model":
                self._turn += 1
                model = replace(next(models), turn=self._turn)
                self.model_calls.append(model)
                self.models_by_agent.setdefault(index, []).append(model)
            elif step.type == "tool":
                call = ToolCall(step, decode_arguments(step.input), self._turn)
                self.tool_calls.append(call)
                self.calls_by_agent.setdefault(index, []).append(call)
            elif step.type in ("agent", "graph"):
                child = self._by_id.get(step.id)
                if child is not None and child != index:
                    self._visit(child)
                self._turn += 1


def _with_calls(
    agent: AgentView, calls: tuple[ToolCall, ...], models: tuple[ModelCall, ...]
) -> AgentView:
    return AgentView(
        id=agent.id,
        name=agent.name,
        parent_id=agent.parent_id,
        input=agent.input,
        output=agent.output,
        error=agent.error,
        steps=agent.steps,
        tool_calls=calls,
        model_calls=models,
    )


def _agent_view(entry: Mapping[str, Any]) -> AgentView:
    name = _str(entry.get("name"))
    entry_id = _str(entry.get("id"))
    steps = tuple(_step(_mapping(raw), name, entry_id) for raw in _sequence(entry.get("steps")))
    models = tuple(
        ModelCall(
            step=step,
            input_tokens=_int(info.get("input_tokens")) or 0,
            output_tokens=_int(info.get("output_tokens")) or 0,
            reasoning_tokens=_int(info.get("reasoning_tokens")) or 0,
        )
        for step, raw in zip(steps, map(_mapping, _sequence(entry.get("steps"))), strict=True)
        if step.type == "model"
        for info in (_mapping(raw.get("model_info")),)
    )
    return AgentView(
        id=entry_id,
        name=name,
        parent_id=_str(entry.get("parent_id")),
        input=_str(entry.get("input")),
        output=_str(entry.get("output")),
        error=_error(_mapping(entry.get("basic_info"))),
        steps=steps,
        tool_calls=(),  # filled by parse_trajectory, which numbers the turns
        model_calls=models,
    )


def _step(raw: Mapping[str, Any], agent: str, agent_id: str) -> ViewStep:
    info = _mapping(raw.get("basic_info"))
    metadata = {
        str(key): value if isinstance(value, str) else json.dumps(value)
        for key, value in _mapping(raw.get("metadata")).items()
    }
    return ViewStep(
        id=_str(raw.get("id")),
        type=_str(raw.get("type")).lower(),
        name=_str(raw.get("name")),
        input=_str(raw.get("input")),
        output=_str(raw.get("output")),
        agent=agent,
        agent_id=agent_id,
        started_at_ms=_int(info.get("started_at")),
        duration_ms=_int(info.get("duration")),
        error=_error(info),
        metadata=metadata,
    )


def _graph_nodes(steps: Sequence[ViewStep]) -> tuple[GraphNode, ...]:
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


def _tokens(model_calls: Sequence[ModelCall], root: Mapping[str, Any], key: str) -> int:
    """Sum over model steps; when no model step reports usage, fall back to the root's metrics
    (trajectories whose model steps lack model_info still carry the aggregate)."""
    if any(call.total_tokens for call in model_calls):
        if key == "input_tokens":
            return sum(call.input_tokens for call in model_calls)
        return sum(call.output_tokens for call in model_calls)
    return _int(_mapping(root.get("metrics_info")).get(key)) or 0


def _span_ms(steps: Sequence[ViewStep]) -> int | None:
    timed = [s for s in steps if s.started_at_ms is not None and s.duration_ms is not None]
    if not timed:
        return None
    start = min(s.started_at_ms or 0 for s in timed)
    end = max((s.started_at_ms or 0) + (s.duration_ms or 0) for s in timed)
    return end - start


def _first_known(*values: int | None) -> int | None:
    return next((v for v in values if v is not None), None)


def _error(info: Mapping[str, Any]) -> ViewStepError | None:
    raw = info.get("error")
    if not isinstance(raw, Mapping):
        return None
    code = _int(raw.get("code"))
    return ViewStepError(code=-1 if code is None else code, msg=_str(raw.get("msg")))


def _mapping(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _sequence(value: Any) -> Sequence[Any]:
    return value if isinstance(value, list | tuple) else ()


def _str(value: Any) -> str:
    if value is None:
        return ""
    return value if isinstance(value, str) else str(value)


def _int(value: Any) -> int | None:
    """Durations and timestamps are strings of whole milliseconds in the schema; accept numbers."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, float):
        return _finite_int(value)
    if isinstance(value, str):
        try:
            return int(value.strip())
        except ValueError:
            pass
        try:
            return _finite_int(float(value.strip()))
        except ValueError:
            return None
    return None


def _finite_int(value: float) -> int | None:
    if not math.isfinite(value):
        return None
    return int(value)
