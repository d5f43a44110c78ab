"""Places an agent graph (`agent_graph`) for drawing: igraph's Sugiyama layered layout.

The layout is igraph's (`Graph.feedback_arc_set` to break cycles, then `Graph.layout_sugiyama`:
layering, barycenter crossing reduction, dummy vertices on long edges; docs/agent-graph.md §4),
not trajhub's: the result gives every node a box and every edge the polyline it is drawn along, so
the web UI only draws SVG. Why igraph: README.md, "The agent graph".

No I/O; the output is plain JSON-able data in the shape of the API's `AgentGraphView`.
"""

from __future__ import annotations

import threading
from typing import Any

import igraph

from trajhub.evaluators.agent_graph import MAX_PATHS, AgentGraph, EdgeKey, NodeKey

#: pixels: node box height, gap between layers, gap between boxes of one layer, margin
NODE_HEIGHT = 36
LAYER_GAP = 70
BOX_GAP = 36
MARGIN = 20
#: an estimate of the label's width in the UI's 12 px font, for the box width
CHAR_WIDTH = 7.2
MIN_WIDTH = 70
#: up to this many edges the feedback arc set is exact (integer programming, NP-hard); above,
#: Eades' greedy heuristic, linear in the edges
EXACT_FAS_EDGES = 60
LAYOUT_NAME = f"igraph {igraph.__version__} Sugiyama"
#: igraph's C core keeps its error-handling state (the stack of what to free on an error) in
#: process-wide variables, and its exact feedback arc set runs GLPK: neither may run in two threads
#: at once, so one layout runs at a time (a few ms each). The API also keeps every layout on one
#: thread of its own (service/api/graph.py).
_IGRAPH = threading.Lock()


def _label(key: NodeKey) -> str:
    return key[1] if key[0] == "agent" else key[2]


def _width(key: NodeKey) -> int:
    # the label, and under it in a smaller font "<agent> · ×<visits>"
    sub = 0.85 * (len(key[1] if key[0] == "step" else "agent") + 8)
    return max(MIN_WIDTH, round(max(len(_label(key)), sub) * CHAR_WIDTH) + 24)


def _order_key(key: NodeKey) -> tuple[str, str, str]:
    # agent nodes first, then by agent and label: stable ids whatever the input order
    return ("0" if key[0] == "agent" else "1", key[1], key[2])


def _parts(n: int, pairs: list[tuple[int, int]]) -> list[list[int]]:
    """The vertices of each weakly connected part, each part in vertex order, the parts in the
    order of their first vertex."""
    parent = list(range(n))

    def root(v: int) -> int:
        while parent[v] != v:
            parent[v] = parent[parent[v]]
            v = parent[v]
        return v

    for s, t in pairs:
        parent[root(s)] = root(t)
    parts: dict[int, list[int]] = {}
    for v in range(n):
        parts.setdefault(root(v), []).append(v)
    return list(parts.values())


def _sugiyama(n: int, pairs: list[tuple[int, int]], weights: list[int]
              ) -> tuple[list[list[float]], list[list[list[float]]]]:
    """One connected graph laid out: each vertex's (x, y) in columns and layers, and each edge's
    bends (pairs' order)."""
    with _IGRAPH:
        # igraph's minimum-weight feedback arc set (exact for the usual tens of edges), the
        # layers of the rest as igraph's Sugiyama layering gives them, then the whole graph
        # laid out on those layers; the graphs are freed inside the lock too
        g = igraph.Graph(n=n, edges=pairs, directed=True)
        dag = g.copy()
        method = "ip" if len(pairs) <= EXACT_FAS_EDGES else "eades"
        dag.delete_edges(g.feedback_arc_set(weights=weights, method=method))
        layers = [round(y) for _, y in dag.layout_sugiyama().coords]
        layout = g.layout_sugiyama(layers=layers, hgap=1, vgap=1)
        coords = [[float(x), float(y)] for x, y in layout.coords]
        routing = [[[float(p[0]), float(p[1])] for p in route]
                   for route in (getattr(layout, "edge_routing", None) or [])]
        del g, dag, layout
    return coords, routing


