// Monitoring: a project's runs over time, read from the rollups kept as runs become final
// (GET /api/v1/timeseries, docs/monitoring.md). Each point opens the trajectory list filtered
// to its bucket and group.

import {get} from "../api.js";
import {timeChart} from "../charts.js";
import {fmtUsd} from "../cost.js";
import {clear, field, fmtInt, fmtMs, fmtPct, fmtScore, h, notice, toLocal} from "../dom.js";
import {filterForm} from "../lists.js";
import {link, navigate} from "../router.js";

const HOUR_MS = 3_600_000;
const BUCKET_MS = {minute: 60_000, hour: HOUR_MS, day: 24 * HOUR_MS};
const GROUPS = [["", "nothing"], ["run_name", "run name"], ["model", "model"],
  ["agent", "agent"], ["release", "release"], ["prompt_version", "prompt version"]];

/** The range and bucket the address asks for: by default the last 24 hours, by the hour. */
function chosen(params) {
  const end = params.get("end") ? new Date(params.get("end")) : new Date();
  const start = params.get("start") ? new Date(params.get("start"))
    : new Date(end.getTime() - 24 * HOUR_MS);
  const span = end - start;
  const bucket = params.get("bucket") ||
    (span <= 2 * HOUR_MS ? "minute" : span <= 7 * 24 * HOUR_MS ? "hour" : "day");
  return {start: start.toISOString(), end: end.toISOString(), bucket,
    groupBy: params.get("group_by") || "", score: params.get("score") || ""};
}

function controls(params, c) {
  const select = (id, name, options, value) => h("select", {id, name},
    options.map(([v, text]) => h("option", {value: v, selected: v === value}, text)));
  return filterForm("/monitoring", "Chart range",
    field("m-start", "From", h("input", {id: "m-start", name: "start", type: "datetime-local",
      value: toLocal(c.start)})),
    field("m-end", "To", h("input", {id: "m-end", name: "end", type: "datetime-local",
      value: toLocal(c.end)})),
    field("m-bucket", "Bucket", select("m-bucket", "bucket",
      [["", "automatic"], ["minute", "minute"], ["hour", "hour"], ["day", "day"]],
      params.get("bucket") || "")),
    field("m-group_by", "Group by", select("m-group_by", "group_by", GROUPS, c.groupBy)),
    h("input", {type: "hidden", name: "score", value: c.score}),
    h("div", {class: "field buttons"},
      h("button", {type: "submit", class: "primary"}, "Apply"),
      h("a", {href: link("/monitoring"), class: "button"}, "Last 24 hours")));
}

/** The answer's series laid over one time axis: `times` (Unix seconds) and, per series, its
 * point at each time (undefined where the bucket had no runs). */
function aligned(answer) {
  const seconds = new Set();
  for (const s of answer.series) for (const p of s.points) seconds.add(Date.parse(p.time) / 1000);
  const times = [...seconds].sort((a, b) => a - b);
  const at = new Map(times.map((t, i) => [t, i]));
  const series = answer.series.map((s) => {
    const points = new Array(times.length).fill(undefined);
    for (const p of s.points) points[at.get(Date.parse(p.time) / 1000)] = p;
    return {group: s.group, points};
  });
  return {times, series};
}

function label(group, groupBy) {
  if (!groupBy) return "all runs";
  return group === null ? `(no ${groupBy.replace("_", " ")})` : group;
}

