// The agent graph of many runs: the trajectory list's filters (carried over from the list) and
// the newest `limit` runs they select, in one graph, with the agent paths and how often each
// was taken. Built and laid out by the server (GET /api/v1/graph).

import {get} from "../api.js";
import {graphBox, graphLegend, pathTable} from "../graph.js";
import {link, navigate} from "../router.js";
import {clear, fmtInt, h, notice} from "../dom.js";

const FILTERS = ["start", "end", "agent", "tool", "model", "status", "q"];
export const DEFAULT_RUNS = 500;

/** The API query of the list's filters in the address (as pages/trajectories.js keeps them). */
function apiQuery(params) {
  const query = {limit: params.get("limit") || String(DEFAULT_RUNS)};
  for (const key of FILTERS) if (params.get(key)) query[key] = params.get(key);
  const errors = params.get("errors");
  if (errors === "no_error") query.has_error = "false";
  else if (errors) query[errors] = "true";
  return query;
}

export async function renderGraph(ctx) {
  const {main, params} = ctx;
  const listParams = Object.fromEntries([...params.entries()]
    .filter(([k]) => k !== "limit" && k !== "project"));
  const described = Object.entries(listParams).map(([k, v]) => `${k} = ${v}`).join(", ");
  const limit = h("input", {id: "graph-limit", name: "limit", type: "number", min: 1, max: 1000,
    value: params.get("limit") || String(DEFAULT_RUNS), size: 6});
  main.append(
    h("header", {class: "page-head"},
      h("div", {class: "crumbs"}, h("a", {href: link("/trajectories", listParams)}, "Trajectories"),
        " / "),
      h("h1", null, "Agent graph"),
      h("p", {class: "muted"}, described ? `Runs where ${described}.` : "All runs of the project."),
      h("form", {class: "inline", "aria-label": "How many runs", onsubmit: (event) => {
        event.preventDefault();
        navigate("/graph", {...listParams, limit: limit.value});
      }}, h("label", {for: "graph-limit"}, "The newest "), limit, " runs ",
      h("button", {type: "submit"}, "Draw"))));
  const body = h("div", {id: "aggregate-graph"}, h("p", {class: "muted"}, "Loading…"));
  main.append(body);
  try {
    const graph = await get("/api/v1/graph", apiQuery(params));
    if (!ctx.alive()) return;
    clear(body);
    if (!graph.runs) {
      body.append(notice("No trajectory matches these filters.", "info"));
      return;
    }
    const {el} = graphBox(graph, (node) => {
      // an agent node opens the list of the runs (with these filters) in which it ran
      if (node.kind === "agent") navigate("/trajectories", {...listParams, agent: node.agent});
    });
    body.append(h("p", {class: "summary", id: "graph-summary"},
      `${fmtInt(graph.runs)} ${graph.runs === 1 ? "run" : "runs"} · ${graph.nodes.length} nodes · ${graph.edges.length} edges · ` +
      `laid out by ${graph.layout}. Counts add up over the runs; click an agent for its runs.`),
    el, graphLegend(), pathTable(graph));
  } catch (error) {
    if (ctx.alive()) clear(body).append(notice(error.message, "error"));
  }
}
