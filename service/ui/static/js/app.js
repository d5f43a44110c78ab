// The shell: hash routes, the project switcher, and one render per navigation.

import {ApiError, apiKey, get, onNewKey, setProject, state} from "./api.js";
import {clear, h, notice} from "./dom.js";
import {renderAlerts} from "./pages/alerts.js";
import {renderCompare} from "./pages/compare.js";
import {renderDataset, renderDatasets} from "./pages/datasets.js";
import {renderEvaluation, renderEvaluations} from "./pages/evaluations.js";
import {renderGraph} from "./pages/graph.js";
import {renderMonitoring} from "./pages/monitoring.js";
import {renderRegressions} from "./pages/regressions.js";
import {renderRules} from "./pages/rules.js";
import {renderReview, renderReviewQueues} from "./pages/review.js";
import {renderSession, renderSessions} from "./pages/sessions.js";
import {renderTrajectories} from "./pages/trajectories.js";
import {renderTrajectory} from "./pages/trajectory.js";
import {currentRoute, link, navigate} from "./router.js";

const ROUTES = [
  [/^\/?$/, renderTrajectories, "trajectories"],
  [/^\/trajectories\/?$/, renderTrajectories, "trajectories"],
  [/^\/trajectories\/([^/]+)$/, renderTrajectory, "trajectories"],
  [/^\/compare\/?$/, renderCompare, "trajectories"],
  [/^\/monitoring\/?$/, renderMonitoring, "monitoring"],
  [/^\/sessions\/?$/, renderSessions, "sessions"],
  [/^\/sessions\/(.+)$/, renderSession, "sessions"],
  [/^\/graph\/?$/, renderGraph, "trajectories"],
  [/^\/datasets\/?$/, renderDatasets, "datasets"],
  [/^\/datasets\/(.+)$/, renderDataset, "datasets"],
  [/^\/evaluations\/?$/, renderEvaluations, "evaluations"],
  [/^\/evaluations\/(\d+)$/, renderEvaluation, "evaluations"],
  [/^\/regressions\/?$/, renderRegressions, "evaluations"],
  [/^\/rules\/?$/, renderRules, "rules"],
  [/^\/alerts\/?$/, renderAlerts, "alerts"],
  [/^\/review\/?$/, renderReviewQueues, "review"],
  [/^\/review\/(.+)$/, renderReview, "review"],
];

let generation = 0;

async function render() {
  const mine = ++generation;
  const {path, params} = currentRoute();
  const wanted = params.get("project");
  if (wanted && wanted !== state.project && !state.lockedProject) {
    setProject(wanted);
    renderSwitcher();
  }
  const main = document.getElementById("main");
  const route = ROUTES.find(([pattern]) => pattern.test(path));
  for (const a of document.querySelectorAll("a[data-nav]")) {
    a.href = link(`/${a.dataset.nav}`);  // the project travels with every link
    const here = route && a.closest("nav") && a.dataset.nav === route[2];
    if (here) a.setAttribute("aria-current", "page");
    else a.removeAttribute("aria-current");
  }
  clear(main);
  if (!route) {
    main.append(h("h1", null, "Not found"), notice(`No page at ${path}.`, "error"));
    return;
  }
  const args = path.match(route[0]).slice(1).map(decodeURIComponent);
  const ctx = {
    main, params, args,
    /** false once the user has navigated elsewhere: pollers stop, late answers are dropped */
    alive: () => mine === generation,
  };
  try {
    await route[1](ctx);
  } catch (error) {
    if (!ctx.alive()) return;
    console.warn(error);
    main.append(notice(error instanceof ApiError ? error.message : `Error: ${error}`, "error"));
  }
}

// ---------------------------------------------------------------- project switcher

let knownProjects = null;  // null: the server has no project list; the switcher is free text

async function loadProjects() {
  try {
    const answer = await get("/api/v1/projects", null, {project: false, keyListener: false});
    knownProjects = answer.items || [];
  } catch (error) {
    if (!(error instanceof ApiError) || (error.status !== 404 && error.status !== 405)) {
      console.warn("project list:", error);
    }
    knownProjects = null;
  }
  // An API key that sees exactly one project is that project's key: show only it.
  state.lockedProject = apiKey() && knownProjects && knownProjects.length === 1
    ? knownProjects[0].name : null;
  if (state.lockedProject) setProject(state.lockedProject);
  renderSwitcher();
}

function recentProjects() {
  try {
    return JSON.parse(localStorage.getItem("trajhub.recentProjects") || "[]");
  } catch {
    return [];
  }
}

function switchTo(name) {
  if (!name || name === state.project) return;
  setProject(name);
  const recent = [name, ...recentProjects().filter((p) => p !== name)].slice(0, 10);
  localStorage.setItem("trajhub.recentProjects", JSON.stringify(recent));
  // a project's pages start at its trajectory list
  const {path} = currentRoute();
  const section = path.split("/")[1] || "trajectories";
  navigate(`/${section}`);
}

function renderSwitcher() {
  const box = clear(document.getElementById("project-switcher"));
  const label = h("label", {for: "project-select"}, "Project");
  if (state.lockedProject) {
    box.append(label, h("select", {id: "project-select", disabled: true},
      h("option", {value: state.lockedProject, selected: true}, state.lockedProject)));
    return;
  }
  if (knownProjects) {
    const names = knownProjects.map((p) => p.name);
    if (!names.includes(state.project)) names.unshift(state.project);
    const counts = new Map(knownProjects.map((p) => [p.name, p.trace_count]));
    const select = h("select", {id: "project-select", onchange: (e) => switchTo(e.target.value)},
      names.map((name) => h("option", {value: name, selected: name === state.project},
        counts.has(name) ? `${name} (${counts.get(name)} traces)` : name)));
    box.append(label, select);
    return;
  }
  // No project list on this server: a free-text field, with the recently used ones offered.
  const input = h("input", {id: "project-select", type: "text", value: state.project,
    list: "recent-projects", size: 14, spellcheck: "false"});
  const form = h("form", {class: "inline", onsubmit: (e) => {
    e.preventDefault();
    switchTo(input.value.trim());
  }}, label, " ", input, h("datalist", {id: "recent-projects"},
    recentProjects().map((p) => h("option", {value: p}))),
  h("button", {type: "submit"}, "Switch"));
  box.append(form);
}

// the skip link moves focus; following its href would change the route
document.getElementById("skip-link").addEventListener("click", (event) => {
  event.preventDefault();
  document.getElementById("main").focus();
});
window.addEventListener("hashchange", render);
// A new key may see other projects (or only its own): reload the list, and the page if the
// key pinned another project.
onNewKey(async () => {
  const before = state.project;
  await loadProjects();
  if (state.project !== before) navigate(`/${currentRoute().path.split("/")[1] || "trajectories"}`);
});
renderSwitcher();
loadProjects();
render();
