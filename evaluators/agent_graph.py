"""The agent graph of a trajectory, and of many: who ran, what ran after what, and how often.

Pure: a trajectory document in (read by `normalizers.document.parse_document`, the one reader of
the document), nodes and edges out. `service/api/graph.py` only loads documents and calls this;
`layout` places the result with igraph's Sugiyama layout so the web UI only draws it.
docs/agent-graph.md describes what the graph shows; the words below are the ones it uses.

Nodes:

- an **agent node** per agent (or graph) name: every activation of that name
  (docs/trajectory-rules.md §7: a sub-agent run as a graph node, a swarm member, an agent run
  inside a tool, each `Send` of a sub-agent) is one visit of it;
- a **step node** per (agent, label) for the model and tool steps an agent ran itself. The label
  is the LangGraph node the step ran in (`metadata.langgraph_node`, §3) where the
  instrumentation recorded it, else `model` for a model step and the tool's name for a tool
  step. Model and tool steps of one LangGraph task (same `langgraph_checkpoint_ns`) are one
  visit.

Edges, within each activation, over its visits in order (a visit is a run of its step node, or
a sub-agent activation started from it):

- `enter`: the agent node to the first visit(s) of each of its activations;
- `transition`: each visit to the next one;
- `handoff`: a transition to a sub-agent the previous visit handed the run to (a tool step with
  `metadata.handoff_to` naming it, §7: supervisor and swarm hand-offs);
- `tool`: from the step node of a tool to the agent run inside that tool call (the agent step's
  parent is the tool step).

Parallel branches: visits of one activation in the same LangGraph super-step
(`metadata.langgraph_step`, e.g. the tool calls of one turn, or sub-agents fanned out with
`Send`), or, where no super-step is recorded, visits whose times overlap or that started in the
same millisecond, form one parallel group; every edge into or out of a group of two or more
is counted in `parallel` as well as in `count`, and so is each visit of a node made in such a
group. A node whose step (or activation) failed counts the visit in `failed`.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from itertools import pairwise

from trajhub.evaluators.trajectory_view import (
    META_GRAPH_CHECKPOINT_NS,
    META_GRAPH_NODE,
    META_GRAPH_STEP,
)
from trajhub.normalizers.document import ACTIVATION_TYPES, parse_document, run_order
from trajhub.normalizers.trajectory import AgentStep, Step, Trajectory

META_HANDOFF_TO = "handoff_to"

#: (kind, agent, label): an agent node is ("agent", name, name)
NodeKey = tuple[str, str, str]
EdgeKey = tuple[NodeKey, NodeKey, str]

#: how many distinct agent paths an aggregate keeps (the most frequent)
MAX_PATHS = 20


@dataclass
class NodeStats:
    visits: int = 0
    failed: int = 0
    parallel: int = 0
    runs: int = 0
    step_ids: list[str] = field(default_factory=list)


@dataclass
class EdgeStats:
    count: int = 0
    parallel: int = 0
    runs: int = 0


@dataclass
class AgentGraph:
    """Nodes and edges keyed by what they are; `runs` trajectories went into it."""

    nodes: dict[NodeKey, NodeStats] = field(default_factory=dict)
    edges: dict[EdgeKey, EdgeStats] = field(default_factory=dict)
    paths: Counter[tuple[str, ...]] = field(default_factory=Counter)
    runs: int = 0

    def node(self, key: NodeKey) -> NodeStats:
        return self.nodes.setdefault(key, NodeStats())

    def edge(self, key: EdgeKey) -> EdgeStats:
        return self.edges.setdefault(key, EdgeStats())


@dataclass
class _Visit:
    key: NodeKey
    steps: list[Step]
    start: int | None
    end: int | None
    superstep: str
    task: str
    #: for a sub-agent visit: the activation it started (None when no entry has that id)
    activation: AgentStep | None = None

    @property
    def failed(self) -> bool:
        if self.activation is not None and self.activation.basic_info.error is not None:
            return True
        return any(step.failed for step in self.steps)


def agent_node(name: str) -> NodeKey:
    return ("agent", name, name)


def step_label(step: Step) -> str:
    """The step node a model or tool step belongs to (module doc)."""
    node = step.metadata.get(META_GRAPH_NODE, "")
    if node:
        return node
    return "model" if step.type == "model" else step.name


def graph_of(document: object) -> AgentGraph:
    """The graph of one trajectory document, with the step ids of every node."""
    graph = AgentGraph()
    add_trajectory(graph, parse_document(document), keep_steps=True)
    return graph


def aggregate(documents: Iterable[object]) -> AgentGraph:
    """The graphs of many trajectory documents summed: counts add up, `runs` says in how many
    trajectories a node or edge occurs, `paths` counts each sequence of agents entered."""
    graph = AgentGraph()
    for document in documents:
        add_trajectory(graph, parse_document(document), keep_steps=False)
    return graph


def add_trajectory(graph: AgentGraph, trajectory: Trajectory, *, keep_steps: bool) -> None:
    """Add one trajectory's nodes and edges to `graph` (module doc)."""
    order = run_order(trajectory)
    by_id = {agent.id: agent for agent in trajectory.agent_steps if agent.id}
    seen_nodes: set[NodeKey] = set()
    seen_edges: set[EdgeKey] = set()

    def count_node(key: NodeKey, failed: bool, parallel: bool, steps: Sequence[Step]) -> None:
        stats = graph.node(key)
        stats.visits += 1
        stats.failed += failed
        stats.parallel += parallel
        if keep_steps:
            stats.step_ids.extend(step.id for step in steps if step.id)
        seen_nodes.add(key)

    def count_edge(key: EdgeKey, parallel: bool) -> None:
        stats = graph.edge(key)
        stats.count += 1
        stats.parallel += parallel
        seen_edges.add(key)

    # the step (of type agent or graph, in its parent's steps) that started each activation
    starters: dict[str, Step] = {}
    for parent in trajectory.agent_steps:
        for step in parent.steps:
            if step.type in ACTIVATION_TYPES and step.id:
                starters.setdefault(step.id, step)

    for agent in order.agents:
        own = agent_node(agent.name)
        # selecting an agent node selects the row that started it and the agent's own steps
        started_by = [starters[agent.id]] if agent.id in starters else []
        count_node(own, agent.basic_info.error is not None, False,
                   [*started_by, *[s for s in agent.steps if s.type not in ACTIVATION_TYPES]])
        visits, in_tool = _visits(agent, by_id)
        groups = _parallel_groups(visits)
        for group in groups:
            for visit in group:
                if visit.activation is None:
                    count_node(visit.key, visit.failed, len(group) > 1, visit.steps)
                elif len(group) > 1:  # a sub-agent counts its visits as an activation (above)
                    graph.node(visit.key).parallel += 1
        if groups:
            for visit in groups[0]:
                count_edge((own, visit.key, "enter"), len(groups[0]) > 1)
        for before, after in pairwise(groups):
            parallel = len(before) > 1 or len(after) > 1
            for a in before:
                for b in after:
                    kind = "handoff" if _hands_off(a, b) else "transition"
                    count_edge((a.key, b.key, kind), parallel)
        for tool_key, child in in_tool:
            count_edge((tool_key, agent_node(child.name), "tool"), False)

    for key in seen_nodes:
        graph.nodes[key].runs += 1
    for edge_key in seen_edges:
        graph.edges[edge_key].runs += 1
    path = tuple(agent.name for agent in order.agents)
    if path:
        graph.paths[path] += 1
    graph.runs += 1


