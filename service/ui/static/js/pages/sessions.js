// Sessions: the runs of a project that share a session (conversation, thread) id. The list
// pages on the server (cursor); a session reads as a chat transcript, each turn linking to its
// trajectory.

import {enc, get} from "../api.js";
import {costNode} from "../cost.js";
import {badge, clear, emptyRow, field, fmtInt, fmtMs, fmtTime, gridTable, h, notice, toLocal, truncate} from "../dom.js";
import {link} from "../router.js";
import {fillPager, filterForm, textInput} from "../lists.js";
import {namedScores} from "../scores.js";

const PAGE = 50;
const ERRORS = [["", "any"], ["true", "with a failed turn"], ["false", "without failures"]];
const WAITING = [["", "any"], ["true", "waiting for a person"], ["false", "not waiting"]];

function apiQuery(params) {
  const limit = Math.min(Math.max(Number(params.get("limit")) || PAGE, 1), 200);
  const query = {limit};
  // `sort=score:<name>` in the address sorts by a mean score (README "Sessions")
  for (const key of ["start", "end", "user_id", "agent", "has_error", "waiting", "score",
    "sort", "cursor"]) {
    if (params.get(key)) query[key] = params.get(key);
  }
  return query;
}

function sessionFilters(params) {
  return filterForm("/sessions", "Filter sessions",
    field("s-start", "A turn from", h("input", {id: "s-start", name: "start",
      type: "datetime-local", value: toLocal(params.get("start"))})),
    field("s-end", "A turn before", h("input", {id: "s-end", name: "end", type: "datetime-local",
      value: toLocal(params.get("end"))})),
    field("s-user_id", "User", textInput("s-", "user_id", params)),
    field("s-agent", "Agent", textInput("s-", "agent", params)),
    field("s-has_error", "Failures", h("select", {id: "s-has_error", name: "has_error"},
      ERRORS.map(([value, text]) =>
        h("option", {value, selected: (params.get("has_error") || "") === value}, text)))),
    field("s-waiting", "Waiting", h("select", {id: "s-waiting", name: "waiting"},
      WAITING.map(([value, text]) =>
        h("option", {value, selected: (params.get("waiting") || "") === value}, text)))),
    // a score condition as the trajectory list takes it, on any turn: correctness>=0.5
    field("s-score", "A turn's score", h("input", {id: "s-score", name: "score", type: "text",
      size: 16, spellcheck: "false", placeholder: "name>=0.5", value: params.get("score") || "",
      title: "<name><op><value>, op one of >=, <=, =, !="})),
    h("div", {class: "field buttons"},
      h("button", {type: "submit", class: "primary"}, "Apply"),
      h("a", {href: link("/sessions"), class: "button"}, "Clear")));
}

function sessionRow(item) {
  const failed = item.failed_turns;
  return h("tr", {class: failed ? "has-error" : null, dataset: {sessionId: item.session_id}},
    h("td", null, h("a", {href: link(`/sessions/${enc(item.session_id)}`)}, item.session_id)),
    h("td", {class: "num"}, fmtInt(item.turns)),
    h("td", {class: "nowrap"}, fmtTime(item.start_time)),
    h("td", {class: "nowrap"}, fmtTime(item.last_turn_time)),
    h("td", {class: "num", title: "input → output tokens"},
      `${fmtInt(item.input_tokens)} → ${fmtInt(item.output_tokens)}`),
    h("td", {class: "num cost"}, costNode(item.cost)),
    h("td", null, failed ? h("span", {class: "failed-text"},
      `${failed} failed ${failed === 1 ? "turn" : "turns"}`) : h("span", {class: "muted"}, "—"),
    item.open_turns ? [" ", badge(`${item.open_turns} open`, "open")] : null,
    // its latest turn was interrupted (LangGraph's interrupt()): a person is to answer
    item.waiting ? [" ", badge("waiting for a person", "waiting")] : null),
    h("td", null, (item.user_ids || []).join(", ") || h("span", {class: "muted"}, "—")),
    h("td", {class: "scores"}, namedScores(item.scores, "the mean over its turns")),
    h("td", {class: "preview"}, truncate(item.first_input_preview ?? "", 120)));
}

