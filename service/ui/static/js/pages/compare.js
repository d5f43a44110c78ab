// Two runs side by side: their steps aligned (GET /trajectories/compare), the first divergence
// highlighted, inserted / deleted / changed steps marked, and the metric deltas (b − a).

import {get} from "../api.js";
import {costNode, fmtUsd} from "../cost.js";
import {append, badge, fmtInt, fmtMs, h, headRow, notice} from "../dom.js";
import {link, navigate} from "../router.js";

const METRICS = [
  ["path_length", "Path length (steps)", fmtInt], ["model_steps", "Model steps", fmtInt],
  ["tool_calls", "Tool calls", fmtInt], ["retries", "Retries", fmtInt],
  ["failed_steps", "Failed steps", fmtInt], ["input_tokens", "Input tokens", fmtInt],
  ["output_tokens", "Output tokens", fmtInt], ["duration_ms", "Duration", fmtMs],
];
const OPS = {same: "same", changed: "changed", inserted: "inserted (only in B)",
  deleted: "deleted (only in A)"};

function signed(value, format) {
  if (value === null || value === undefined) return "unknown";
  const v = Number(value);
  if (v === 0) return "0";
  return (v > 0 ? "+" : "−") + format(Math.abs(v));
}

function pickForm(a, b) {
  const field = (id, text, value) => h("div", {class: "field"}, h("label", {for: id}, text),
    h("input", {id, name: id.slice(-1), type: "text", size: 34, value: value || "",
      required: true, spellcheck: "false", pattern: "[0-9a-fA-F]{32}",
      title: "a trace id: 32 hex digits"}));
  const form = h("form", {class: "filters", "aria-label": "Runs to compare", onsubmit: (event) => {
    event.preventDefault();
    const data = new FormData(form);
    navigate("/compare", {a: String(data.get("a")).trim().toLowerCase(),
      b: String(data.get("b")).trim().toLowerCase()});
  }},
  field("compare-a", "Run A (baseline) trace id", a),
  field("compare-b", "Run B (candidate) trace id", b),
  h("div", {class: "field buttons"},
    h("button", {type: "submit", class: "primary"}, "Compare"),
    a && b ? h("a", {class: "button", href: link("/compare", {a: b, b: a})}, "Swap A and B")
      : null));
  return form;
}

function stepCells(ref, other, traceId) {
  if (!ref) return [h("td", {class: "num muted"}), h("td", {colspan: 3, class: "muted absent"}, "—")];
  const differs = (key) => other && other[key] !== ref[key] ? "diff" : null;
  return [
    h("td", {class: "num muted"}, String(ref.seq)),
    h("td", {class: differs("type")}, h("span", {class: `type type-${ref.type}`}, ref.type)),
    h("td", {class: differs("name")},
      h("a", {href: link(`/trajectories/${traceId}`, {step: ref.step_id})}, ref.name || "(unnamed)"),
      other && other.name === ref.name && other.type === ref.type &&
        other.arguments_hash !== ref.arguments_hash
        ? h("span", {class: "small diff-note"}, " (other arguments)") : null),
    h("td", {class: "small"}, ref.agent),
  ];
}

function divergenceNote(first, report) {
  if (!first) {
    return h("p", {class: "notice", id: "first-divergence"},
      "No divergence: both runs took the same steps with the same arguments.");
  }
  const describe = (ref, run) => ref ? `${ref.type} ${ref.name} (${ref.agent})` : `nothing in ${run}`;
  const what = {
    deleted: `only run A has ${describe(first.a, "B")}`,
    inserted: `only run B has ${describe(first.b, "A")}`,
    changed: `run A has ${describe(first.a, "A")} where run B has ${describe(first.b, "B")}`,
  }[first.op] || first.op;
  return h("p", {class: "notice divergence-note", id: "first-divergence"},
    h("strong", null, `First divergence at position ${first.position}: ${first.op}`), ` — ${what}. `,
    h("a", {href: "#divergence-row", onclick: (event) => {
      event.preventDefault();
      const row = document.getElementById("divergence-row");
      row?.scrollIntoView({block: "center"});
      row?.focus();
    }}, "Go to it in the alignment"),
    ` · ${report.distance} ${report.distance === 1 ? "edit" : "edits"} in all.`);
}

