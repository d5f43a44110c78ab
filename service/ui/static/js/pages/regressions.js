// The regression report (POST /regressions): a baseline and a candidate over one dataset,
// a verdict per metric and, per item, the deltas, the quality change and where the runs diverged,
// each item linking to both trajectories and to their comparison.

import {post} from "../api.js";
import {fmtUsd} from "../cost.js";
import {fmtInt, fmtMs, fmtScore, h, headRow, notice} from "../dom.js";
import {link, navigate} from "../router.js";

const SIDES = [["baseline", "Baseline"], ["candidate", "Candidate"]];
const DELTAS = [["path_length", "Δ path", fmtInt], ["tool_calls", "Δ tool calls", fmtInt],
  ["retries", "Δ retries", fmtInt], ["tokens", "Δ tokens", fmtInt],
  ["cost_usd", "Δ cost", null], ["duration_ms", "Δ duration", fmtMs],
  ["failed_steps", "Δ failed", fmtInt]];

/** The request body from the address: each side an evaluation id or a run name. */
export function requestOf(params) {
  const side = (name) => {
    const evaluation = params.get(`${name}_evaluation`);
    const run = params.get(`${name}_run`);
    if (evaluation) return {evaluation: Number(evaluation)};
    return run ? {run} : null;
  };
  const baseline = side("baseline");
  const candidate = side("candidate");
  if (!baseline || !candidate) return null;
  const body = {baseline, candidate};
  if (params.get("dataset")) body.dataset = params.get("dataset");
  return body;
}

function pickForm(params) {
  const input = (id, label, attrs) => h("div", {class: "field"}, h("label", {for: id}, label),
    h("input", {id, name: id, value: params.get(id) || "", spellcheck: "false", ...attrs}));
  const form = h("form", {class: "filters", "aria-label": "Baseline and candidate",
    onsubmit: (event) => {
      event.preventDefault();
      navigate("/regressions", Object.fromEntries(new FormData(form)));
    }},
  SIDES.map(([side, label]) => h("fieldset", {class: "side"}, h("legend", null, label),
    input(`${side}_evaluation`, "Evaluation id", {type: "number", min: 1, size: 6}),
    h("span", {class: "muted small or"}, "or"),
    input(`${side}_run`, "Run name", {type: "text", size: 14}))),
  input("dataset", "Dataset (for run names)", {type: "text", size: 16}),
  h("div", {class: "field buttons"}, h("button", {type: "submit", class: "primary"}, "Compare")));
  return form;
}

function signed(value, format) {
  if (value === null || value === undefined) return h("span", {class: "muted"}, "unknown");
  if (format === null) return fmtUsd(value, true);
  const v = Number(value);
  if (v === 0) return "0";
  return (v > 0 ? "+" : "−") + format(Math.abs(v));
}

function passText(passed) {
  return passed === null || passed === undefined ? "—" : passed ? "pass" : "fail";
}

function qualityCell(quality) {
  const entries = Object.entries(quality || {});
  if (!entries.length) return h("td", {class: "muted"}, "no results");
  return h("td", null, h("ul", {class: "plain small"}, entries.map(([evaluator, q]) => {
    const worse = q.baseline_passed === true && q.candidate_passed === false;
    const better = q.baseline_passed === false && q.candidate_passed === true;
    return h("li", {class: worse ? "failed-text" : better ? "ok-text" : null},
      `${evaluator}: ${passText(q.baseline_passed)} → ${passText(q.candidate_passed)}`,
      q.score_delta !== null && q.score_delta !== undefined
        ? ` (score ${fmtScore(q.baseline_score)} → ${fmtScore(q.candidate_score)})` : "");
  })));
}

function traceLink(traceId, label) {
  return traceId ? h("a", {href: link(`/trajectories/${traceId}`), class: "mono small",
    title: traceId, "aria-label": `${label} trajectory ${traceId}`}, traceId.slice(0, 12) + "…")
    : h("span", {class: "muted"}, "no run");
}

