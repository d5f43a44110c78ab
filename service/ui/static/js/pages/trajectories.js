// The trajectory list: filters, server-side pages (cursor), open trajectories refreshed.

import {get} from "../api.js";
import {link} from "../router.js";
import {fillPager, filterForm, textInput} from "../lists.js";
import {costNode} from "../cost.js";
import {badge, clear, emptyRow, field, fmtInt, fmtMs, fmtTime, gridTable, h, notice, toLocal, truncate} from "../dom.js";

const REFRESH_MS = 2000;
const PAGE = 50;  // rows per page; `limit=` in the address changes it (1–200)
const TEXT_FILTERS = [["agent", "Agent"], ["tool", "Tool"], ["model", "Model"],
  ["run_name", "Run name"], ["release", "Release"], ["prompt_version", "Prompt version"]];
const ERRORS = [
  ["", "any"],
  ["has_error", "with errors"],
  ["failed_tool_steps", "failed tool steps"],
  ["failed_model_steps", "failed model steps"],
  ["no_error", "without errors"],
];

function apiQuery(params) {
  const limit = Math.min(Math.max(Number(params.get("limit")) || PAGE, 1), 200);
  const query = {limit, count: "true"};
  for (const key of ["start", "end", "agent", "tool", "model", "run_name", "release",
    "prompt_version", "status", "q", "cursor", "score", "sort", "order"]) {
    if (params.get(key)) query[key] = params.get(key);
  }
  const errors = params.get("errors");
  if (errors === "no_error") query.has_error = "false";
  else if (errors) query[errors] = "true";
  // runs LangGraph's interrupt() ended (waiting for a person), or the others
  if (params.get("interrupted")) query.interrupted = params.get("interrupted");
  // runs without steps (an instrumentation's side traces) only when asked for
  if (params.get("empty") !== "show") query.has_steps = "true";
  return query;
}

function trajectoryFilters(params) {
  return filterForm("/trajectories", "Filter trajectories",
    field("f-start", "From", h("input", {id: "f-start", name: "start", type: "datetime-local",
      value: toLocal(params.get("start"))})),
    field("f-end", "To", h("input", {id: "f-end", name: "end", type: "datetime-local",
      value: toLocal(params.get("end"))})),
    TEXT_FILTERS.map(([name, text]) => field(`f-${name}`, text, textInput("f-", name, params))),
    field("f-status", "Status", h("select", {id: "f-status", name: "status"},
      [["", "any"], ["open", "open"], ["final", "final"]].map(([value, text]) =>
        h("option", {value, selected: (params.get("status") || "") === value}, text)))),
    field("f-errors", "Errors", h("select", {id: "f-errors", name: "errors"},
      ERRORS.map(([value, text]) =>
        h("option", {value, selected: (params.get("errors") || "") === value}, text)))),
    field("f-interrupted", "Interrupted", h("select", {id: "f-interrupted", name: "interrupted"},
      [["", "any"], ["true", "interrupted"], ["false", "not interrupted"]].map(([value, text]) =>
        h("option", {value, selected: (params.get("interrupted") || "") === value}, text)))),
    field("f-q", "Text in input or output", h("input", {id: "f-q", name: "q", type: "search",
      size: 22, value: params.get("q") || ""})),
    // a score condition as the API takes it (README "Scores"): correctness>=0.5, verdict=pass
    field("f-score", "Score", h("input", {id: "f-score", name: "score", type: "text", size: 16,
      spellcheck: "false", placeholder: "name>=0.5", value: params.get("score") || "",
      title: "<name><op><value>, op one of >=, <=, =, !="})),
    h("div", {class: "field check"},
      h("input", {id: "f-empty", name: "empty", type: "checkbox", value: "show",
        checked: params.get("empty") === "show"}),
      h("label", {for: "f-empty", title: "side traces of an instrumentation, such as " +
        "Traceloop's create_agent, have no steps"}, "Show runs without steps")),
    h("div", {class: "field buttons"},
      h("button", {type: "submit", class: "primary"}, "Apply"),
      h("a", {href: link("/trajectories"), class: "button"}, "Clear"),
      // the same filters over the newest runs, as one agent graph (pages/graph.js)
      h("a", {href: link("/graph", Object.fromEntries([...params.entries()]
        .filter(([k]) => k !== "cursor" && k !== "project" && k !== "limit"))),
      class: "button", id: "graph-link"}, "Agent graph")));
}

function stepsCell(item) {
  return h("td", {class: "num"}, fmtInt(item.step_count),
    h("span", {class: "muted small"}, ` (${item.model_step_count} model · ${item.tool_step_count} tool)`));
}

function statusCell(item) {
  const parts = [badge(item.status)];
  const failed = item.failed_tool_steps + item.failed_model_steps;
  if (item.derivation_error) parts.push(" ", badge("not derived", "failed"));
  else if (failed) {
    parts.push(" ", h("span", {class: "failed-text"},
      `${failed} failed ${failed === 1 ? "step" : "steps"}`));
  } else if (item.has_error) parts.push(" ", h("span", {class: "failed-text"}, "error"));
  if (item.interrupted) parts.push(" ", badge("interrupted"));
  return h("td", null, parts);
}

function row(item) {
  return h("tr", {class: item.has_error ? "has-error" : null, dataset: {traceId: item.trace_id}},
    h("td", null, h("a", {href: link(`/trajectories/${item.trace_id}`)},
      item.root_name || "(unnamed)"),
    h("div", {class: "muted small mono"}, item.trace_id)),
    h("td", null, (item.agent_names || []).join(", ") || h("span", {class: "muted"}, "—")),
    stepsCell(item),
    h("td", {class: "num", title: "input → output tokens"},
      `${fmtInt(item.input_tokens)} → ${fmtInt(item.output_tokens)}`),
    h("td", {class: "num cost"}, costNode(item.cost)),
    h("td", {class: "num"}, fmtMs(item.duration_ms)),
    statusCell(item),
    h("td", {class: "nowrap"}, fmtTime(item.start_time)),
    h("td", {class: "preview"}, truncate(item.input_preview ?? "", 120)),
    h("td", {class: "preview"}, truncate(item.output_preview ?? "", 120)));
}

export async function renderTrajectories(ctx) {
  const {main, params} = ctx;
  main.append(h("h1", null, "Trajectories"), trajectoryFilters(params));
  const summary = h("p", {class: "summary", "aria-live": "polite"});
  const body = h("tbody");
  const table = gridTable("trajectory-table", "Trajectories, newest first",
    ["Root", "Agents", "Steps", "Tokens (in → out)", "Cost",
      "Duration", "Status", "Started", "Input", "Output"], body);
  const pager = h("nav", {class: "pager", "aria-label": "Pages"});
  main.append(summary, table, pager);

  async function load() {
    const page = await get("/api/v1/trajectories", apiQuery(params));
    if (!ctx.alive()) return;
    clear(body).append(...page.items.map(row));
    const open = page.items.filter((i) => i.status === "open").length;
    summary.textContent = (page.total !== undefined ? `${fmtInt(page.total)} trajectories` :
      `${page.items.length} trajectories on this page`) +
      (open ? ` · ${open} open, refreshing` : "");
    if (!page.items.length) body.append(emptyRow(9, "No trajectory matches these filters."));
    clear(pager);
    fillPager(pager, "/trajectories", params, page.next_cursor);
    if (open) setTimeout(() => { if (ctx.alive()) load().catch(showError); }, REFRESH_MS);
  }

  function showError(error) {
    if (ctx.alive()) summary.replaceWith(notice(String(error.message || error), "error"));
  }

  await load();
}