function metricsTable(report) {
  const row = (label, a, b, delta, id) => h("tr", {dataset: {metric: id}},
    h("th", {scope: "row"}, label), h("td", {class: "num"}, a), h("td", {class: "num"}, b),
    h("td", {class: "num delta"}, delta));
  return h("table", {class: "grid compare-metrics", id: "compare-metrics"},
    h("caption", null, "Metrics (Δ = B − A)"),
    headRow(["Metric", "A", "B", "Δ"]),
    h("tbody", null,
      METRICS.map(([key, label, format]) => row(label, format(report.a.metrics[key]),
        format(report.b.metrics[key]), signed(report.deltas[key], format), key)),
      row("Cost", costNode(report.a.cost), costNode(report.b.cost),
        report.deltas.cost_usd === null || report.deltas.cost_usd === undefined
          ? h("span", {class: "unknown-cost"}, "unknown (a model has no price)")
          : fmtUsd(report.deltas.cost_usd, true), "cost_usd")));
}

function alignmentTable(report) {
  const first = report.first_divergence;
  const a = report.a.trace_id;
  const b = report.b.trace_id;
  return h("table", {class: "grid alignment", id: "alignment"},
    h("caption", null, "Steps aligned by edit distance over type, name and arguments"),
    h("thead", null,
      h("tr", null, h("th", {colspan: 2}), h("th", {colspan: 4, scope: "colgroup"}, "Run A"),
        h("th", {colspan: 4, scope: "colgroup"}, "Run B")),
      h("tr", null, ["Pos.", "Op", "#", "Type", "Step", "Agent", "#", "Type", "Step", "Agent"]
        .map((c) => h("th", {scope: "col"}, c)))),
    h("tbody", null, report.alignment.map((pair) => {
      const isFirst = first && pair.position === first.position;
      return h("tr", {class: `op-${pair.op}${isFirst ? " first-divergence" : ""}`,
        id: isFirst ? "divergence-row" : null, tabindex: isFirst ? "-1" : null,
        dataset: {op: pair.op, position: pair.position}},
      h("td", {class: "num"}, String(pair.position)),
      h("td", {class: "op"}, OPS[pair.op] || pair.op,
        isFirst ? h("strong", {class: "divergence-mark"}, " ◀ first divergence") : null),
      stepCells(pair.a, pair.b, a), stepCells(pair.b, pair.a, b));
    })));
}

function runHead(label, run) {
  return h("div", null, h("dt", null, label), h("dd", null,
    h("a", {class: "mono", href: link(`/trajectories/${run.trace_id}`)}, run.trace_id), " ",
    badge(run.status), h("span", {class: "muted small"}, ` revision ${run.revision}`)));
}

export async function renderCompare(ctx) {
  const {main, params} = ctx;
  const a = params.get("a");
  const b = params.get("b");
  main.append(h("div", {class: "crumbs"}, h("a", {href: link("/trajectories")}, "Trajectories"),
    " / "), h("h1", null, "Compare two runs"), pickForm(a, b));
  if (!a || !b) {
    main.append(h("p", {class: "muted"}, "Give two trace ids, or open a trajectory and use " +
      "“Compare with…”."));
    return;
  }
  main.append(h("p", {class: "muted"}, "Loading…"));
  const report = await get("/api/v1/trajectories/compare", {a, b});
  if (!ctx.alive()) return;
  main.lastChild.remove();
  const c = report.counts;
  append(main, [
    h("dl", {class: "facts"}, runHead("A", report.a), runHead("B", report.b)),
    divergenceNote(report.first_divergence, report),
    h("p", {id: "compare-counts"}, `${c.same} same · ${c.changed} changed · ${c.inserted} ` +
      `inserted · ${c.deleted} deleted · edit distance ${report.distance}`),
    report.a.status !== "final" || report.b.status !== "final"
      ? notice("A run is still open: the comparison may change when it is final.", "warn") : null,
    metricsTable(report), alignmentTable(report)]);
}