function divergenceCell(item) {
  const first = item.first_divergence;
  if (item.distance === null || item.distance === undefined) return h("td", {class: "muted"}, "—");
  if (!first) return h("td", {class: "muted"}, "same steps");
  const step = first.b || first.a;
  return h("td", null, `#${first.position} ${first.op} `, h("span", {class: "small"},
    `${step.type} ${step.name}`), h("span", {class: "muted small"}, ` · ${item.distance} edits`));
}

function itemRow(item) {
  const worse = (item.deltas.path_length ?? 0) > 0 || (item.deltas.failed_steps ?? 0) > 0;
  return h("tr", {class: item.problems.length ? "failed" : worse ? "has-error" : null,
    dataset: {itemId: item.item_id}},
  h("td", {class: "mono small"}, item.item_id),
  h("td", null, traceLink(item.baseline_trace_id, "baseline")),
  h("td", null, traceLink(item.candidate_trace_id, "candidate")),
  DELTAS.map(([key, , format]) => h("td", {class: "num"}, signed(item.deltas[key], format))),
  qualityCell(item.quality),
  divergenceCell(item),
  h("td", null, item.baseline_trace_id && item.candidate_trace_id
    ? h("a", {href: link("/compare", {a: item.baseline_trace_id, b: item.candidate_trace_id}),
      class: "compare-link"}, "compare") : h("span", {class: "muted"}, "—")),
  h("td", {class: "small failed-text"}, item.problems.join("; ")));
}

function sideText(side) {
  const parts = [];
  if (side.evaluation !== null && side.evaluation !== undefined) {
    parts.push(h("a", {href: link(`/evaluations/${side.evaluation}`)}, `evaluation #${side.evaluation}`));
  }
  if (side.run) parts.push(` run ${side.run}`);
  return parts.length ? parts : ["—"];
}

function report(data) {
  return h("div", {id: "regression-report"},
    h("p", {id: "regression-sides"}, "Set ", h("a", {href: link(`/datasets/${encodeURIComponent(
      data.dataset)}`)}, data.dataset), " · baseline: ", sideText(data.baseline),
    " · candidate: ", sideText(data.candidate), h("span", {class: "muted small"},
      ` · prices: ${data.price_table}`)),
    h("table", {class: "grid verdicts", id: "verdict-table"},
      h("caption", null, "Verdict per metric (counts of items)"),
      headRow(["Metric", "Verdict", "Better", "Same", "Worse", "Missing"]),
      h("tbody", null, data.verdicts.map((v) => h("tr", {dataset: {metric: v.metric}},
        h("th", {scope: "row"}, v.metric),
        h("td", null, h("span", {class: `verdict verdict-${v.verdict}`}, v.verdict)),
        h("td", {class: "num"}, fmtInt(v.better)), h("td", {class: "num"}, fmtInt(v.same)),
        h("td", {class: "num"}, fmtInt(v.worse)), h("td", {class: "num"}, fmtInt(v.missing)))))),
    h("table", {class: "grid", id: "regression-items"},
      h("caption", null, `${data.items.length} items (Δ = candidate − baseline)`),
      headRow(["Item", "Baseline", "Candidate",
        ...DELTAS.map(([, label]) => label), "Quality (baseline → candidate)", "Diverged at",
        "Compare", "Problems"]),
      h("tbody", null, data.items.map(itemRow))));
}

export async function renderRegressions(ctx) {
  const {main, params} = ctx;
  main.append(h("div", {class: "crumbs"}, h("a", {href: link("/evaluations")}, "Evaluations"),
    " / "), h("h1", null, "Regression report"), pickForm(params));
  const body = requestOf(params);
  if (!body) {
    main.append(h("p", {class: "muted"}, "Give a baseline and a candidate: each an evaluation " +
      "id, or a run name over the dataset."));
    return;
  }
  const loading = h("p", {class: "muted"}, "Loading…");
  main.append(loading);
  try {
    const data = await post("/api/v1/regressions", body);
    if (!ctx.alive()) return;
    loading.replaceWith(report(data));
  } catch (error) {
    if (!ctx.alive()) return;
    loading.replaceWith(notice(error.status === 422 || error.status === 404
      ? `Cannot compare: ${error.detail}` : error.message, "error"));
  }
}
