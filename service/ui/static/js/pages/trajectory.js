// One trajectory: totals, the timeline, the steps with their payloads, and tabs for the playback,
// the agent graph, the run contract, the cost, the raw span tree, the explanation, the revision
// history and the scores (the run's in the header, a step's next to that step);
// "Add to dataset" with editable expectations; "Compare with…" another run.

import {ApiError, download, enc, get, patch, positionCursor, post, request} from "../api.js";
import {costNode} from "../cost.js";
import {contractView, costView, loadContract, loadCost, loadEvents, playbackView} from "../replay.js";
import {link, navigate, replaceParams} from "../router.js";
import {append, badge, clear, field, fmtInt, fmtMs, fmtTime, h, headRow, notice, pre, truncate} from "../dom.js";
import {graphBox, graphLegend, markNode} from "../graph.js";
import {asText, payload} from "../payload.js";
import {drawBars, layout, stepDuration, stepError, stepLabel, stepStart, timeline} from "../timeline.js";
import {loadScores, runScores, scoreChip, scoreTable} from "../scores.js";

const REFRESH_MS = 2000;
const TABS = [["timeline", "Timeline"], ["playback", "Playback"], ["graph", "Graph"],
  ["contract", "Contract"], ["cost", "Cost"], ["spans", "Span tree"], ["explain", "Explanation"],
  ["scores", "Scores"], ["revisions", "Revisions"]];

// A trajectory of up to FIRST_PAGE steps comes in one page and is drawn whole; a larger one
// (docs/large-traces.md) is drawn from its first page, its step table virtualized (only the rows
// in view are in the DOM) and its further steps fetched a page of PAGE at a time as it scrolls.
const FIRST_PAGE = 1000;
const PAGE = 500;
const ROW_PX = 28;
const OVERSCAN = 10;

async function fetchTrajectory(id, etag) {
  const response = await request(`/api/v1/trajectories/${enc(id)}/steps`,
    {raw: true, query: {limit: FIRST_PAGE},
      headers: etag ? {"If-None-Match": etag} : {}});
  const meta = {status: response.headers.get("X-Trajectory-Status"),
    revision: response.headers.get("X-Trajectory-Revision"),
    normalizer: response.headers.get("X-Normalizer-Version"),
    etag: response.headers.get("ETag")};
  if (response.status === 304) return {meta, unchanged: true};
  const body = await response.json().catch(() => ({}));
  if (!response.ok) throw new ApiError(response.status, body.detail);
  return fromPage(id, meta, body);
}

/** The view's data from the first page: the whole document when it holds every step. */
function fromPage(traceId, meta, page) {
  const head = {id: page.trace_id, root_step: page.root_step};
  if (page.next_cursor === null) {
    // as GET /api/v1/trajectories/{id} sends it
    const steps = page.items.map(({offset, agent_step_id: agent, ...step}) => step);
    head.agent_steps = page.agent_steps.map(({step_offset: from, step_count: count,
      step_types: types, failed_steps: failed, models, ...agent}) =>
      ({...agent, steps: steps.slice(from, from + count)}));
    return {meta, doc: head};
  }
  head.agent_steps = page.agent_steps.map((agent) => ({...agent, steps: []}));
  return {meta, doc: head, store: new StepStore(traceId, page)};
}

/** The steps of a large trajectory loaded so far, by offset; `ensure` fetches more. */
class StepStore {
  constructor(traceId, page) {
    this.traceId = traceId;
    this.total = page.total;
    this.revision = page.revision;
    this.steps = new Map();
    this.pending = new Map();
    this.listeners = [];
    this.add(page);
  }

  add(page) {
    for (const step of page.items) this.steps.set(step.offset, step);
    for (const listener of this.listeners) listener(page.items);
  }

  get(offset) { return this.steps.get(offset); }

  /** Fetch the pages holding these offsets (each page once). The table scrolls anywhere, so a
   * page is asked for by the cursor of its position, not by a `next_cursor` already read. */
  ensure(offsets) {
    const pages = new Set(offsets.filter((o) => !this.steps.has(o)).map((o) => Math.floor(o / PAGE)));
    return Promise.all([...pages].map((n) => {
      if (!this.pending.has(n)) {
        this.pending.set(n, get(`/api/v1/trajectories/${enc(this.traceId)}/steps`,
          {cursor: positionCursor(n * PAGE), limit: PAGE})
          .then((page) => this.add(page))
          .finally(() => this.pending.delete(n)));
      }
      return this.pending.get(n);
    }));
  }
}