export async function renderSessions(ctx) {
  const {main, params} = ctx;
  main.append(h("h1", null, "Sessions"),
    h("p", {class: "muted small"}, "Runs that share a session, conversation or thread id, " +
      "the one with the latest turn first."), sessionFilters(params));
  const summary = h("p", {class: "summary", "aria-live": "polite"});
  const body = h("tbody");
  const table = gridTable("session-table", "Sessions, latest turn first",
    ["Session", "Turns", "First turn", "Last turn",
      "Tokens (in → out)", "Cost", "Failures", "Users", "Mean scores", "First input"], body);
  const pager = h("nav", {class: "pager", "aria-label": "Pages"});
  main.append(summary, table, pager);

  const page = await get("/api/v1/sessions", apiQuery(params));
  if (!ctx.alive()) return;
  body.append(...page.items.map(sessionRow));
  summary.textContent = `${page.items.length} sessions on this page`;
  if (!page.items.length) body.append(emptyRow(10,
    "No session matches these filters. A run is in a session when its instrumentation " +
    "recorded a session, conversation or thread id."));
  fillPager(pager, "/sessions", params, page.next_cursor);
}

function message(role, who, text, extra) {
  return h("div", {class: `msg role-${role}`},
    h("div", {class: "msg-head muted"}, who, extra),
    text === null || text === undefined
      ? h("div", {class: "msg-text muted"}, "(not recorded)")
      : h("div", {class: "msg-text"}, text));
}

function turnView(turn, index) {
  const failed = turn.has_error || turn.derivation_error;
  const meta = h("div", {class: "turn-meta small"},
    h("a", {href: link(`/trajectories/${turn.trace_id}`), class: "turn-link"},
      `Turn ${index + 1}`), " · ", fmtTime(turn.start_time), " · ", badge(turn.status),
    failed ? [" ", badge("failed")] : null,
    turn.interrupted ? [" ", badge("interrupted")] : null,
    " · ", fmtMs(turn.duration_ms), " · ",
    h("span", {title: "input → output tokens"},
      `${fmtInt(turn.input_tokens)} → ${fmtInt(turn.output_tokens)} tokens`),
    " · ", costNode(turn.cost),
    (turn.agent_names || []).length ? [" · ", turn.agent_names.join(", ")] : null,
    Object.keys(turn.scores || {}).length
      ? [" · ", h("span", {class: "turn-scores"},
        namedScores(turn.scores, "its latest score of that name"))] : null);
  return h("li", {class: `turn${failed ? " failed" : ""}`, dataset: {traceId: turn.trace_id}},
    meta,
    message("user", "User", turn.input, turn.user_id ? ` (${turn.user_id})` : ""),
    turn.derivation_error
      ? notice(`This run could not be turned into a trajectory: ${turn.derivation_error}`,
        "error")
      : message("assistant", "Assistant", turn.output, failed ? " — the run failed" : ""));
}

export async function renderSession(ctx) {
  const {main, args: [sessionId]} = ctx;
  main.append(h("p", {class: "crumbs"}, h("a", {href: link("/sessions")}, "Sessions"), " /"),
    h("h1", null, "Session ", h("span", {class: "mono"}, sessionId)));
  const doc = await get(`/api/v1/sessions/${enc(sessionId)}`);
  if (!ctx.alive()) return;
  const s = doc.summary;
  main.append(h("p", {class: "summary", id: "session-summary"},
    `${fmtInt(s.turns)} ${s.turns === 1 ? "turn" : "turns"} · ${fmtTime(s.start_time)} to ` +
    `${fmtTime(s.end_time)} · ${fmtInt(s.input_tokens)} → ${fmtInt(s.output_tokens)} tokens · `,
    costNode(s.cost),
    s.failed_turns ? [" · ", h("span", {class: "failed-text"},
      `${s.failed_turns} failed ${s.failed_turns === 1 ? "turn" : "turns"}`)] : null,
    (s.user_ids || []).length ? ` · users: ${s.user_ids.join(", ")}` : "",
    Object.keys(s.scores || {}).length
      ? [" · mean scores: ", namedScores(s.scores, "the mean over its turns")] : null));
  main.append(h("ol", {class: "transcript", id: "transcript", "aria-label": "Turns, oldest first"},
    doc.turns.map(turnView)));
  if (doc.truncated) {
    main.append(notice(`Showing the first ${doc.turns.length} of ${s.turns} turns.`));
  }
}