def _visits(agent: AgentStep, by_id: dict[str, AgentStep]
            ) -> tuple[list[_Visit], list[tuple[NodeKey, AgentStep]]]:
    """The activation's visits in order, and the agents run inside one of its tool calls (with
    the step node of that tool)."""
    visits: list[_Visit] = []
    in_tool: list[tuple[NodeKey, AgentStep]] = []
    tool_nodes: dict[str, NodeKey] = {}
    for step in agent.steps:
        metadata = step.metadata
        start = step.started_at_ms
        duration = step.duration_ms
        end = start + duration if start is not None and duration is not None else start
        if step.type in ACTIVATION_TYPES:
            child = by_id.get(step.id)
            if step.parent_id in tool_nodes:
                if child is not None:
                    in_tool.append((tool_nodes[step.parent_id], child))
                continue
            visits.append(_Visit(agent_node(step.name), [step], start, end,
                                 metadata.get(META_GRAPH_STEP, ""),
                                 metadata.get(META_GRAPH_CHECKPOINT_NS, ""), child))
            continue
        key: NodeKey = ("step", agent.name, step_label(step))
        task = metadata.get(META_GRAPH_CHECKPOINT_NS, "")
        last = visits[-1] if visits else None
        if (task and last is not None and last.activation is None and last.task == task
                and last.key == key):
            last.steps.append(step)
            if end is not None and (last.end is None or end > last.end):
                last.end = end
        else:
            visits.append(_Visit(key, [step], start, end, metadata.get(META_GRAPH_STEP, ""),
                                 task))
        if step.type == "tool" and step.id:
            tool_nodes[step.id] = key
    return visits, in_tool


def _parallel_groups(visits: list[_Visit]) -> list[list[_Visit]]:
    """Consecutive visits that ran side by side: the same recorded super-step, else (neither
    records one) overlapping times."""
    groups: list[list[_Visit]] = []
    group_end: int | None = None
    for visit in visits:
        if groups:
            last = groups[-1][-1]
            if last.superstep or visit.superstep:
                # one super-step, different tasks (one task's steps are one after the other)
                together = last.superstep == visit.superstep and not (
                    last.task and last.task == visit.task)
            else:
                # started before the group ended, or in the same millisecond as the previous
                # visit (Eino starts parallel tool calls together; a 0 ms one has ended)
                together = visit.start is not None and (
                    (group_end is not None and visit.start < group_end)
                    or visit.start == last.start)
            if together:
                groups[-1].append(visit)
                if visit.end is not None and (group_end is None or visit.end > group_end):
                    group_end = visit.end
                continue
        groups.append([visit])
        group_end = visit.end
    return groups


def _hands_off(before: _Visit, after: _Visit) -> bool:
    """`after` is a sub-agent that `before` handed the run to (docs/trajectory-rules.md §7)."""
    if after.activation is None and after.key[0] != "agent":
        return False
    target = after.key[1]
    steps = list(before.steps)
    if before.activation is not None:
        steps.extend(before.activation.steps)
    return any(step.metadata.get(META_HANDOFF_TO) == target for step in steps)
