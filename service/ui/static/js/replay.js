// The replay views of one trajectory: its playback (the step events of
// GET /trajectories/{id}/events, in the order they happened), its run contract and its cost.

import {ApiError, download, enc, get, request} from "./api.js";
import {costNode, fmtUsd, priceSourcesText, unpricedText} from "./cost.js";
import {fmtInt, fmtMs, h, headRow} from "./dom.js";
import {payload} from "./payload.js";

/** The playback events: one JSON object per NDJSON line. */
// a large run's playback shows its first events (docs/large-traces.md)
const EVENTS_SHOWN = 1000;

export async function loadEvents(traceId) {
  const response = await request(`/api/v1/trajectories/${enc(traceId)}/events`,
    {raw: true, query: {limit: EVENTS_SHOWN}});
  if (!response.ok) {
    const body = await response.json().catch(() => ({}));
    throw new ApiError(response.status, body.detail);
  }
  const text = await response.text();
  return {revision: response.headers.get("X-Trajectory-Revision"),
    total: Number(response.headers.get("X-Total-Count")),
    events: text.split("\n").filter((line) => line.trim()).map((line) => JSON.parse(line))};
}

export const loadContract = (traceId) => get(`/api/v1/trajectories/${enc(traceId)}/contract`);
export const loadCost = (traceId) => get(`/api/v1/trajectories/${enc(traceId)}/cost`);

function tokensText(tokens) {
  if (!tokens) return "";
  return `${fmtInt(tokens.input)} → ${fmtInt(tokens.output)} tok`;
}

function eventItem(event, t0) {
  const kind = event.type === "tool" ? "json" : "messages";
  const error = event.error;
  const cost = event.cost;
  const summary = h("summary", null,
    h("span", {class: "num muted seq"}, `${event.seq}`),
    h("span", {class: "num when"}, `+${fmtMs(Date.parse(event.start_time) - t0)}`),
    h("span", {class: "event-agent", title: event.agent_path.join(" › ")}, event.agent),
    h("span", {class: `type type-${event.type}`}, event.type),
    h("strong", {class: "event-name"}, event.name),
    h("span", {class: "muted"}, fmtMs(event.duration_ms)),
    event.tokens ? h("span", {class: "muted"}, tokensText(event.tokens)) : null,
    cost ? h("span", {class: cost.usd === null ? "unknown-cost" : "muted"},
      cost.usd === null ? `cost unknown (no price for ${event.model || "an unrecorded model"})`
        : fmtUsd(cost.usd)) : null,
    error ? h("span", {class: "failed-text"}, `✗ ${error.msg || `code ${error.code}`}`) : null);
  return h("li", {class: `event${error ? " failed" : ""}`, dataset: {seq: event.seq,
    stepId: event.step_id, agent: event.agent}},
  h("details", null, summary,
    h("div", {class: "event-body"},
      h("p", {class: "small muted"}, `agent path: ${event.agent_path.join(" › ")} · step ` +
        `${event.step_id}` + (event.model ? ` · model ${event.model}` : "") +
        (event.tool_call_id ? ` · call ${event.tool_call_id}` : "") +
        (event.arguments_hash ? ` · arguments ${event.arguments_hash}` : "")),
      error ? h("div", {class: "error-box"}, h("strong", null, `Error ${error.code ?? ""}: `),
        error.msg || "(no message)") : null,
      h("h3", null, event.type === "tool" ? "Arguments" : "Input"), payload(event.input, kind),
      h("h3", null, event.type === "tool" ? "Result" : "Output"), payload(event.output, kind))));
}

/** The playback: every event in order, its head line always visible, its payloads on demand. */
export function playbackView(data, view) {
  const {events} = data;
  const t0 = events.length ? Math.min(...events.map((e) => Date.parse(e.start_time))) : 0;
  const agents = new Set(events.map((e) => e.agent_step_id)).size;
  const failed = events.filter((e) => e.error).length;
  const list = h("ol", {class: "playback", id: "playback"}, events.map((e) => eventItem(e, t0)));
  const toggle = (open) => {
    for (const li of list.children) if (!li.hidden) li.querySelector("details").open = open;
  };
  // a multi-agent run: show one agent's events only
  const names = [...new Set(events.map((e) => e.agent))];
  const shown = h("span", {class: "muted small", role: "status"});
  const filter = names.length > 1 ? h("div", {class: "field inline-field"},
    h("label", {for: "playback-agent"}, "Agent"),
    h("select", {id: "playback-agent", onchange: (event) => {
      const only = event.target.value;
      let count = 0;
      for (const li of list.children) {
        li.hidden = Boolean(only) && li.dataset.agent !== only;
        if (!li.hidden) count++;
      }
      shown.textContent = only ? `${count} of ${events.length} events shown` : "";
    }}, h("option", {value: ""}, "all agents"), names.map((name) =>
      h("option", {value: name}, name))), shown) : null;
  return h("div", {id: "playback-view"},
    h("p", {id: "playback-summary"}, `${events.length} events from ${agents} ` +
      `${agents === 1 ? "agent" : "agents"}, in the order they started` +
      (failed ? `; ${failed} failed` : "") + ` (revision ${data.revision ?? "?"}). ` +
      "Nothing is re-run: this is the recording." +
      (data.total > events.length ? ` The first ${events.length} of ${data.total} events are ` +
        "shown; GET /api/v1/trajectories/{id}/events gives them all." : "")),
    h("div", {class: "actions"}, filter,
      h("button", {type: "button", onclick: () => toggle(true)}, "Expand all"),
      h("button", {type: "button", onclick: () => toggle(false)}, "Collapse all"),
      h("button", {type: "button", onclick: () => download(
        `/api/v1/trajectories/${enc(view.traceId)}/events`, null,
        `${view.traceId}.events.ndjson`).catch((error) => console.warn(error))},
      "Download NDJSON")),
    list);
}