export async function renderTrajectory(ctx) {
  const {main, args: [traceId]} = ctx;
  let current;
  for (;;) {
    try {
      current = await fetchTrajectory(traceId);
      break;
    } catch (error) {
      if (!ctx.alive()) return;
      clear(main).append(h("h1", null, "Trajectory"), h("p", {class: "mono"}, traceId),
        notice(error.status === 404
          ? `No trajectory for trace ${traceId} in this project yet; checking again…`
          : error.status === 422 ? error.detail : error.message, "error"));
      // the trace's spans may still be on their way: wait for them
      if (error.status !== 404) return;
      await new Promise((done) => setTimeout(done, REFRESH_MS));
      if (!ctx.alive()) return;
    }
  }
  clear(main);
  const page = h("div", {class: "trajectory-page"});
  main.append(page);
  const view = new TrajectoryView(ctx, traceId, page);
  view.show(current);
  // an open trajectory is still growing: follow it until it is final
  const follow = async () => {
    if (!ctx.alive() || current.meta.status !== "open") return;
    try {
      const next = await fetchTrajectory(traceId, current.meta.etag);
      if (!ctx.alive()) return;
      if (!next.unchanged) {
        current = next;
        view.show(current);
      } else if (next.meta.status !== current.meta.status) {
        current = {...current, meta: next.meta};
        view.show(current);
      }
    } catch (error) {
      console.warn(error);
    }
    setTimeout(follow, REFRESH_MS);
  };
  setTimeout(follow, REFRESH_MS);
}

class TrajectoryView {
  constructor(ctx, traceId, el) {
    this.ctx = ctx;
    this.traceId = traceId;
    this.el = el;
    this.tab = ctx.params.get("tab") || "timeline";
    this.selected = ctx.params.get("step");
    this.tabCache = new Map();
  }

  show({meta, doc, store}) {
    // marks for bench/ui.py: how long the layout and the DOM take, apart from the fetch
    performance.mark("trajhub:render-start");
    this.meta = meta;
    this.doc = doc;
    this.store = store || null;
    this.model = layout(doc);
    this.steps = this.model.lanes.flatMap((lane) => (lane.agent.steps || []).map((step) => ({step, lane})));
    this.stepById = new Map(this.steps.map((s) => [s.step.id, s]));
    if (this.store) {
      const laneOf = new Map(this.model.lanes.map((lane) => [lane.agent.id, lane]));
      const index = (steps) => {
        for (const step of steps) {
          const lane = laneOf.get(step.agent_step_id);
          if (lane) this.stepById.set(step.id, {step, lane});
        }
      };
      index([...this.store.steps.values()]);
      this.store.listeners.push(index);
    }
    this.tabCache.clear();
    clear(this.el).append(this.header(), this.tabBar(), this.panel = h("div", {class: "tab-panel",
      role: "tabpanel", id: "tab-panel", "aria-labelledby": `tab-${this.tab}`}));
    this.renderTab();
    this.showScores();
    performance.measure("trajhub:render", "trajhub:render-start");
  }

  /** The scores, once loaded: the run's in the header, each step's next to it. */
  async showScores() {
    try {
      this.scores = await loadScores(this.traceId);
    } catch (error) {
      this.scores = null;
      document.getElementById("run-scores")?.replaceChildren(`unavailable (${error.message})`);
      return;
    }
    if (!this.ctx.alive()) return;
    document.getElementById("run-scores")?.replaceChildren(...[runScores(this.scores)].flat());
    this.showStepScores();
  }

  showStepScores() {
    if (!this.scores) return;
    for (const cell of this.panel.querySelectorAll(".step-scores")) {
      cell.replaceChildren(...this.scores.filter((s) => s.step_id === cell.dataset.scoresOf)
        .map(scoreChip));
    }
    if (this.selected && this.detail?.isConnected) this.select(this.selected, false);
  }