def place(graph: AgentGraph) -> dict[str, Any]:
    """The graph with coordinates: nodes as boxes (centre x, y; width, height), edges with the
    points of their polyline (from the source box to the target box), in pixels."""
    keys = sorted(graph.nodes, key=_order_key)
    index = {key: i for i, key in enumerate(keys)}
    edge_keys: list[EdgeKey] = sorted(
        graph.edges, key=lambda e: (index[e[0]], index[e[1]], e[2]))
    # self-loops (a node visited twice in a row) have no place in a layering: drawn as loops
    laid = [(index[s], index[t]) for s, t, _ in edge_keys if s != t]
    pairs = sorted(set(laid))
    # Breaking a cycle reverses the lightest edges: an edge first taken earlier in the run (the
    # builder's insertion order) weighs more, so a loop's way back (tools → agent) is the one
    # drawn upwards and the run reads top to bottom
    first: dict[tuple[int, int], int] = {}
    for order, (s, t, _) in enumerate(graph.edges):
        first.setdefault((index[s], index[t]), order)
    weights = [len(graph.edges) - first[pair] for pair in pairs]
    coords: list[list[float]] = [[0.0, 0.0] for _ in keys]
    routing: list[list[list[float]]] = [[] for _ in pairs]
    # each weakly connected part on its own, side by side: igraph's Sugiyama layout of a graph
    # in several parts reads outside its memory now and then, which killed the server
    # (tests/test_graph_layout.py lays out many such graphs in a process of its own)
    right = 0.0
    for members in _parts(len(keys), pairs):
        local = {v: i for i, v in enumerate(members)}
        own = [i for i, (s, _) in enumerate(pairs) if s in local]
        own_pairs = [(local[pairs[i][0]], local[pairs[i][1]]) for i in own]
        part, part_bends = _sugiyama(len(members), own_pairs, [weights[i] for i in own])
        xs = [c[0] for c in part] + [p[0] for route in part_bends for p in route]
        shift = right - min(xs)
        for v, (x, y) in zip(members, part, strict=True):
            coords[v] = [x + shift, y]
        for i, route in zip(own, part_bends, strict=False):
            routing[i] = [[p[0] + shift, p[1]] for p in route]
        right = max(xs) + shift + 1
    widths = [_width(key) for key in keys]
    column = max(widths, default=MIN_WIDTH) + BOX_GAP
    # the leftmost node or bend (a reversed edge's bends can lie left of every node)
    xs = [c[0] for c in coords] + [float(p[0]) for route in routing for p in route] or [0.0]
    min_x = min(xs)

    def point(x: float, y: float) -> list[float]:
        return [round((x - min_x) * column + column / 2 + MARGIN - BOX_GAP / 2, 1),
                round(y * (NODE_HEIGHT + LAYER_GAP) + NODE_HEIGHT / 2 + MARGIN, 1)]

    centres = [point(c[0], c[1]) for c in coords]
    bends: dict[tuple[int, int], list[list[float]]] = {}
    for i, (a, b) in enumerate(pairs):
        points = [point(float(p[0]), float(p[1])) for p in (routing[i] if i < len(routing)
                                                             else [])]
        # an edge the layout reversed (to break a cycle) lists its bends from the target's
        # end: order them from the source's layer to the target's
        downward = centres[a][1] <= centres[b][1]
        # only the bends on the layers between the two ends (a reversed edge's routing can
        # end on its own endpoint)
        low, high = sorted((centres[a][1], centres[b][1]))
        bends[(a, b)] = sorted((p for p in points if low < p[1] < high),
                               key=lambda p: p[1] if downward else -p[1])
    ids = {key: f"n{i}" for i, key in enumerate(keys)}
    nodes = []
    for i, key in enumerate(keys):
        stats = graph.nodes[key]
        nodes.append({
            "id": ids[key], "kind": key[0], "agent": key[1], "label": _label(key),
            "visits": stats.visits, "failed": stats.failed, "parallel": stats.parallel,
            "runs": stats.runs, "step_ids": stats.step_ids,
            "x": centres[i][0], "y": centres[i][1], "width": widths[i], "height": NODE_HEIGHT})
    edges = []
    for n, (source, target, kind) in enumerate(edge_keys):
        taken = graph.edges[(source, target, kind)]
        a, b = index[source], index[target]
        edges.append({
            "id": f"e{n}", "source": ids[source], "target": ids[target], "kind": kind,
            "count": taken.count, "parallel": taken.parallel, "runs": taken.runs,
            "points": [centres[a], *bends.get((a, b), []), centres[b]] if a != b else []})
    width = max([c[0] + w / 2 for c, w in zip(centres, widths, strict=True)]
                + [p[0] for route in bends.values() for p in route], default=0)
    height = max((c[1] + NODE_HEIGHT / 2 for c in centres), default=0)
    paths = sorted(graph.paths.items(), key=lambda item: (-item[1], item[0]))[:MAX_PATHS]
    return {
        "runs": graph.runs, "layout": LAYOUT_NAME,
        "width": round(width + MARGIN + 40, 1), "height": round(height + MARGIN, 1),
        "nodes": nodes, "edges": edges,
        "paths": [{"agents": list(path), "count": count} for path, count in paths],
        "distinct_paths": len(graph.paths)}