const CONTRACT_FIELDS = [
  ["model_names", "Model name"], ["model_versions", "Model version"],
  ["model_providers", "Provider"], ["system_prompt_hash", "System prompt hash"],
  ["system_prompt_version", "System prompt version"], ["tool_schema_hash", "Tool schema hash"],
  ["tool_names", "Tools"], ["framework", "Framework"], ["framework_version", "Framework version"],
  ["instrumentation", "Instrumentation"], ["sdk", "SDK"], ["service_version", "Service version"],
];

function valueText(value) {
  return typeof value === "string" ? value : JSON.stringify(value);
}

function contractRows(label, field, key) {
  if (!field.known || !field.values.length) {
    return [h("tr", {class: "unknown", dataset: {field: key}},
      h("th", {scope: "row"}, label), h("td", {class: "muted"}, "unknown"),
      h("td", {class: "muted"}, "nothing in the run recorded this"))];
  }
  return field.values.map((v, i) => h("tr", {dataset: {field: key}},
    i === 0 ? h("th", {scope: "row", rowspan: field.values.length}, label) : null,
    h("td", {class: "mono wrap"}, valueText(v.value)),
    h("td", {class: "small mono"}, v.source)));
}

/** The run contract: each field's values with where they were read, or "unknown". */
export function contractView(data) {
  const sampling = Object.entries(data.sampling || {});
  return h("div", {id: "contract"},
    h("p", null, `What the run was, as its instrumentation recorded it (revision ` +
      `${data.revision}). ${data.unknown.length} fields unknown.`),
    h("table", {class: "grid kv contract", id: "contract-table"},
      h("caption", {class: "sr-only"}, "Run contract"),
      headRow(["Field", "Value", "Source"]),
      h("tbody", null,
        CONTRACT_FIELDS.map(([key, label]) => contractRows(label, data[key], key)),
        sampling.map(([key, field]) => contractRows(`Sampling: ${key}`, field,
          `sampling.${key}`)))));
}

/** Cost per run, per agent activation and per model step. */
export function costView(data, view) {
  const run = data.run;
  const stepName = (id) => view.stepById.get(id)?.step.name || id;
  return h("div", {id: "cost"},
    h("p", {id: "run-cost"}, "Run: ", costNode(run),
      ` · ${fmtInt(run.input_tokens)} in → ${fmtInt(run.output_tokens)} out tokens` +
      (run.cached_input_tokens || run.cache_write_tokens
        ? ` · of the input, ${fmtInt(run.cached_input_tokens)} read from and ` +
          `${fmtInt(run.cache_write_tokens)} written to the prompt cache` : "") +
      (run.reasoning_tokens ? ` · of the output, ${fmtInt(run.reasoning_tokens)} reasoning`
        : "")),
    h("p", {class: "small muted", id: "price-sources"}, `Prices: ${priceSourcesText(run)}, ` +
      `in ${run.currency}. A model no price source knows has no price.`),
    h("h3", null, "Per agent"),
    h("table", {class: "grid", id: "agent-cost-table"},
      headRow(["Agent", "Input tokens", "Output tokens", "Cost"]),
      h("tbody", null, data.agents.map((a) => h("tr", null,
        h("td", null, a.agent), h("td", {class: "num"}, fmtInt(a.cost.input_tokens)),
        h("td", {class: "num"}, fmtInt(a.cost.output_tokens)),
        h("td", {class: "num"}, costNode(a.cost)))))),
    h("h3", null, "Per model step"),
    h("table", {class: "grid", id: "step-cost-table"},
      headRow(["Step", "Agent", "Model", "Cost"]),
      h("tbody", null, data.steps.map((s) => h("tr", null,
        h("td", null, stepName(s.step_id)), h("td", null, s.agent),
        h("td", null, s.model || h("span", {class: "muted"}, "not recorded")),
        h("td", {class: "num"}, s.usd === null
          ? h("span", {class: "unknown-cost"}, `unknown (${unpricedText([s.model ||
            "(model not recorded)"])})`)
          : [fmtUsd(s.usd), s.priced_as && s.priced_as !== s.model
            ? h("span", {class: "muted small", title: s.price_source || ""},
              ` as ${s.priced_as}`) : ""]))))));
}