  header() {
    const root = this.doc.root_step || {};
    const metrics = root.metrics_info || {};
    const {total, failed, models, tools} = this.counts();
    const rootError = root.basic_info?.error;
    const rootMeta = root.metadata || {};
    const interrupted = rootMeta.outcome === "interrupted";
    const addStatus = h("span", {role: "status", class: "failed-text"});
    const cost = h("span", {id: "total-cost"}, "…");
    const showCost = () => loadCost(this.traceId)
      .then((data) => cost.replaceChildren(costNode(data.run)))
      .catch((error) => { cost.textContent = `unavailable (${error.message})`; });
    if (this.store) {
      // pricing a large run reads its whole document (seconds): on demand
      cost.replaceChildren(h("button", {type: "button", class: "link", id: "load-cost",
        onclick: () => { cost.textContent = "…"; showCost(); }}, "compute"));
    } else {
      showCost();
    }
    const other = h("input", {id: "compare-with", type: "text", size: 34, spellcheck: "false",
      required: true, pattern: "[0-9a-fA-F]{32}", title: "a trace id: 32 hex digits",
      placeholder: "trace id of the other run", list: "compare-candidates"});
    const candidates = h("datalist", {id: "compare-candidates"});
    // the project's latest runs are offered, so a trace id need not be copied by hand
    other.addEventListener("focus", () => {
      get("/api/v1/trajectories", {limit: 20}).then((page) => candidates.append(...page.items
        .filter((item) => item.trace_id !== this.traceId)
        .map((item) => h("option", {value: item.trace_id,
          label: `${item.root_name || "(unnamed)"} · ${fmtTime(item.start_time)}`}))))
        .catch((error) => console.warn("compare candidates:", error));
    }, {once: true});
    return h("header", {class: "page-head"},
      h("div", {class: "crumbs"}, h("a", {href: link("/trajectories")}, "Trajectories"), " / "),
      h("h1", null, root.name || "(unnamed)", " ", badge(this.meta.status || "?"),
        interrupted ? [" ", badge("interrupted")] : null,
        this.meta.status === "open" ? h("span", {class: "muted small"}, " refreshing") : ""),
      h("dl", {class: "facts", id: "totals"},
        fact("Trace", h("span", {class: "mono"}, this.traceId)),
        fact("Started", fmtTime(Number(root.basic_info?.started_at))),
        fact("Duration", fmtMs(root.basic_info?.duration)),
        fact("Agents", String(this.model.lanes.length)),
        fact("Steps", `${total} (${models} model · ${tools} tool)`),
        fact("Tokens", `${fmtInt(metrics.input_tokens)} in → ${fmtInt(metrics.output_tokens)} out`),
        fact("Cost", cost),
        fact("Model time", fmtMs(metrics.llm_duration)),
        fact("Tool time", fmtMs(metrics.tool_duration)),
        fact("Failed steps", failed
          ? h("span", {class: "failed-text"}, String(failed)) : "0"),
        fact("Revision", `${this.meta.revision ?? "?"} · normalizer ${this.meta.normalizer ?? "?"}`),
        fact("Scores", h("span", {id: "run-scores"}, "…"))),
      rootError ? h("p", {class: "error-box", role: "note"},
        h("strong", null, "The run failed: "), rootError.msg || `code ${rootError.code}`) : null,
      // LangGraph's interrupt() ended the run: it waits for a person, it did not fail
      // (docs/trajectory-rules.md, "Interrupted runs")
      interrupted ? h("p", {class: "interrupt-box", role: "note", id: "interrupt"},
        h("strong", null, "Interrupted, waiting for a person: "),
        h("span", {class: "mono"}, rootMeta.interrupt_node || "(unknown node)"),
        " asked ", h("code", {class: "interrupt-payload"},
          rootMeta.interrupt_payload || "(payload not recorded)"),
        ". A later run on its thread resumes it.") : null,
      h("div", {class: "actions"},
        h("button", {type: "button", class: "primary", id: "add-to-dataset",
          onclick: () => addToDataset(this.traceId).catch((error) => {
            addStatus.textContent = `Cannot add to a dataset: ${error.message}`;
          })}, "Add to dataset…"), addStatus,
        // ATIF (docs/atif.md): the interchange format Harbor defined and Phoenix imports
        h("button", {type: "button", id: "download-atif", title: "This run as one ATIF-v1.8 " +
          "document (Agent Trajectory Interchange Format)", onclick: () => download(
            `/api/v1/trajectories/${enc(this.traceId)}/atif`, null, `${this.traceId}.atif.json`,
          ).catch((error) => { addStatus.textContent = `Cannot export: ${error.message}`; })},
        "Download ATIF"),
        h("form", {class: "inline compare-form", "aria-label": "Compare with another run",
          onsubmit: (event) => {
            event.preventDefault();
            navigate("/compare", {a: this.traceId, b: other.value.trim().toLowerCase()});
          }},
        h("label", {for: "compare-with"}, "Compare with…"), other, candidates,
        h("button", {type: "submit"}, "Compare"))));
  }

  /** The run's step counts: from its steps, or a large run's from its agents' counts. */
  counts() {
    if (!this.store) {
      return {total: this.steps.length,
        failed: this.steps.filter(({step}) => stepError(step)).length,
        models: this.steps.filter(({step}) => step.type === "model").length,
        tools: this.steps.filter(({step}) => step.type === "tool").length};
    }
    const agents = this.doc.agent_steps;
    const sum = (f) => agents.reduce((n, agent) => n + (f(agent) || 0), 0);
    return {total: this.store.total, failed: sum((a) => a.failed_steps),
      models: sum((a) => a.step_types.model), tools: sum((a) => a.step_types.tool)};
  }

  tabBar() {
    const buttons = TABS.map(([key, text]) => h("button", {type: "button", role: "tab",
      id: `tab-${key}`, "aria-selected": String(key === this.tab), "aria-controls": "tab-panel",
      tabindex: key === this.tab ? "0" : "-1",
      onclick: () => this.switchTab(key)}, text));
    const bar = h("div", {class: "tabs", role: "tablist", "aria-label": "Trajectory views"}, buttons);
    bar.addEventListener("keydown", (event) => {
      const i = TABS.findIndex(([key]) => key === this.tab);
      const move = {ArrowRight: 1, ArrowLeft: -1}[event.key];
      if (!move) return;
      event.preventDefault();
      const [key] = TABS[(i + move + TABS.length) % TABS.length];
      this.switchTab(key);
      document.getElementById(`tab-${key}`).focus();
    });
    this.tabButtons = buttons;
    return bar;
  }

  switchTab(key) {
    this.tab = key;
    replaceParams({tab: key === "timeline" ? null : key});
    for (const b of this.tabButtons) {
      const on = b.id === `tab-${key}`;
      b.setAttribute("aria-selected", String(on));
      b.tabIndex = on ? 0 : -1;
    }
    this.panel.setAttribute("aria-labelledby", `tab-${key}`);
    this.renderTab();
  }

