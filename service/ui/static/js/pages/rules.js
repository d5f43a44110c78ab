// Online evaluation rules (docs/rules.md): the project's rules with their switch and queued
// runs, and a form to create one or edit one. Creating, editing, switching and deleting need
// an admin key; the server's 4xx message (an unknown evaluator, a filter that does not parse)
// is shown as is.

import {actions, del, get, patch, post} from "../api.js";
import {fmtInt, fmtTime, h, labelledFields, recordsPage, rowButton} from "../dom.js";

/** The evaluators a rule may name, as /openapi.json lists them (RuleCreate.evaluator). */
async function evaluatorNames() {
  try {
    const response = await fetch(new URL("openapi.json", document.baseURI));
    const doc = await response.json();
    const names = doc.components.schemas.RuleCreate.properties.evaluator.enum;
    return Array.isArray(names) ? names : [];
  } catch {
    return [];
  }
}

function jsonObject(text, what) {
  if (!text.trim()) return {};
  let value;
  try {
    value = JSON.parse(text);
  } catch (error) {
    throw new Error(`${what} is not JSON: ${error.message}`);
  }
  if (value === null || typeof value !== "object" || Array.isArray(value)) {
    throw new Error(`${what} must be a JSON object`);
  }
  return value;
}

export async function renderRules(ctx) {
  const {status, fill, place} = recordsPage(ctx.main, {title: "Online evaluation rules",
    intro: "Each rule that is on judges every new final trajectory matching its filter, and " +
      "stores the verdict as a score on it.",
    id: "rule", caption: "Rules, oldest first",
    columns: ["Name", "Evaluator", "Filter", "Sample", "On", "Queued", "Created", ""],
    empty: "No rule yet. Create one below, or with `trajhub rules add`."});

  const draw = async () => {
    const {items: rules} = await get("/api/v1/rules");
    if (!ctx.alive()) return;
    fill(rules, (rule) => {
      const toggle = rowButton("rule-toggle",
        `${rule.enabled ? "Switch off" : "Switch on"} rule ${rule.name}`,
        rule.enabled ? "on" : "off",
        () => act(() => patch(`/api/v1/rules/${rule.id}`, {enabled: !rule.enabled}),
          `Rule ${rule.name} switched ${rule.enabled ? "off" : "on"}.`), rule.enabled);
      const edit = rowButton("rule-edit", `Edit rule ${rule.name}`, "Edit",
        () => startEditing(rule));
      const remove = rowButton("rule-delete", `Delete rule ${rule.name}`, "Delete",
        () => act(() => del(`/api/v1/rules/${rule.id}`),
          `Rule ${rule.name} deleted (its scores stay).`));
      return h("tr", {dataset: {ruleId: String(rule.id)}},
        h("td", null, rule.name),
        h("td", null, rule.evaluator),
        h("td", {class: "mono small"}, JSON.stringify(rule.filter)),
        h("td", {class: "num"}, String(rule.sample_rate)),
        h("td", null, toggle),
        h("td", {class: "num"}, fmtInt(rule.pending_runs)),
        h("td", null, fmtTime(rule.created_time)),
        h("td", null, edit, " ", remove));
    });
  };

  const act = actions(status, draw);

  const names = await evaluatorNames();
  if (!ctx.alive()) return;
  const name = h("input", {id: "rule-name", name: "name", required: true, placeholder: "budget"});
  const evaluator = names.length
    ? h("select", {id: "rule-evaluator", name: "evaluator"},
      names.map((n) => h("option", {value: n, selected: n === "efficiency"}, n)))
    : h("input", {id: "rule-evaluator", name: "evaluator", required: true});
  const config = h("textarea", {id: "rule-config", name: "config", rows: 2,
    placeholder: "{\"max_steps\": 20}"});
  const filter = h("textarea", {id: "rule-filter", name: "filter", rows: 2,
    placeholder: "{\"agent\": \"planner\"}"});
  const sample = h("input", {id: "rule-sample", name: "sample_rate", type: "number", min: "0",
    max: "1", step: "any", value: "1"});
  const queue = h("input", {id: "rule-queue", name: "review_queue", placeholder: "triage"});
  const failBelow = h("input", {id: "rule-fail-below", name: "fail_below", type: "number",
    min: "0", max: "1", step: "any", value: "1"});
  // the rule being edited (null: the form creates a new one)
  let editing = null;
  const heading = h("h2", null, "New rule");
  const submit = h("button", {type: "submit", class: "primary"}, "Create rule");
  const cancel = h("button", {type: "button", hidden: true, onclick: () => stopEditing()},
    "Cancel");
  const stopEditing = () => {
    editing = null;
    form.reset();
    heading.textContent = "New rule";
    submit.textContent = "Create rule";
    cancel.hidden = true;
  };
  const startEditing = (rule) => {
    editing = rule;
    name.value = rule.name;
    evaluator.value = rule.evaluator;
    config.value = JSON.stringify(rule.config);
    filter.value = JSON.stringify(rule.filter);
    sample.value = String(rule.sample_rate);
    queue.value = rule.review_queue || "";
    failBelow.value = String(rule.fail_below);
    heading.textContent = `Edit rule ${rule.name}`;
    submit.textContent = "Save rule";
    cancel.hidden = false;
    name.focus();
  };
  const form = h("form", {class: "filters", id: "rule-form", "aria-label": "Rule",
    onsubmit: (event) => {
      event.preventDefault();
      const fields = {
        name: name.value, evaluator: evaluator.value,
        config: jsonObject(config.value, "Config"), filter: jsonObject(filter.value, "Filter"),
        sample_rate: Number(sample.value), review_queue: queue.value || null,
        fail_below: Number(failBelow.value)};
      const rule = editing;
      act(async () => {
        if (rule) await patch(`/api/v1/rules/${rule.id}`, fields);
        else await post("/api/v1/rules", fields);
        stopEditing();
      }, rule ? `Rule ${fields.name} saved.` : `Rule ${fields.name} created.`);
    }},
  heading,
  labelledFields([["Name", name], ["Evaluator", evaluator], ["Config (JSON)", config],
    ["Filter (the trajectory list's filters, JSON)", filter], ["Sample rate (0–1)", sample],
    ["Review queue for failures (optional)", queue], ["A failure scores below", failBelow]]),
  h("div", {class: "field buttons"}, submit, cancel));
  place(form);
  await draw();
}
