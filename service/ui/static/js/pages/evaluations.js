// Evaluations: pass rate and mean score per evaluator; a run's failed items with reasons;
// two runs of one set compared as a regression report.

import {enc, get} from "../api.js";
import {link, navigate} from "../router.js";
import {append, badge, clear, emptyRow, field, fmtInt, fmtPct, fmtScore, fmtTime, gridTable, h, headRow, notice, pre} from "../dom.js";

const REFRESH_MS = 2000;

function aggregateList(run) {
  if (!run.aggregates) return h("span", {class: "muted"}, "…");
  if (!run.aggregates.length) return h("span", {class: "muted"}, "no results yet");
  return h("ul", {class: "plain small"}, run.aggregates.map((a) => h("li", null,
    h("strong", null, a.evaluator), ` pass ${fmtPct(a.pass_rate)} · mean ${fmtScore(a.mean_score)}`,
    a.errors ? h("span", {class: "failed-text"}, ` · ${a.errors} errors`) : "")));
}

export async function renderEvaluations(ctx) {
  const {main, params} = ctx;
  main.append(h("h1", null, "Evaluations"));
  const page = await get("/api/v1/evaluations", {limit: 20, cursor: params.get("cursor")});
  if (!ctx.alive()) return;
  const body = h("tbody");
  main.append(gridTable("evaluation-table", "Evaluations, newest first",
    ["Run", "Set", "Target", "Status", "Items", "Per evaluator", "Started"], body));
  if (!page.items.length) {
    body.append(emptyRow(7,
      "No evaluation yet. Start one with `trajhub eval run` or POST /api/v1/evaluations."));
  }
  for (const run of page.items) {
    const aggregates = h("td");
    aggregates.append(aggregateList(run));
    body.append(h("tr", null,
      h("td", null, h("a", {href: link(`/evaluations/${run.id}`)}, `#${run.id}`)),
      h("td", null, h("a", {href: link(`/datasets/${enc(run.dataset)}`)}, run.dataset)),
      h("td", null, run.target === "live" ? `live · ${run.run}` : "snapshot"),
      h("td", null, badge(run.status)),
      h("td", {class: "num"}, `${fmtInt(run.done_items)} / ${fmtInt(run.item_count)}`),
      aggregates,
      h("td", null, fmtTime(run.created_time))));
    // the list has no aggregates: each run's own page has them
    get(`/api/v1/evaluations/${run.id}`).then((full) => {
      if (ctx.alive()) clear(aggregates).append(aggregateList(full));
    }).catch((error) => { if (ctx.alive()) clear(aggregates).append(String(error.message)); });
  }
  if (page.items.length) main.append(regressionForm(page.items));
  if (page.next_cursor) {
    main.append(h("nav", {class: "pager", "aria-label": "Pages"},
      h("a", {class: "button", href: link("/evaluations", {cursor: page.next_cursor})}, "Older runs →")));
  }
}

/** Pick a baseline and a candidate among the listed runs: opens their regression report. */
function regressionForm(runs) {
  const options = (selected) => runs.map((run) => h("option", {value: String(run.id),
    selected: run.id === selected}, `#${run.id} · ${run.dataset}` +
    (run.target === "live" ? ` · run ${run.run}` : " · snapshot")));
  // default: the newest run against the one before it
  const baseline = h("select", {id: "regression-baseline", name: "baseline_evaluation"},
    options(runs[Math.min(1, runs.length - 1)].id));
  const candidate = h("select", {id: "regression-candidate", name: "candidate_evaluation"},
    options(runs[0].id));
  return h("form", {class: "filters", id: "regression-form",
    "aria-label": "Regression report of two runs", onsubmit: (event) => {
      event.preventDefault();
      navigate("/regressions", {baseline_evaluation: baseline.value,
        candidate_evaluation: candidate.value});
    }},
  h("h2", null, "Regression report: compare two runs of one set"),
  field("regression-baseline", "Baseline", baseline),
  field("regression-candidate", "Candidate", candidate),
  h("div", {class: "field buttons"}, h("button", {type: "submit", class: "primary"},
    "Show regression report"),
  h("a", {class: "button", href: link("/regressions")}, "By run name…")));
}

function reasonNode(result) {
  if (result.error) return h("div", {class: "failed-text"}, `error: ${result.error}`);
  if (result.explanation) return pre(result.explanation, "text");
  return result.reason ? pre(JSON.stringify(result.reason, null, 2)) : h("span", {class: "muted"}, "—");
}

export async function renderEvaluation(ctx) {
  const {main, args: [id]} = ctx;
  const container = h("div");
  main.append(container);
  const draw = async () => {
    const [run, failures] = await Promise.all([
      get(`/api/v1/evaluations/${enc(id)}`),
      get(`/api/v1/evaluations/${enc(id)}/results`, {failed: "true", limit: 500})]);
    if (!ctx.alive()) return;
    append(clear(container), [
      h("div", {class: "crumbs"}, h("a", {href: link("/evaluations")}, "Evaluations"), " / "),
      h("h1", null, `Evaluation #${run.id} `, badge(run.status)),
      h("p", null, "Set ", h("a", {href: link(`/datasets/${enc(run.dataset)}`)}, run.dataset),
        ` · ${run.target === "live" ? `live run ${run.run}` : "snapshot"} · started `,
        fmtTime(run.created_time), run.finished_time ? [" · finished ", fmtTime(run.finished_time)] : ""),
      run.error ? notice(run.error, "error") : null,
      h("p", {id: "item-outcomes"},
        `${fmtInt(run.items.evaluated)} of ${fmtInt(run.items.total)} items evaluated: ` +
        `${fmtInt(run.items.passed)} passed every evaluator, ${fmtInt(run.items.failed)} did not` +
        (run.items.errors ? ` (${fmtInt(run.items.errors)} with errors)` : "") + "."),
      h("table", {class: "grid", id: "aggregate-table"},
        h("caption", null, "Per evaluator"),
        headRow(["Evaluator", "Results", "Passed", "Failed", "Errors", "Pass rate", "Mean score"]),
        h("tbody", null, run.aggregates.map((a) => h("tr", null,
          h("td", null, a.evaluator), h("td", {class: "num"}, fmtInt(a.total)),
          h("td", {class: "num"}, fmtInt(a.passed)), h("td", {class: "num"}, fmtInt(a.failed)),
          h("td", {class: "num"}, fmtInt(a.errors)), h("td", {class: "num"}, fmtPct(a.pass_rate)),
          h("td", {class: "num"}, fmtScore(a.mean_score)))))),
      h("h2", null, `Failed items (${failures.items.length}${failures.next_cursor ? "+" : ""})`),
      failures.items.length ? h("table", {class: "grid", id: "failure-table"},
        headRow(["Item", "Evaluator", "Score", "Why", "Trajectory"]),
        h("tbody", null, failures.items.map((r) => h("tr", {class: "failed"},
          h("td", {class: "mono small"}, r.item_id),
          h("td", null, r.evaluator),
          h("td", {class: "num"}, fmtScore(r.score)),
          h("td", {class: "reason"}, reasonNode(r)),
          h("td", null, r.trace_id ? h("a", {href: link(`/trajectories/${r.trace_id}`)},
            "open trajectory") : h("span", {class: "muted"}, "—"))))))
        : h("p", {class: "muted"}, run.status === "running" ? "None so far." : "No failures.")]);
    if (run.status === "running") {
      setTimeout(() => { if (ctx.alive()) draw().catch(console.warn); }, REFRESH_MS);
    }
  };
  await draw();
}