  async renderTab() {
    const key = this.tab;
    clear(this.panel);
    if (key === "timeline") {
      this.panel.append(this.timelineTab());
      if (this.selected && this.stepById.has(this.selected)) this.select(this.selected, false);
      this.showStepScores();
      return;
    }
    this.panel.append(h("p", {class: "muted"}, "Loading…"));
    try {
      if (!this.tabCache.has(key)) this.tabCache.set(key, await TAB_LOADERS[key](this.traceId, this));
      if (!this.ctx.alive() || this.tab !== key) return;
      clear(this.panel).append(TAB_RENDERERS[key](this.tabCache.get(key), this));
    } catch (error) {
      if (this.tab === key) clear(this.panel).append(notice(error.message, "error"));
    }
  }

  /** The agent graph; clicking a node selects its steps in the step table and lanes below. */
  graphTab(graph) {
    this.detail = h("aside", {class: "detail", id: "step-detail", "aria-label": "Selected step",
      tabindex: "-1"}, h("p", {class: "muted"},
      "Click a node of the graph to select its steps, or a step to see its payloads."));
    const status = h("p", {class: "small", id: "graph-selection", role: "status"},
      `${graph.nodes.length} nodes · ${graph.edges.length} edges · laid out by ${graph.layout}`);
    const select = (step) => this.select(step.id, true);
    const {svg, el} = graphBox(graph, (node, element) => {
      markNode(svg, element);
      const ids = node.step_ids.filter((id) => this.stepById.has(id));
      for (const marked of this.panel.querySelectorAll(".in-node")) marked.classList.remove("in-node");
      for (const id of ids) {
        for (const row of this.panel.querySelectorAll(`[data-step-id="${CSS.escape(id)}"]`)) {
          row.classList.add("in-node");
        }
      }
      status.textContent = `${node.kind === "agent" ? "Agent" : "Node"} ${node.label}` +
        `${node.kind === "agent" ? "" : ` of ${node.agent}`}: ${ids.length} ` +
        `${ids.length === 1 ? "step" : "steps"} selected`;
      if (ids.length) {
        this.select(ids[0], true);
        this.panel.querySelector(`#step-table [data-step-id="${CSS.escape(ids[0])}"]`)
          ?.scrollIntoView({block: "nearest"});
      }
    });
    const first = this.model.lanes[0]?.agent.name;
    const many = first ? h("p", {class: "small"}, h("a", {id: "agent-runs-graph",
      href: link("/graph", {agent: first})}, `The graph of ${first}'s last 500 runs`)) : null;
    return h("div", {class: "timeline-layout"},
      h("div", {class: "timeline-main"}, el, graphLegend(), status, many,
        this.model.lanes.length ? timeline(this.model, select) : null, this.stepList(select)),
      this.detail);
  }

  timelineTab() {
    this.detail = h("aside", {class: "detail", id: "step-detail", "aria-label": "Selected step",
      tabindex: "-1"}, h("p", {class: "muted"},
      "Select a step (click a bar or a step name) to see its payloads."));
    const select = (step) => this.select(step.id, true);
    const lanes = this.model.lanes.length ? timeline(this.model, select) : this.rootOnly();
    return h("div", {class: "timeline-layout"},
      h("div", {class: "timeline-main"}, lanes, legend(), this.stepList(select)),
      this.detail);
  }

  /** A trajectory of its root alone (no agent, model or tool step was kept under it). */
  rootOnly() {
    const root = this.doc.root_step || {};
    const error = root.basic_info?.error;
    return h("div", {class: "root-only"},
      notice("Only the root span is in this trajectory: no agent, model or tool steps.", "info"),
      error ? h("div", {class: "error-box"}, h("strong", null, `Error ${error.code ?? ""}: `),
        error.msg || "(no message)") : null,
      h("h3", null, "Input"), payload(root.input, "messages"),
      h("h3", null, "Output"), payload(root.output, "messages"));
  }

  /** The step table: whole, or a large run's virtualized. */
  stepList(onSelect) {
    return this.store ? this.virtualTable(onSelect) : this.stepTable(onSelect);
  }

  groupRow(lane) {
    const agent = lane.agent;
    return h("tr", {class: "group"}, h("th", {colspan: 7, scope: "rowgroup"},
      "↳ ".repeat(lane.depth), agent.name, h("span", {class: "muted"},
        ` · ${lane.stepCount} steps · ${fmtMs(stepDuration(agent))} · ` +
        `${fmtInt(lane.inputTokens)} → ${fmtInt(lane.outputTokens)} tokens`),
      h("span", {class: "step-scores", dataset: {scoresOf: agent.id}})));
  }

