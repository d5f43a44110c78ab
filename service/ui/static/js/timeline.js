// The timeline of a trajectory: one lane per agent activation (nested agents indented under the
// agent that started them), each step a bar placed and sized to scale on a shared time axis.

import {fmtInt, fmtMs, h} from "./dom.js";

const num = (v) => (v === undefined || v === null || v === "" ? 0 : Number(v));

export function stepStart(step) { return num(step.basic_info?.started_at); }
export function stepDuration(step) { return num(step.basic_info?.duration); }
export function stepError(step) { return step.basic_info?.error || null; }

/**
 * Lanes in display order (each agent followed by the agents it started), with depth, parent,
 * totals, and the time range of the whole run.
 */
export function layout(doc) {
  const root = doc.root_step || {};
  const agents = doc.agent_steps || [];
  const byId = new Map(agents.map((a) => [a.id, a]));
  const owner = new Map();  // step id -> the agent whose steps list it
  for (const agent of agents) for (const step of agent.steps || []) owner.set(step.id, agent.id);
  const parentOf = (agent) => {
    const direct = owner.get(agent.id);
    if (direct && direct !== agent.id) return direct;
    // an agent reached through a step that is not in a steps list: its nearest agent ancestor
    let id = agent.parent_id;
    for (let guard = 0; id && guard < 1000; guard++) {
      if (byId.has(id) && id !== agent.id) return id;
      id = owner.get(id);
    }
    return null;
  };
  const children = new Map();
  const tops = [];
  for (const agent of agents) {
    const parent = parentOf(agent);
    if (parent) {
      if (!children.has(parent)) children.set(parent, []);
      children.get(parent).push(agent);
    } else {
      tops.push(agent);
    }
  }
  const byStart = (a, b) => stepStart(a) - stepStart(b);
  const lanes = [];
  const visit = (agent, depth, parent) => {
    const steps = agent.steps || [];
    // a large trajectory's page (its agents' `steps` not loaded) says these of each agent
    const paged = agent.step_count !== undefined;
    const models = paged ? agent.models : [...new Set(steps.filter((s) => s.type === "model")
      .map((s) => s.metadata?.model_name || s.name).filter(Boolean))];
    lanes.push({
      agent, depth, parent, models,
      stepCount: paged ? agent.step_count : steps.length,
      failed: paged ? agent.failed_steps : steps.filter(stepError).length,
      inputTokens: num(agent.metrics_info?.input_tokens),
      outputTokens: num(agent.metrics_info?.output_tokens),
    });
    for (const child of (children.get(agent.id) || []).sort(byStart)) visit(child, depth + 1, agent);
  };
  for (const agent of tops.sort(byStart)) visit(agent, 0, null);

  let start = num(root.basic_info?.started_at);
  let end = start + num(root.basic_info?.duration);
  for (const agent of agents) {
    for (const item of [agent, ...(agent.steps || [])]) {
      const s = stepStart(item);
      if (s && (!start || s < start)) start = s;
      end = Math.max(end, s + stepDuration(item));
    }
  }
  // a large trajectory's page: its agents' steps are not loaded, only counted
  const paged = agents.some((a) => a.step_count !== undefined);
  return {root, lanes, start, end: Math.max(end, start + 1), paged, shown: null};
}

const TICKS = [0, 0.25, 0.5, 0.75, 1];
const ROW_PX = 20;

/** Steps that overlap in time (parallel tool calls) go on separate rows of their lane. */
function packRows(steps) {
  const ends = [];
  const of = new Map();
  for (const step of [...steps].sort((a, b) => stepStart(a) - stepStart(b))) {
    const start = stepStart(step);
    let row = ends.findIndex((end) => end <= start);
    if (row < 0) row = ends.push(0) - 1;
    ends[row] = Math.max(start + stepDuration(step), start + 0.001);
    of.set(step, row);
  }
  return {of, count: ends.length};
}

function place(el, item, range) {
  const span = range.end - range.start;
  el.style.left = `${((stepStart(item) - range.start) / span) * 100}%`;
  el.style.width = `${(stepDuration(item) / span) * 100}%`;
  return el;
}

export function stepLabel(step) {
  const error = stepError(step);
  const tokens = step.type === "model" && step.model_info
    ? `, ${fmtInt(step.model_info.input_tokens)} → ${fmtInt(step.model_info.output_tokens)} tokens` : "";
  return `${step.type} ${step.name}, ${fmtMs(stepDuration(step))}${tokens}` +
    (error ? `, failed: ${error.msg || `code ${error.code}`}` : "");
}

/**
 * The bars of `steps` on a lane's track (replacing those drawn before): a large trajectory's
 * lanes show the steps of the rows in view, redrawn as the step table scrolls.
 */
export function drawBars(track, steps, range, onSelect) {
  for (const bar of track.querySelectorAll(".bar")) bar.remove();
  const rows = packRows(steps);
  track.style.height = `${Math.max(rows.count, 1) * ROW_PX + 12}px`;
  for (const step of steps) {
    const failed = stepError(step);
    const bar = h("button", {type: "button", tabindex: "-1",
      class: `bar bar-${step.type}${failed ? " failed" : ""}`,
      title: stepLabel(step), "aria-label": stepLabel(step),
      dataset: {stepId: step.id}});
    place(bar, step, range);
    bar.style.top = `${6 + rows.of.get(step) * ROW_PX}px`;
    bar.addEventListener("click", () => onSelect(step));
    track.append(bar);
  }
}

