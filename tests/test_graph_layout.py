"""The agent graph's layout (evaluators/graph_layout.py) of graphs in several parts: igraph's
Sugiyama layout of such a graph read outside its memory now and then and killed the process,
so `place` lays out each part on its own. Many random graphs are laid out in a process of its
own (a crash fails the test instead of the run), and the parts stand side by side."""

from __future__ import annotations

import random
import subprocess
import sys

import pytest

from trajhub.evaluators.agent_graph import AgentGraph, EdgeStats, NodeKey, NodeStats
from trajhub.evaluators.graph_layout import place

#: random graphs of up to this many nodes; in one process, igraph's layout of whole graphs in
#: several parts crashed within a few thousand of them
NODES = 40
GRAPHS = 3000


def random_graph(seed: int) -> AgentGraph:
    """Up to NODES step nodes, about as many edges as nodes, self-loops and cycles included:
    mostly in several parts."""
    rnd = random.Random(seed)
    n = rnd.randint(1, NODES)
    keys: list[NodeKey] = [("step", f"agent{i % 3}", f"tool{i}") for i in range(n)]
    graph = AgentGraph(nodes={key: NodeStats(visits=1, runs=1) for key in keys})
    for _ in range(rnd.randint(0, n)):
        source, target = rnd.choice(keys), rnd.choice(keys)
        graph.edges[(source, target, "transition")] = EdgeStats(count=1, runs=1)
    return graph


@pytest.mark.integration  # it starts a Python process of its own
def test_many_graphs_in_several_parts_are_laid_out_without_a_crash() -> None:
    program = ("from tests.test_graph_layout import random_graph, GRAPHS\n"
               "from trajhub.evaluators.graph_layout import place\n"
               "for seed in range(GRAPHS): place(random_graph(seed))\n")
    done = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True,
                          timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]


def test_parts_stand_side_by_side_without_overlapping() -> None:
    a: list[NodeKey] = [("step", "a", "one"), ("step", "a", "two")]
    b: list[NodeKey] = [("step", "b", "three"), ("step", "b", "four")]
    graph = AgentGraph(nodes={key: NodeStats(visits=1, runs=1) for key in a + b},
                       edges={(a[0], a[1], "transition"): EdgeStats(count=1, runs=1),
                              (b[0], b[1], "transition"): EdgeStats(count=1, runs=1)})
    laid = place(graph)
    boxes = {(n["agent"], n["label"]): n for n in laid["nodes"]}
    for first, second in ((a, b), (b, a)):
        for key in first:
            for other in second:
                one, two = boxes[key[1:]], boxes[other[1:]]
                apart_x = abs(one["x"] - two["x"]) >= (one["width"] + two["width"]) / 2
                apart_y = abs(one["y"] - two["y"]) >= (one["height"] + two["height"]) / 2
                assert apart_x or apart_y, (one, two)
    # each part reads top to bottom: its edge goes down one layer
    for source, target in (a, b):
        assert boxes[source[1:]]["y"] < boxes[target[1:]]["y"]