export async function renderMonitoring(ctx) {
  const {main, params} = ctx;
  const c = chosen(params);
  main.append(h("h1", null, "Monitoring"),
    h("p", {class: "muted small"}, "Final runs by the time they started: counts, failures, " +
      "latency, tokens, cost and scores. A point opens the runs behind it."),
    controls(params, c));
  const status = h("p", {class: "summary", "aria-live": "polite"}, "Loading…");
  const board = h("div", {class: "charts", id: "charts"});
  main.append(status, board);
  const query = {start: c.start, end: c.end, bucket: c.bucket};
  const [answer, byModel] = await Promise.all([
    get("/api/v1/timeseries", c.groupBy ? {...query, group_by: c.groupBy} : query),
    get("/api/v1/timeseries", {...query, group_by: "model"}),
  ]);
  if (!ctx.alive()) return;
  const main_ = aligned(answer);
  const models = aligned(byModel);
  const runs = main_.series.reduce((n, s) => n + s.points.reduce((m, p) => m + (p ? p.runs : 0),
    0), 0);
  status.textContent = `${fmtInt(runs)} final runs from ${c.start} to ${c.end}, ` +
    `by the ${answer.bucket}.`;

  /** The trajectory list of the bucket `i` of `times`, narrowed to `filters`. */
  const runsOf = (times, i, filters) => {
    const from = times[i] * 1000;
    // final runs, those without steps too: exactly the runs the rollups count
    return ["/trajectories", {start: new Date(from).toISOString(),
      end: new Date(from + BUCKET_MS[answer.bucket]).toISOString(),
      status: "final", empty: "show", ...filters}];
  };
  const groupFilter = (group, groupBy) =>
    (groupBy && group !== null ? {[groupBy]: group} : {});
  const chart = (id, title, {times, series}, groupBy, lines, format, extra = {}) => {
    const drawn = lines.flatMap(([suffix, value]) => series.map((s) => ({
      label: suffix ? `${label(s.group, groupBy)} ${suffix}` : label(s.group, groupBy),
      values: s.points.map((p) => value(p)), group: s.group})));
    const target = (i, n) => runsOf(times, i, {...groupFilter(drawn[n].group, groupBy),
      ...extra});
    return timeChart({id, title, times, lines: drawn, format,
      href: (i, n) => link(...target(i, n)), open: (i, n) => navigate(...target(i, n))});
  };
  const orZero = (f) => (p) => (p ? f(p) : 0);
  const orNull = (f) => (p) => (p ? f(p) : null);
  const g = c.groupBy;

  clear(board);
  board.append(
    chart("chart-runs", "Runs", main_, g, [["", orZero((p) => p.runs)]], fmtInt),
    chart("chart-errors", "Error rate", main_, g,
      [["", orNull((p) => (p.runs ? p.failed_runs / p.runs : null))]], fmtPct,
      {errors: "has_error"}),
    chart("chart-latency", "Latency (p50 and p95)", main_, g,
      [["p50", orNull((p) => p.latency_p50_ms)], ["p95", orNull((p) => p.latency_p95_ms)]],
      fmtMs),
    chart("chart-tokens", "Tokens", main_, g,
      g ? [["", orZero((p) => p.input_tokens + p.output_tokens)]]
        : [["in", orZero((p) => p.input_tokens)], ["out", orZero((p) => p.output_tokens)]],
      fmtInt),
    chart("chart-cost", "Cost by model", models, "model",
      [["", orZero((p) => p.cost_usd)]], (v) => fmtUsd(v)));

  // the score chart: a name the runs have, chosen here
  const names = [...new Set(answer.series.flatMap((s) => s.points.flatMap((p) =>
    p.scores.map((x) => x.name))))].sort();
  if (!names.length) {
    board.append(notice("No scores on these runs.", "info"));
    return;
  }
  const name = names.includes(c.score) ? c.score : names[0];
  const picker = h("select", {id: "m-score", onchange: () => navigate("/monitoring",
    {...Object.fromEntries(params), start: c.start, end: c.end, score: picker.value})},
  names.map((n) => h("option", {value: n, selected: n === name}, n)));
  board.append(h("div", {class: "chart-block"},
    field("m-score", "Score", picker),
    chart("chart-score", `Mean ${name}`, main_, g, [["", orNull((p) => {
      const s = p.scores.find((x) => x.name === name);
      return s && s.count ? s.sum / s.count : null;
    })]], fmtScore)));
}