  stepRow(step, i, onSelect) {
    const t0 = this.model.start;
    const error = stepError(step);
    const nested = step.type === "agent" || step.type === "graph";
    const tokens = step.type === "model" && step.model_info
      ? `${fmtInt(step.model_info.input_tokens)} → ${fmtInt(step.model_info.output_tokens)}` : "";
    return h("tr", {class: error ? "failed" : null, dataset: {stepId: step.id}},
      h("td", {class: "num muted"}, String(i + 1)),
      h("td", null, h("span", {class: `type type-${step.type}`}, step.type)),
      h("td", null, h("button", {type: "button", class: "link step-button",
        "aria-label": stepLabel(step), onclick: () => onSelect(step)}, step.name || "(unnamed)"),
      nested ? h("span", {class: "muted small"}, " (nested agent, own lane)") : "",
      h("span", {class: "step-scores", dataset: {scoresOf: step.id}})),
      h("td", {class: "num"}, `+${fmtMs(stepStart(step) - t0)}`),
      h("td", {class: "num"}, fmtMs(stepDuration(step))),
      h("td", {class: "num"}, tokens),
      h("td", null, error ? h("span", {class: "failed-text"},
        `✗ failed: ${error.msg || `code ${error.code}`}`) : h("span", {class: "muted"}, "ok")));
  }

  stepTable(onSelect) {
    const body = h("tbody");
    for (const lane of this.model.lanes) {
      body.append(this.groupRow(lane));
      (lane.agent.steps || []).forEach((step, i) => body.append(this.stepRow(step, i, onSelect)));
    }
    const table = h("table", {class: "grid steps", id: "step-table"},
      h("caption", {class: "sr-only"}, "Steps per agent"),
      headRow(STEP_COLUMNS), body);
    // j / k (or arrow keys on a step button) move through the steps
    table.addEventListener("keydown", (event) => {
      const move = {ArrowDown: 1, ArrowUp: -1, j: 1, k: -1}[event.key];
      if (!move || !event.target.classList.contains("step-button")) return;
      event.preventDefault();
      const buttons = [...table.querySelectorAll(".step-button")];
      const next = buttons[buttons.indexOf(event.target) + move];
      if (next) { next.focus(); next.click(); }
    });
    return table;
  }

  /**
   * A large run's step table: every agent's group row and steps, of which only the rows in
   * view (and OVERSCAN more each side) are in the DOM, at a fixed row height; steps not loaded
   * yet are fetched as they come into view. The lanes show the bars of the steps in view.
   */
  virtualTable(onSelect) {
    const lanes = this.model.lanes;
    const starts = [];
    let rows = 0;
    for (const lane of lanes) {
      starts.push(rows);
      rows += 1 + lane.stepCount;
    }
    /** Row r: its lane, and its step's index in the lane (-1: the lane's group row). */
    const rowAt = (r) => {
      let lo = 0;
      let hi = lanes.length - 1;
      while (lo < hi) {
        const mid = (lo + hi + 1) >> 1;
        if (starts[mid] <= r) lo = mid; else hi = mid - 1;
      }
      return {lane: lanes[lo], index: r - starts[lo] - 1};
    };
    const columns = () => h("colgroup", null, STEP_WIDTHS.map((w) => h("col", {style: {width: w}})));
    const head = h("table", {class: "grid steps virtual", "aria-hidden": "true"}, columns(),
      headRow(STEP_COLUMNS));
    const body = h("tbody");
    const table = h("table", {class: "grid steps virtual", id: "step-table",
      "aria-label": `Steps per agent: ${this.store.total} steps; rows load as you scroll`,
      "aria-rowcount": String(rows)}, columns(), body);
    const spacer = h("div", {class: "virtual-spacer"});
    spacer.style.height = `${rows * ROW_PX}px`;
    const box = h("div", {class: "virtual-steps", id: "step-scroller"}, spacer, table);
    box.style.height = `${Math.min(rows * ROW_PX + 2, 600)}px`;
    let queued = false;
    const draw = () => {
      queued = false;
      const height = box.clientHeight || 600;
      const first = Math.max(0, Math.floor(box.scrollTop / ROW_PX) - OVERSCAN);
      const last = Math.min(rows, Math.ceil((box.scrollTop + height) / ROW_PX) + OVERSCAN);
      const out = [];
      const missing = [];
      const shown = new Map();
      for (let r = first; r < last; r++) {
        const {lane, index} = rowAt(r);
        let row;
        if (index < 0) {
          row = this.groupRow(lane);
        } else {
          const step = this.store.get(lane.agent.step_offset + index);
          if (step) {
            row = this.stepRow(step, index, onSelect);
            if (!shown.has(lane)) shown.set(lane, []);
            shown.get(lane).push(step);
          } else {
            missing.push(lane.agent.step_offset + index);
            row = h("tr", {class: "loading"}, h("td", {class: "num muted"}, String(index + 1)),
              h("td", {colspan: 6, class: "muted"}, "loading…"));
          }
        }
        row.dataset.row = String(r);
        row.setAttribute("aria-rowindex", String(r + 1));
        out.push(row);
      }
      body.replaceChildren(...out);
      table.style.transform = `translateY(${first * ROW_PX}px)`;
      this.model.shown = shown;
      for (const lane of lanes) {
        if (lane.track) drawBars(lane.track, shown.get(lane) || [], this.model, onSelect);
      }
      if (this.selected) {
        for (const el of this.panel.querySelectorAll(`[data-step-id="${CSS.escape(this.selected)}"]`)) {
          el.classList.add("selected");
        }
      }
      this.fillScores(body);
      if (missing.length) {
        this.store.ensure(missing).then(() => {
          if (this.ctx.alive() && box.isConnected) draw();
        }).catch((error) => console.warn("steps:", error));
      }
    };
    box.addEventListener("scroll", () => {
      if (!queued) { queued = true; requestAnimationFrame(draw); }
    });
    // j / k (or arrow keys on a step button) move through the steps, scrolling as they go
    table.addEventListener("keydown", (event) => {
      const move = {ArrowDown: 1, ArrowUp: -1, j: 1, k: -1}[event.key];
      if (!move || !event.target.classList.contains("step-button")) return;
      event.preventDefault();
      let r = Number(event.target.closest("tr").dataset.row) + move;
      if (r >= 0 && r < rows && rowAt(r).index < 0) r += move;
      if (r < 0 || r >= rows) return;
      if (r * ROW_PX < box.scrollTop) box.scrollTop = r * ROW_PX;
      if ((r + 1) * ROW_PX > box.scrollTop + box.clientHeight) {
        box.scrollTop = (r + 1) * ROW_PX - box.clientHeight;
      }
      draw();
      const next = body.querySelector(`tr[data-row="${r}"] .step-button`);
      if (next) { next.focus(); next.click(); }
    });
    draw();
    requestAnimationFrame(() => { if (box.isConnected) draw(); });
    return h("div", {class: "virtual-table"}, head, box);
  }

