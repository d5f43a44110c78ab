"""The captures the agent graph's tests replay, with the node and edge counts each must give.

The counts come from each capture's script (tests/capture/script.py and the wiring in
tests/capture/agents.py) by the rules of docs/agent-graph.md;
tests/test_agent_graph.py spells out every node and edge of the same captures.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import httpx

from tests.captures import KEPT_HEADERS
from tests.normalize_support import REAL, load_file


@dataclass(frozen=True)
class Shape:
    folder: Path
    nodes: int
    edges: int
    #: how many agent nodes and edges of each kind, where the shape is about them
    agents: int
    handoffs: int = 0
    tool_edges: int = 0
    parallel_edges: int = 0


SHAPES = {
    # supervisor (node `supervisor`: 3 model calls) and its sub-agents weather_agent and
    # math_agent (each: agent → tools → agent)
    "supervisor": Shape(REAL / "openinference" / "supervisor_subgraphs.stategraph.stream",
                        nodes=8, edges=11, agents=3),
    # langgraph-supervisor: supervisor_team runs supervisor ×3, who hands off twice
    "supervisor_handoff": Shape(
        REAL / "openinference" / "supervisor_handoff.langgraph_supervisor.stream",
        nodes=10, edges=13, agents=4, handoffs=2),
    # langgraph-swarm: weather_agent hands off to math_agent
    "swarm": Shape(REAL / "openinference" / "swarm_handoff.langgraph_swarm.stream",
                   nodes=7, edges=8, agents=3, handoffs=1),
    # assistant's tool ask_researcher runs the agent researcher
    "agent_in_tool": Shape(REAL / "openinference" / "agent_in_tool.prebuilt.stream",
                           nodes=6, edges=7, agents=2, tool_edges=1),
    # plan, three researchers sent in one super-step, summarize
    "send": Shape(REAL / "openinference" / "send_fanout.stategraph.stream", nodes=6, edges=6,
                  agents=2, parallel_edges=2),
}


def replay_folder(folder: Path, http_base: str, project: str) -> str:
    """Post a capture folder's HTTP requests as captured into `project`; its one trace id."""
    trace_ids: set[str] = set()
    for body in sorted(folder.glob("http_*.bin")):
        meta = json.loads(body.with_suffix(".json").read_text())
        headers = {k.lower(): v for k, v in meta.get("headers", {}).items()
                   if k.lower() in KEPT_HEADERS}
        response = httpx.post(http_base + meta.get("path", "/v1/traces"),
                              content=body.read_bytes(),
                              headers={**headers, "trajhub-project": project}, timeout=30)
        assert response.status_code == 200, (body, response.text)
        trace_ids.update(span.trace_id for span in load_file(body))
    assert len(trace_ids) == 1, (folder, trace_ids)
    return trace_ids.pop()
