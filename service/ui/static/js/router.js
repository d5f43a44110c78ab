// Hash routes: "#/path?query". The project always travels in the query, so links can be shared.

import {state} from "./api.js";

/** Parse the location hash: "#/path?query" → {path, params}. */
export function currentRoute() {
  const raw = location.hash.replace(/^#/, "") || "/trajectories";
  const [path, query = ""] = raw.split("?");
  return {path, params: new URLSearchParams(query)};
}

/** A hash link to `path` with `params` (the project is always carried along). */
export function link(path, params = {}) {
  const query = new URLSearchParams();
  for (const [key, value] of Object.entries(params)) {
    if (value !== null && value !== undefined && value !== "") query.set(key, value);
  }
  query.set("project", state.project);
  return `#${path}?${query}`;
}

export function navigate(path, params = {}) {
  location.hash = link(path, params);
}

/** Replace the current hash without a re-render (e.g. the selected step). */
export function replaceParams(changes) {
  const {path, params} = currentRoute();
  for (const [key, value] of Object.entries(changes)) {
    if (value === null || value === undefined || value === "") params.delete(key);
    else params.set(key, value);
  }
  history.replaceState(null, "", `#${path}?${params}`);
}