  /** The scores of the rows just drawn. */
  fillScores(body) {
    if (!this.scores) return;
    for (const cell of body.querySelectorAll(".step-scores")) {
      cell.replaceChildren(...this.scores.filter((s) => s.step_id === cell.dataset.scoresOf)
        .map(scoreChip));
    }
  }

  select(stepId, fromUser) {
    const found = this.stepById.get(stepId);
    if (!found) return;
    this.selected = stepId;
    if (fromUser) replaceParams({step: stepId});
    for (const el of this.panel.querySelectorAll(".selected")) el.classList.remove("selected");
    for (const el of this.panel.querySelectorAll(`[data-step-id="${CSS.escape(stepId)}"]`)) {
      el.classList.add("selected");
    }
    append(clear(this.detail), stepDetail(found.step, found.lane, this));
    const scores = (this.scores || []).filter((s) => s.step_id === stepId);
    if (scores.length) {
      this.detail.insertBefore(h("div", {class: "step-detail-scores", id: "step-detail-scores"},
        h("h3", null, "Scores"), scores.map(scoreChip)), this.detail.children[2] || null);
    }
  }
}

const STEP_COLUMNS = ["#", "Type", "Step", "Start", "Duration", "Tokens (in → out)", "Status"];
const STEP_WIDTHS = ["6%", "8%", "34%", "12%", "10%", "14%", "16%"];

function fact(term, value) {
  return h("div", null, h("dt", null, term), h("dd", null, value));
}

function legend() {
  return h("p", {class: "legend small"}, ["model", "tool", "agent"].map((t) =>
    h("span", null, h("span", {class: `swatch bar-${t}`}), ` ${t} `)),
  h("span", null, h("span", {class: "swatch failed"}), " failed"));
}

function stepDetail(step, lane, view) {
  const error = stepError(step);
  const info = step.model_info;
  const metadata = step.metadata || {};
  const kind = step.type === "tool" ? "json" : "messages";
  const nested = (step.type === "agent" || step.type === "graph")
    ? view.model.lanes.find((l) => l.agent.id === step.id) : null;
  return [
    h("h2", null, h("span", {class: `type type-${step.type}`}, step.type), " ", step.name),
    h("p", {class: "small muted"}, `in ${lane.agent.name} · span ${step.id}`),
    error ? h("div", {class: "error-box", id: "step-error"},
      h("strong", null, `Error ${error.code ?? ""}: `), error.msg || "(no message)") : null,
    h("dl", {class: "facts"},
      fact("Start", `+${fmtMs(stepStart(step) - view.model.start)}`),
      fact("Duration", fmtMs(stepDuration(step))),
      info ? [
        fact("Input tokens", fmtInt(info.input_tokens)),
        fact("Output tokens", fmtInt(info.output_tokens)),
        fact("Reasoning", fmtInt(info.reasoning_tokens)),
        fact("Cache read / write",
          `${fmtInt(info.input_read_cached_tokens)} / ${fmtInt(info.input_creation_cached_tokens)}`),
        fact("First token", info.latency_first_resp ? fmtMs(info.latency_first_resp) : "—"),
        metadata.model_name ? fact("Model", metadata.model_name) : null,
      ] : null),
    nested ? h("p", null, h("a", {href: `#lane-${step.id}`, onclick: (e) => {
      e.preventDefault();
      view.model.showLane?.(step.id)?.scrollIntoView({block: "center"});
    }}, `Go to the lane of ${step.name}`)) : null,
    h("h3", null, step.type === "tool" ? "Arguments" : "Input"),
    payload(step.input, kind, metadata.payload_missing?.includes("input")),
    h("h3", null, step.type === "tool" ? "Result" : "Output"),
    payload(step.output, kind, metadata.payload_missing?.includes("output")),
    Object.keys(metadata).length ? h("details", null, h("summary", null, "Metadata"),
      h("table", {class: "grid kv"}, h("tbody", null, Object.entries(metadata).map(([k, v]) =>
        h("tr", null, h("th", {scope: "row"}, k), h("td", {class: "wrap"}, v)))))) : null,
  ];
}

