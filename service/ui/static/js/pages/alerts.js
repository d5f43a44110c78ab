// Monitoring alerts (docs/alerts.md): the project's alert rules with their state, mute and
// delete buttons, a rule's history of states, and a form to create one. Creating, muting and
// deleting need an admin key; the server's 4xx message (thresholds in the wrong order, a bad
// webhook address) is shown as is. The signing secret is shown once, when the rule is created.

import {actions, del, get, patch, post} from "../api.js";
import {badge, clear, fmtTime, h, headRow, labelledFields, recordsPage, rowButton} from "../dom.js";

const METRICS = [
  ["error_rate", "error rate (0–1)"],
  ["p95_latency_ms", "p95 latency (ms)"],
  ["cost_usd", "cost (USD)"],
  ["runs", "runs"],
  ["score_mean", "a score's mean"],
];
const FILTERS = [["agent", "Agent"], ["model", "Model"], ["run_name", "Run name"],
  ["release", "Release"]];

/** Every item of a cursor-paged list. */
async function everyItem(path) {
  const items = [];
  let cursor = null;
  do {
    const page = await get(path, cursor ? {cursor} : null);
    items.push(...page.items);
    cursor = page.next_cursor;
  } while (cursor);
  return items;
}

function stateBadge(state) {
  // the trajectory list's colours: failed, waiting, done
  return badge(state, {firing: "failed", warning: "waiting", resolved: "done"}[state]);
}

function number(value) {
  return value === null || value === undefined ? "—" : String(Math.round(value * 1e4) / 1e4);
}

export async function renderAlerts(ctx) {
  const {status, fill, place} = recordsPage(ctx.main, {title: "Alerts",
    intro: "Each rule measures the project's final runs over a window and POSTs every change " +
      "of its state (resolved, warning, firing) to its webhook.",
    id: "alert", caption: "Alert rules, oldest first",
    columns: ["Name", "Measures", "Window", "State", "Value", "Evaluated", ""],
    empty: "No alert rule yet. Create one below, or with `trajhub alerts create`."});
  const history = h("section", {id: "alert-history", "aria-live": "polite"});

  const act = actions(status, () => draw());

  // the history, and the table redrawn beside it (the server evaluates apart from the page)
  const showHistory = async (rule) => {
    const events = await everyItem(`/api/v1/alerts/${rule.id}/events`);
    await draw();
    if (!ctx.alive()) return;
    clear(history).append(h("h2", null, `History of ${rule.name}`),
      events.length ? h("table", {class: "grid", id: "alert-events"},
        headRow(["When", "From", "To", "Value", "Notification"]),
        h("tbody", null, events.map((e) => h("tr", null,
          h("td", null, fmtTime(e.created_time)), h("td", null, e.previous_state),
          h("td", null, stateBadge(e.state)), h("td", {class: "num"}, number(e.value)),
          h("td", null, e.delivery + (e.attempts ? ` (${e.attempts} failed)` : ""))))))
        : h("p", {class: "muted"}, "No change of state yet."));
  };

  const draw = async () => {
    const rules = await everyItem("/api/v1/alerts");
    if (!ctx.alive()) return;
    fill(rules, (rule) => {
      const warn = rule.warning_threshold === null ? "" : `, warning ${rule.warning_threshold}`;
      const what = `${rule.metric}${rule.score_name ? ` (${rule.score_name})` : ""} ` +
        `${rule.condition} ${rule.alert_threshold}${warn}`;
      const filters = Object.entries(rule.filter).map(([k, v]) => `${k}=${v}`).join(", ");
      const mute = rowButton("alert-mute", `${rule.muted ? "Unmute" : "Mute"} alert ${rule.name}`,
        rule.muted ? "Unmute" : "Mute",
        () => act(() => patch(`/api/v1/alerts/${rule.id}`, {muted: !rule.muted}),
          `Alert ${rule.name} ${rule.muted ? "unmuted" : "muted"}.`), rule.muted);
      const remove = rowButton("alert-delete", `Delete alert ${rule.name}`, "Delete",
        () => act(() => del(`/api/v1/alerts/${rule.id}`), `Alert ${rule.name} deleted.`));
      const show = rowButton("alert-history", `History of alert ${rule.name}`, "History",
        () => showHistory(rule));
      return h("tr", {dataset: {alertId: String(rule.id)}},
        h("td", null, rule.name),
        h("td", null, what, filters ? h("div", {class: "muted small"}, filters) : null),
        h("td", {class: "num"}, `${rule.window_seconds} s`),
        h("td", null, stateBadge(rule.state), rule.muted ? " muted" : ""),
        h("td", {class: "num"}, number(rule.last_value)),
        h("td", null, rule.evaluated_time ? fmtTime(rule.evaluated_time) : "—"),
        h("td", null, show, " ", mute, " ", remove));
    });
  };

  const input = (id, attrs) => h("input", {id, name: id, ...attrs});
  const name = input("alert-name", {required: true, placeholder: "errors"});
  const metric = h("select", {id: "alert-metric", name: "metric"},
    METRICS.map(([value, text]) => h("option", {value}, text)));
  const score = input("alert-score", {placeholder: "helpful"});
  const condition = h("select", {id: "alert-condition", name: "condition"},
    h("option", {value: "above"}, "above"), h("option", {value: "below"}, "below"));
  const warning = input("alert-warning", {type: "number", step: "any"});
  const threshold = input("alert-threshold", {type: "number", step: "any", required: true});
  const windowSeconds = input("alert-window", {type: "number", min: "60", step: "1",
    value: "900", required: true});
  const webhook = input("alert-webhook", {type: "url", required: true,
    placeholder: "your receiver's http(s) address"});
  const filterInputs = FILTERS.map(([key]) => input(`alert-${key.replace("_", "-")}`, {}));

  const form = h("form", {class: "filters", id: "alert-form", "aria-label": "Alert rule",
    onsubmit: (event) => {
      event.preventDefault();
      const filter = {};
      FILTERS.forEach(([key], i) => {
        if (filterInputs[i].value) filter[key] = filterInputs[i].value;
      });
      const fields = {name: name.value, metric: metric.value, condition: condition.value,
        score_name: score.value || null,
        warning_threshold: warning.value === "" ? null : Number(warning.value),
        alert_threshold: Number(threshold.value), window_seconds: Number(windowSeconds.value),
        webhook_url: webhook.value, filter};
      act(async () => {
        const created = await post("/api/v1/alerts", fields);
        form.reset();
        windowSeconds.value = "900";
        return created;
      }, (created) => `Alert ${created.name} created. Its signing secret, shown once: ` +
        created.secret);
    }},
  h("h2", null, "New alert rule"),
  labelledFields([["Name", name], ["Metric", metric], ["Score name (score mean)", score],
    ["Breached when", condition], ["Warning threshold", warning],
    ["Alert threshold", threshold], ["Window (seconds)", windowSeconds],
    ...FILTERS.map(([, text], i) => [`${text} (optional)`, filterInputs[i]]),
    ["Webhook URL", webhook]]),
  h("div", {class: "field buttons"}, h("button", {type: "submit", class: "primary"},
    "Create alert")));
  place(history, form);
  await draw();
}
