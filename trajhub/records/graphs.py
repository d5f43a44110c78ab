"""The agent graph as the REST API answers it (`GET /api/v1/trajectories/{id}/graph`,
`GET /api/v1/graph`): nodes placed for drawing, edges with their counts and polylines, and the
agent paths taken (docs/agent-graph.md)."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, Field

from trajhub.records.examples import example_config


class GraphNode(BaseModel):
    id: str = Field(description="unique in this answer (`n0`, `n1`, …)")
    kind: Literal["agent", "step"] = Field(
        description="`agent`: an agent (or graph) by name, each activation one visit; `step`: "
                    "the model and tool steps one agent ran in one LangGraph node (or, where "
                    "no node is recorded, its model calls or one tool)")
    agent: str = Field(description="the agent's name (for a step node, the agent it belongs to)")
    label: str = Field(description="what the node is called: the agent's name, the LangGraph "
                       "node, `model`, or the tool's name")
    visits: int = Field(description="how many times it ran")
    failed: int = Field(description="visits that failed (an activation or a step with an error)")
    parallel: int = Field(description="visits made side by side with another visit of the same "
                          "agent (one super-step, e.g. `Send`, or overlapping times)")
    runs: int = Field(description="trajectories in which it ran")
    step_ids: list[str] = Field(description="one trajectory's graph: the ids of the steps the "
                                "node stands for (an agent node: the step that started each "
                                "activation and its own model and tool steps); empty in an "
                                "aggregate")
    x: float = Field(description="centre of the node's box, pixels from the left")
    y: float = Field(description="centre of the node's box, pixels from the top")
    width: float
    height: float


class GraphEdge(BaseModel):
    id: str
    source: str = Field(description="a node id")
    target: str = Field(description="a node id")
    kind: Literal["enter", "transition", "handoff", "tool"] = Field(
        description="`enter`: an agent to its first step(s); `transition`: one visit to the "
                    "next in the same agent; `handoff`: to a sub-agent the run was handed to "
                    "(a transfer tool call); `tool`: a tool call to the agent run inside it")
    count: int = Field(description="how many times it was taken")
    parallel: int = Field(description="of those, how many were into or out of parallel "
                          "branches")
    runs: int = Field(description="trajectories in which it was taken")
    points: list[list[float]] = Field(description="the polyline to draw, [x, y] pixels from the "
                                      "source's centre to the target's centre, with the layout's "
                                      "bends; empty for a node to itself (drawn as a loop)")


class GraphPath(BaseModel):
    agents: list[str] = Field(description="the agents entered, in the order they were entered")
    count: int = Field(description="trajectories that took this path")


GRAPH_EXAMPLE: dict[str, Any] = {
    "runs": 1, "layout": "igraph 1.0.0 Sugiyama", "width": 200.0, "height": 198.0,
    "nodes": [
        {"id": "n0", "kind": "agent", "agent": "assistant", "label": "assistant", "visits": 1,
         "failed": 0, "parallel": 0, "runs": 1, "step_ids": ["b7ad6b7169203331"], "x": 64.5,
         "y": 38.0, "width": 89, "height": 36},
        {"id": "n1", "kind": "step", "agent": "assistant", "label": "agent", "visits": 1,
         "failed": 0, "parallel": 0, "runs": 1, "step_ids": ["b7ad6b7169203331"], "x": 64.5,
         "y": 144.0, "width": 70, "height": 36}],
    "edges": [{"id": "e0", "source": "n0", "target": "n1", "kind": "enter", "count": 1,
               "parallel": 0, "runs": 1, "points": [[64.5, 38.0], [64.5, 144.0]]}],
    "paths": [{"agents": ["assistant"], "count": 1}], "distinct_paths": 1}


class AgentGraphView(BaseModel):
    model_config = example_config(GRAPH_EXAMPLE)
    runs: int = Field(description="how many trajectories the graph is built from")
    layout: str = Field(description="what placed the nodes (igraph's Sugiyama layout)")
    width: float = Field(description="the drawing's size in pixels")
    height: float
    nodes: list[GraphNode]
    edges: list[GraphEdge]
    paths: list[GraphPath] = Field(description="the most frequent agent paths (20 at most), "
                                   "most frequent first")
    distinct_paths: int = Field(description="how many different agent paths there were")