// ---------------------------------------------------------------- the other tabs

const TAB_LOADERS = {
  graph: (id) => get(`/api/v1/trajectories/${enc(id)}/graph`),
  playback: loadEvents,
  contract: loadContract,
  cost: loadCost,
  spans: (id, view) => (view.store
    // a large trace: its first spans, flat (docs/large-traces.md)
    ? get(`/api/v1/traces/${enc(id)}/spans`, {limit: FIRST_PAGE})
      .then((page) => ({spans: page.items, total: page.total}))
    : get(`/api/v1/traces/${enc(id)}`, {view: "tree"})),
  explain: (id) => get(`/api/v1/trajectories/${enc(id)}/explain`),
  revisions: (id) => get(`/api/v1/trajectories/${enc(id)}/revisions`),
  scores: loadScores,
};

const TAB_RENDERERS = {graph: (data, view) => view.graphTab(data), playback: playbackView,
  contract: contractView, cost: costView, spans: spanTree, explain: explanation,
  revisions: revisionTable, scores: scoreTable};

function spanNode(span) {
  const failed = span.status?.code === "error";
  const attrs = h("div", {class: "span-body"});
  // the tree shows every span; a span's attributes open on demand (a trace can hold thousands)
  const details = h("details", {class: failed ? "failed" : null},
    h("summary", null, h("strong", null, span.name), " ",
      h("span", {class: "muted small"}, `${span.kind} · ${fmtMs(span.duration_ms)} · ${span.span_id}`),
      failed ? h("span", {class: "failed-text", title: span.status.message},
        ` ✗ ${truncate((span.status.message || "error").split("\n")[0], 120)}`) : ""),
    attrs);
  details.addEventListener("toggle", () => {
    if (!details.open || attrs.childElementCount) return;
    attrs.append(pre(JSON.stringify({status: span.status, attributes: span.attributes,
      events: span.events, resource: span.resource, scope: span.scope}, null, 2)));
  });
  return h("li", null, details, (span.children || []).length
    ? h("ul", null, span.children.map(spanNode)) : null);
}

function spanTree(data) {
  const count = (spans) => spans.reduce((n, s) => n + 1 + count(s.children || []), 0);
  return h("div", {class: "span-tree", id: "span-tree"},
    h("p", {class: "muted"}, data.total !== undefined
      ? `The first ${data.spans.length} of ${data.total} spans as received, in start order. ` +
        "Open a span for its attributes."
      : `${count(data.spans)} spans as received, children under their ` +
        "parents. Open a span for its attributes."),
    h("ul", null, data.spans.map(spanNode)));
}

function explanation(data) {
  const names = new Map(data.spans.map((s) => [s.span_id, s.name]));
  const parents = new Map(data.spans.map((s) => [s.span_id, s.parent_span_id]));
  const depth = (id) => {
    let d = 0;
    for (let p = parents.get(id); p && names.has(p) && d < 100; p = parents.get(p)) d++;
    return d;
  };
  const kept = data.spans.filter((s) => s.kept).length;
  return h("div", {id: "explanation"},
    h("p", null, `${kept} of ${data.spans.length} spans kept, ${data.spans.length - kept} dropped ` +
      `(normalizer ${data.normalizer_version}, revision ${data.revision}).`),
    data.derivation_error ? h("p", {class: "error-box"}, data.derivation_error) : null,
    data.warnings.length ? h("ul", {class: "warnings"}, data.warnings.map((w) => h("li", null, w)))
      : null,
    h("table", {class: "grid"},
      headRow(["Span", "Kind", "Kept", "Why (rule)", "Parent in trajectory",
        "Convention", "Warnings"]),
      h("tbody", null, data.spans.map((s) => {
        const nameCell = h("td", null, s.name, h("div", {class: "mono small muted"}, s.span_id));
        nameCell.style.paddingLeft = `${4 + depth(s.span_id) * 12}px`;
        return h("tr", {class: s.kept ? null : "dropped"},
          nameCell,
          h("td", null, s.kind),
          h("td", null, s.kept ? "kept" : "dropped"),
          h("td", {class: "mono small"}, s.rule),
          h("td", null, s.kept ? names.get(s.new_parent_id) || s.new_parent_id || "—" : ""),
          h("td", {class: "small"}, s.convention),
          h("td", {class: "small"}, (s.warnings || []).join("; ")));
      }))));
}

