// The agent graph, drawn as SVG from an AgentGraphView of the API: the server placed every node
// and routed every edge (igraph's Sugiyama layout, docs/agent-graph.md), so this only draws.

import {fmtInt, h, headRow} from "./dom.js";

// the SVG namespace as the HTML parser assigns it to <svg> (the shipped files name no URL)
const SVG = (() => {
  const holder = document.createElement("div");
  holder.innerHTML = "<svg></svg>";
  return holder.firstChild.namespaceURI;
})();

function s(tag, attrs, ...children) {
  const el = document.createElementNS(SVG, tag);
  for (const [key, value] of Object.entries(attrs || {})) {
    if (value === null || value === undefined || value === false) continue;
    if (key.startsWith("on")) el.addEventListener(key.slice(2), value);
    else el.setAttribute(key, String(value));
  }
  for (const child of children.flat(Infinity)) {
    if (child === null || child === undefined || child === false) continue;
    el.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return el;
}

/** Where the segment from the box's centre towards `toward` leaves the box. */
function clip(box, toward) {
  const dx = toward[0] - box.x;
  const dy = toward[1] - box.y;
  if (!dx && !dy) return [box.x, box.y];
  const sx = dx ? (box.width / 2 + 2) / Math.abs(dx) : Infinity;
  const sy = dy ? (box.height / 2 + 2) / Math.abs(dy) : Infinity;
  const k = Math.min(sx, sy, 1);
  return [box.x + dx * k, box.y + dy * k];
}

function edgeLabel(edge) {
  return `×${fmtInt(edge.count)}${edge.parallel ? " ∥" : ""}`;
}

function edgeTitle(edge, byId) {
  const what = {enter: "enters", transition: "then", handoff: "hands off to",
    tool: "runs, inside a tool call,"}[edge.kind];
  return `${byId.get(edge.source).label} ${what} ${byId.get(edge.target).label}: ` +
    `${fmtInt(edge.count)} times` + (edge.parallel ? `, ${fmtInt(edge.parallel)} in parallel` : "") +
    (edge.runs !== undefined ? ` (in ${fmtInt(edge.runs)} runs)` : "");
}

/** The path of one edge: the layout's polyline clipped to the boxes, bent aside by `offset`
 * pixels when several edges join the same two nodes; a loop for a node to itself. */
function edgePath(edge, byId, offset) {
  const a = byId.get(edge.source);
  const b = byId.get(edge.target);
  if (edge.source === edge.target) {
    const x = a.x + a.width / 2;
    const y = a.y;
    return {d: `M${x},${y - 8} C${x + 34},${y - 26} ${x + 34},${y + 26} ${x},${y + 8}`,
      mid: [x + 30, y]};
  }
  const pts = edge.points.length >= 2 ? edge.points : [[a.x, a.y], [b.x, b.y]];
  if (pts.length === 2 && offset) {
    const [p, q] = pts;
    const len = Math.hypot(q[0] - p[0], q[1] - p[1]) || 1;
    const c = [(p[0] + q[0]) / 2 - ((q[1] - p[1]) / len) * offset,
      (p[1] + q[1]) / 2 + ((q[0] - p[0]) / len) * offset];
    const start = clip(a, c);
    const end = clip(b, c);
    const mid = [(start[0] + 2 * c[0] + end[0]) / 4, (start[1] + 2 * c[1] + end[1]) / 4];
    // the label on the outer side of the bend, so two edges between one pair keep apart
    return {d: `M${start} Q${c} ${end}`, mid, anchor: mid[0] < (p[0] + q[0]) / 2 ? "end" : "start"};
  }
  const start = clip(a, pts[1]);
  const end = clip(b, pts[pts.length - 2]);
  const line = [start, ...pts.slice(1, -1), end];
  const m = Math.floor((line.length - 1) / 2);
  const mid = [(line[m][0] + line[m + 1][0]) / 2, (line[m][1] + line[m + 1][1]) / 2];
  if (line.length === 2) return {d: `M${start} L${end}`, mid};
  // through the layout's bends as a smooth curve (Catmull-Rom as cubic Béziers)
  let d = `M${line[0]}`;
  for (let i = 0; i < line.length - 1; i++) {
    const p0 = line[Math.max(i - 1, 0)];
    const [p1, p2] = [line[i], line[i + 1]];
    const p3 = line[Math.min(i + 2, line.length - 1)];
    const c1 = [p1[0] + (p2[0] - p0[0]) / 6, p1[1] + (p2[1] - p0[1]) / 6];
    const c2 = [p2[0] - (p3[0] - p1[0]) / 6, p2[1] - (p3[1] - p1[1]) / 6];
    d += ` C${c1} ${c2} ${p2}`;
  }
  return {d, mid: line.length % 2 ? line[m] : mid};
}

/**
 * The graph as an <svg>: nodes are boxes (failed ones red, parallel ones marked ∥), edges carry
 * their counts. `onNode(node, element)` is called when a node is clicked (or Enter/Space on it).
 */
export function graphSvg(graph, onNode) {
  const byId = new Map(graph.nodes.map((n) => [n.id, n]));
  const pairs = new Map();
  for (const edge of graph.edges) {
    const key = [edge.source, edge.target].sort().join(" ");
    if (!pairs.has(key)) pairs.set(key, []);
    pairs.get(key).push(edge);
  }
  const offsets = new Map();
  for (const [key, edges] of pairs) {
    const [low] = key.split(" ");
    edges.forEach((edge, i) => {
      const spread = edges.length > 1 ? (i - (edges.length - 1) / 2) * 22 || 11 : 0;
      // the same side of the line for both directions: measured from the lower id
      offsets.set(edge.id, edge.source === low ? spread : -spread);
    });
  }
  const svg = s("svg", {class: "agent-graph", id: "agent-graph", role: "group",
    "aria-label": `Agent graph: ${graph.nodes.length} nodes, ${graph.edges.length} edges`,
    width: graph.width, height: graph.height, viewBox: `0 0 ${graph.width} ${graph.height}`},
  s("defs", null, ["enter", "transition", "handoff", "tool"].map((kind) =>
    s("marker", {id: `arrow-${kind}`, viewBox: "0 0 10 10", refX: 9, refY: 5, markerWidth: 7,
      markerHeight: 7, orient: "auto-start-reverse", class: `arrow arrow-${kind}`},
    s("path", {d: "M0,0 L10,5 L0,10 z"})))));
  const edgeLayer = s("g", {class: "edges"});
  for (const edge of graph.edges) {
    const {d, mid, anchor = "start"} = edgePath(edge, byId, offsets.get(edge.id));
    edgeLayer.append(s("g", {class: `graph-edge edge-${edge.kind}${edge.parallel ? " parallel" : ""}`,
      "data-source": edge.source, "data-target": edge.target, "data-kind": edge.kind,
      "data-count": edge.count, "data-parallel": edge.parallel},
    s("title", null, edgeTitle(edge, byId)),
    s("path", {d, "marker-end": `url(#arrow-${edge.kind})`}),
    s("text", {x: mid[0] + (anchor === "end" ? -4 : 4), y: mid[1] - 3, "text-anchor": anchor,
      class: "edge-label"}, edgeLabel(edge))));
  }
  const nodeLayer = s("g", {class: "nodes"});
  for (const node of graph.nodes) {
    const classes = ["graph-node", `node-${node.kind}`];
    if (node.failed) classes.push("failed");
    if (node.parallel) classes.push("parallel");
    const x = node.x - node.width / 2;
    const y = node.y - node.height / 2;
    const title = `${node.kind === "agent" ? "agent" : `${node.agent} ›`} ${node.label}: ` +
      `${fmtInt(node.visits)} visits` + (node.failed ? `, ${fmtInt(node.failed)} failed` : "") +
      (node.parallel ? `, ${fmtInt(node.parallel)} in parallel` : "");
    const g = s("g", {class: classes.join(" "), tabindex: 0, role: "button",
      "aria-label": title, "data-node-id": node.id, "data-label": node.label,
      "data-agent": node.agent, "data-visits": node.visits, "data-failed": node.failed},
    s("title", null, title),
    s("rect", {x, y, width: node.width, height: node.height, rx: node.kind === "agent" ? 10 : 3}),
    s("text", {x: node.x, y: node.y - 2, "text-anchor": "middle", class: "node-label"},
      node.label),
    s("text", {x: node.x, y: node.y + 12, "text-anchor": "middle", class: "node-sub"},
      `${node.kind === "agent" ? "agent" : node.agent} · ×${fmtInt(node.visits)}` +
      (node.parallel ? " ∥" : "") + (node.failed ? ` · ✗${fmtInt(node.failed)}` : "")));
    if (onNode) {
      g.addEventListener("click", () => onNode(node, g));
      g.addEventListener("keydown", (event) => {
        if (event.key !== "Enter" && event.key !== " ") return;
        event.preventDefault();
        onNode(node, g);
      });
    }
    nodeLayer.append(g);
  }
  svg.append(edgeLayer, nodeLayer);
  return svg;
}

/** The legend under a graph. */
export function graphLegend() {
  return h("p", {class: "legend small graph-legend"},
    h("span", null, h("span", {class: "swatch node-agent-swatch"}), " agent "),
    h("span", null, h("span", {class: "swatch node-step-swatch"}), " node (its model / tool steps) "),
    h("span", null, h("span", {class: "swatch failed"}), " failed "),
    h("span", null, "→ transition · ", h("span", {class: "handoff-text"}, "→ hand-off"),
      " · ", h("span", {class: "tool-text"}, "→ agent inside a tool"),
      " · ∥ dashed: parallel branches · ×n: times taken"));
}

/** The table of agent paths with how many runs took each. */
export function pathTable(graph) {
  return h("table", {class: "grid", id: "path-table"},
    h("caption", null, `Agent paths (${fmtInt(graph.distinct_paths)} distinct` +
      `${graph.distinct_paths > graph.paths.length ? `, the ${graph.paths.length} most frequent` : ""})`),
    headRow(["Runs", "Share", "Agents entered, in order"]),
    h("tbody", null, graph.paths.map((p) => h("tr", null,
      h("td", {class: "num"}, fmtInt(p.count)),
      h("td", {class: "num"}, graph.runs ? `${Math.round((100 * p.count) / graph.runs)}%` : ""),
      h("td", null, p.agents.join(" → "))))));
}

/** Mark one node as the selected one. */
export function markNode(svg, element) {
  for (const el of svg.querySelectorAll(".graph-node.chosen")) el.classList.remove("chosen");
  if (element) element.classList.add("chosen");
}

export function graphBox(graph, onNode) {
  const svg = graphSvg(graph, onNode);
  return {svg, el: h("div", {class: "graph-scroll"}, svg)};
}
