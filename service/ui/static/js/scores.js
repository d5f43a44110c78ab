// Scores of a trajectory (GET /api/v1/trajectories/{id}/scores): the run's own scores in the
// page's header, each step's next to that step and in its detail, and every score in the
// Scores tab.

import {enc, get} from "./api.js";
import {fmtTime, h, headRow, truncate} from "./dom.js";

export function loadScores(traceId) {
  return get(`/api/v1/trajectories/${enc(traceId)}/scores`).then((data) => data.items);
}

/** A value as written: a number in full, true/false, a category as is; an error says so. */
export function scoreValue(score) {
  if (score.error) return "error";
  if (typeof score.value === "number") return String(Number(score.value.toPrecision(6)));
  return String(score.value);
}

function who(score) {
  if (score.source === "evaluator") return `evaluator ${score.evaluator || ""}`.trim();
  return score.author ? `${score.source} (${score.author})` : score.source;
}

/** One score as a chip: name = value; what it is, who gave it, why, in its title. */
export function scoreChip(score) {
  const kind = score.error ? "error" : score.data_type;
  const title = [`${score.name} = ${scoreValue(score)}`, `by ${who(score)}`,
    `revision ${score.revision}`, score.comment, score.error].filter(Boolean).join("\n");
  return h("span", {class: `score-chip score-${kind}`, title, dataset: {scoreName: score.name}},
    h("span", {class: "score-name"}, score.name), " ",
    h("strong", {class: "score-value"}, truncate(scoreValue(score), 40)));
}

/** Scores given as {name: value} (a session's means, a turn's latest scores) as chips; `what`
 * says what each value is, in its title. */
export function namedScores(map, what) {
  const names = Object.keys(map || {}).sort();
  if (!names.length) return h("span", {class: "muted"}, "—");
  return names.map((name) => {
    const value = map[name];
    const text = typeof value === "number" ? String(Number(value.toPrecision(4))) : String(value);
    return h("span", {class: `score-chip score-${typeof value === "number" ? "number" :
      typeof value === "boolean" ? "boolean" : "category"}`, title: `${name}: ${what}`,
    dataset: {scoreName: name}}, h("span", {class: "score-name"}, name), " ",
    h("strong", {class: "score-value"}, truncate(text, 40)));
  });
}

/** The trajectory's own scores (not a step's) for the header; "none" when it has none. */
export function runScores(scores) {
  const own = scores.filter((s) => !s.step_id);
  return own.length ? own.map(scoreChip) : h("span", {class: "muted"}, "none");
}

/** Every score, as a table (the Scores tab). */
export function scoreTable(scores, view) {
  if (!scores.length) {
    return h("p", {class: "muted", id: "score-table"}, "No scores yet. Add them over the API " +
      "(POST /api/v1/trajectories/{id}/scores), with `trajhub scores add`, or by evaluating " +
      "the run.");
  }
  const stepName = (id) => view.stepById.get(id)?.step.name
    || (id === view.doc.root_step?.id ? view.doc.root_step?.name : null);
  return h("table", {class: "grid", id: "score-table"},
    headRow(["Name", "Value", "On", "Source", "Revision", "Comment", "Created"]),
    h("tbody", null, scores.map((s) => h("tr", {dataset: {scoreId: String(s.id)}},
      h("td", null, s.name),
      h("td", {class: s.error ? "failed-text" : null}, s.error ? `error: ${s.error}` : scoreValue(s)),
      h("td", null, s.step_id
        ? [stepName(s.step_id) || h("span", {class: "muted"}, "(a step not in this revision)"),
          h("div", {class: "mono small muted"}, s.step_id)]
        : "the run"),
      h("td", null, who(s)),
      h("td", {class: "num"}, String(s.revision)),
      h("td", {class: "wrap"}, s.comment || ""),
      h("td", null, fmtTime(s.created_time))))));
}