/** One lane: its label and its track, with the bars of `steps`. Sets `lane.track`. */
function laneElement(lane, range, onSelect, steps) {
  const agent = lane.agent;
  const label = h("div", {class: "lane-label"},
    h("div", {class: "lane-name", title: agent.name},
      lane.depth ? h("span", {class: "nest", "aria-hidden": "true"}, "↳ ") : "",
      h("strong", null, agent.name || "(agent)")),
    lane.parent ? h("div", {class: "small muted"}, `started by ${lane.parent.name}`) : null,
    h("div", {class: "small"},
      `${lane.stepCount} steps · ${fmtMs(stepDuration(agent))} · ` +
      `${fmtInt(lane.inputTokens)} → ${fmtInt(lane.outputTokens)} tok`,
      lane.failed ? h("span", {class: "failed-text"}, ` · ${lane.failed} failed`) : ""),
    lane.models.length ? h("div", {class: "small muted", title: "models"},
      lane.models.join(", ")) : null);
  label.style.paddingLeft = `${4 + lane.depth * 14}px`;
  const track = h("div", {class: "lane-track"});
  track.append(place(h("div", {class: "agent-span"}), agent, range));
  drawBars(track, steps, range, onSelect);
  lane.track = track;
  return h("div", {class: `lane depth-${Math.min(lane.depth, 4)}`, id: `lane-${agent.id}`,
    dataset: {agentId: agent.id}}, label, track);
}

/** A large run (its steps paged) with at least this many lanes draws only the lanes in view. */
export const VIRTUAL_LANES_FROM = 100;
const LANE_PX = 74;
const LANE_OVERSCAN = 4;

/**
 * The timeline element. `onSelect(step)` is called when a bar is clicked; bars are not in the
 * tab order (the step table below holds the keyboard-reachable buttons).
 *
 * A large run's lanes show the bars of the steps in view in the step table (`model.shown`,
 * lane → steps, which the step table sets). With VIRTUAL_LANES_FROM lanes or more, the lanes
 * have a fixed height in a scrolling box, and only those in view (and LANE_OVERSCAN more on
 * each side) are in the DOM; `model.showLane(agentId)` scrolls one into view and returns it.
 */
export function timeline(model, onSelect) {
  const range = model;
  const axis = h("div", {class: "lane axis", "aria-hidden": "true"},
    h("div", {class: "lane-label"}, "time"),
    h("div", {class: "lane-track"}, TICKS.map((t) => {
      const tick = h("span", {class: "tick"}, fmtMs((range.end - range.start) * t));
      tick.style.left = `${t * 100}%`;
      return tick;
    })));
  const barsOf = (lane) => (model.paged ? model.shown?.get(lane) || [] : lane.agent.steps || []);
  const label = "Timeline, one lane per agent";
  if (!model.paged || model.lanes.length < VIRTUAL_LANES_FROM) {
    model.showLane = (id) => document.getElementById(`lane-${id}`);
    return h("div", {class: "timeline", role: "group", "aria-label": label}, axis,
      model.lanes.map((lane) => laneElement(lane, range, onSelect, barsOf(lane))));
  }
  const lanes = model.lanes;
  const list = h("div", {class: "virtual-lane-list"});
  const spacer = h("div", {class: "virtual-spacer"});
  spacer.style.height = `${lanes.length * LANE_PX}px`;
  const box = h("div", {class: "virtual-lanes", id: "lane-scroller"}, spacer, list);
  box.style.height = `${Math.min(lanes.length * LANE_PX, 6 * LANE_PX)}px`;
  let queued = false;
  const draw = () => {
    queued = false;
    const height = box.clientHeight || 6 * LANE_PX;
    const first = Math.max(0, Math.floor(box.scrollTop / LANE_PX) - LANE_OVERSCAN);
    const last = Math.min(lanes.length,
      Math.ceil((box.scrollTop + height) / LANE_PX) + LANE_OVERSCAN);
    for (const lane of lanes) lane.track = null;  // a lane out of view has no bars to redraw
    list.replaceChildren(...lanes.slice(first, last).map((lane) =>
      laneElement(lane, range, onSelect, barsOf(lane))));
    list.style.transform = `translateY(${first * LANE_PX}px)`;
  };
  box.addEventListener("scroll", () => {
    if (!queued) { queued = true; requestAnimationFrame(draw); }
  });
  model.showLane = (id) => {
    const index = lanes.findIndex((lane) => lane.agent.id === id);
    if (index < 0) return null;
    box.scrollTop = index * LANE_PX;
    draw();
    return document.getElementById(`lane-${id}`);
  };
  draw();
  requestAnimationFrame(() => { if (box.isConnected) draw(); });
  return h("div", {class: "timeline virtual", role: "group",
    "aria-label": `${label}: ${lanes.length} lanes; lanes are drawn as you scroll`}, axis, box);
}