function revisionTable(data) {
  return h("table", {class: "grid", id: "revisions"},
    headRow(["Revision", "Status", "Derived at", "Normalizer", "Steps",
      "Tokens (in → out)", "Derivation error"]),
    h("tbody", null, data.revisions.map((r) => h("tr", null,
      h("td", {class: "num"}, String(r.revision)), h("td", null, badge(r.status)),
      h("td", null, fmtTime(r.derived_time)), h("td", null, r.normalizer_version),
      h("td", {class: "num"}, fmtInt(r.step_count)),
      h("td", {class: "num"}, `${fmtInt(r.input_tokens)} → ${fmtInt(r.output_tokens)}`),
      h("td", {class: r.derivation_error ? "failed-text" : "muted"}, r.derivation_error || "—")))));
}

// ---------------------------------------------------------------- add to dataset


async function addToDataset(traceId) {
  const [draft, sets] = await Promise.all([
    get(`/api/v1/trajectories/${enc(traceId)}/item-draft`),
    get("/api/v1/datasets")]);
  const original = JSON.stringify(draft.expectations, null, 2);
  const NEW = "\u0000new";
  const setSelect = h("select", {id: "dataset-select", required: true},
    sets.items.map((s) => h("option", {value: s.name}, `${s.name} (${s.item_count} items)`)),
    h("option", {value: NEW, selected: !sets.items.length}, "New set…"));
  const newName = h("input", {id: "dataset-new-name", type: "text", size: 24, spellcheck: "false"});
  const newRow = field("dataset-new-name", "New set name", newName);
  const syncNew = () => { newRow.hidden = setSelect.value !== NEW; newName.required = !newRow.hidden; };
  setSelect.addEventListener("change", syncNew);
  syncNew();
  const expectations = h("textarea", {id: "expectations-editor", rows: 14, cols: 70,
    spellcheck: "false"}, original);
  const status = h("p", {class: "dialog-status", role: "status"});
  let savedItem = null;  // once added, a second Save only edits the item's expectations
  let savedSet = null;

  const dialog = h("dialog", {class: "wide", "aria-labelledby": "add-title"});
  const close = () => dialog.close();
  const form = h("form", {onsubmit: async (event) => {
    event.preventDefault();
    let edited;
    try {
      edited = JSON.parse(expectations.value);
    } catch (error) {
      status.className = "dialog-status failed-text";
      status.textContent = `Expectations are not valid JSON: ${error.message}`;
      expectations.focus();
      return;
    }
    status.className = "dialog-status";
    status.textContent = "Saving…";
    try {
      const name = savedSet || (setSelect.value === NEW ? newName.value.trim() : setSelect.value);
      if (!savedItem) {
        if (setSelect.value === NEW && !savedSet) await post("/api/v1/datasets", {name});
        savedSet = name;
        const outcome = await post(`/api/v1/datasets/${enc(name)}/fill`, {trace_ids: [traceId]});
        if (!outcome.added) {
          const why = outcome.skipped_duplicates ? "the set already holds this run"
            : outcome.not_final.length ? "the trajectory is not final yet; try again when it is"
              : "the trajectory was not found";
          throw new Error(`Not added: ${why}.`);
        }
        savedItem = outcome.item_ids[0];
      }
      if (JSON.stringify(edited) !== JSON.stringify(draft.expectations)) {
        await patch(`/api/v1/datasets/${enc(name)}/items/${enc(savedItem)}`, {expectations: edited});
      }
      status.className = "dialog-status ok-text";
      clear(status).append("Added to ", h("a", {href: link(`/datasets/${enc(name)}`), id: "added-link",
        onclick: close}, name), ".");
    } catch (error) {
      status.className = "dialog-status failed-text";
      status.textContent = error.message;
    }
  }},
  h("h2", {id: "add-title"}, "Add this run to a dataset"),
  draft.status !== "final" ? notice("This trajectory is still open: only final runs can be " +
    "added. Wait until it is final.", "warn") : null,
  field("dataset-select", "Dataset", setSelect),
  newRow,
  h("h3", null, h("label", {for: "expectations-editor"}, "Expectations (pre-filled from the run; edit " +
    "before saving)")),
  h("p", {class: "small muted"}, "agents: the agents expected to run · tools: per agent · " +
    "tool_order: the expected sequence of tool calls · trajectory: expected steps with arguments"),
  expectations,
  h("details", null, h("summary", null, "Input (the user's request, stored with the item)"),
    payload(asText(draft.input), "messages")),
  h("details", null, h("summary", null, "Reference output (the run's final answer)"),
    payload(asText(draft.reference_output), "messages")),
  h("details", {id: "draft-metadata"}, h("summary", null, "Metadata (the rest of the run's state, " +
    "stored with the item)"), pre(JSON.stringify(draft.metadata || {}, null, 2))),
  status,
  h("div", {class: "actions"},
    h("button", {type: "submit", class: "primary", id: "save-item"}, "Save"),
    h("button", {type: "button", onclick: close}, "Close")));
  dialog.append(form);
  dialog.addEventListener("close", () => dialog.remove());
  document.body.append(dialog);
  dialog.showModal();
  setSelect.focus();
}
