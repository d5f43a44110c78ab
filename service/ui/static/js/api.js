// The REST client of the UI: every request carries the current project and, once the server has
// asked for one (401), the API key as `Authorization: Bearer <key>`. The key is asked for once
// and kept for the browser session (sessionStorage).

import {clear, h, notice} from "./dom.js";

const KEY_STORAGE = "trajhub.apiKey";
const PROJECT_STORAGE = "trajhub.project";

export const state = {
  project: localStorage.getItem(PROJECT_STORAGE) || "default",
  /** set when an API key allows only one project: the switcher then shows only that one */
  lockedProject: null,
};

export function setProject(name) {
  if (state.lockedProject && name !== state.lockedProject) return;
  state.project = name || "default";
  localStorage.setItem(PROJECT_STORAGE, state.project);
}

export function apiKey() {
  return sessionStorage.getItem(KEY_STORAGE);
}

export class ApiError extends Error {
  constructor(status, detail) {
    super(detail ? `${status}: ${detail}` : `HTTP ${status}`);
    this.status = status;
    this.detail = detail;
  }
}

/** What to show for a failed request: the server's message, or the error itself. */
export function errorText(error) {
  return error instanceof ApiError ? error.message : String(error);
}

/** The runner of a page's actions: `act(call, done)` runs the request `call`, says in `status`
 * what came of it (`done`, or `done(answer)`; else the server's message), then redraws. */
export function actions(status, redraw) {
  return async (call, done) => {
    try {
      const answer = await call();
      clear(status).append(notice(typeof done === "function" ? done(answer) : done));
    } catch (error) {
      clear(status).append(notice(errorText(error), "error"));
    }
    await redraw();
  };
}

/** The `detail` of an error response: FastAPI's string, or its list of validation errors. */
async function errorDetail(response) {
  try {
    const body = await response.json();
    if (typeof body.detail === "string") return body.detail;
    if (Array.isArray(body.detail)) {
      return body.detail.map((d) => `${(d.loc || []).join(".")}: ${d.msg}`).join("; ");
    }
    return JSON.stringify(body);
  } catch {
    return response.statusText;
  }
}

let pendingKey = null;
let pendingChange = null;
let keyListener = async () => {};

/** `listener` runs once per new key, before the requests that waited for the key go on. */
export function onNewKey(listener) {
  keyListener = listener;
}

function keyChanged() {
  if (!pendingChange) {
    pendingChange = keyListener().finally(() => { pendingChange = null; });
  }
  return pendingChange;
}

/** Ask for an API key (once, however many requests got a 401 at the same time). */
function askForKey(message) {
  if (!pendingKey) {
    pendingKey = keyDialog(message).finally(() => { pendingKey = null; });
  }
  return pendingKey;
}

function keyDialog(message) {
  return new Promise((resolve) => {
    const input = h("input", {id: "api-key-input", type: "password", required: true,
      autocomplete: "off", spellcheck: "false"});
    const dialog = h("dialog", {class: "key-dialog", "aria-labelledby": "api-key-title"},
      h("form", {method: "dialog"},
        h("h2", {id: "api-key-title"}, "API key required"),
        h("p", null, message || "This server requires an API key."),
        h("label", {for: "api-key-input"}, "API key"), " ", input,
        h("div", {class: "actions"},
          h("button", {type: "submit", value: "ok", class: "primary"}, "Use key"),
          h("button", {type: "submit", value: "cancel", formnovalidate: true}, "Cancel"))));
    dialog.addEventListener("close", () => {
      const key = dialog.returnValue === "ok" ? input.value.trim() : "";
      dialog.remove();
      if (key) sessionStorage.setItem(KEY_STORAGE, key);
      resolve(key || null);
    });
    document.body.append(dialog);
    dialog.showModal();
    input.focus();
  });
}

function buildUrl(path, query, project) {
  const url = new URL(path, location.origin);
  if (project) url.searchParams.set("project", project);
  for (const [key, value] of Object.entries(query || {})) {
    if (value === null || value === undefined || value === "") continue;
    if (Array.isArray(value)) value.forEach((v) => url.searchParams.append(key, v));
    else url.searchParams.set(key, String(value));
  }
  return url;
}

/**
 * Call the REST API. Returns the parsed JSON body (null for 204), or the Response itself with
 * `raw: true`. Throws ApiError for any other non-2xx answer.
 *   project: false to send none (e.g. GET /api/v1/projects)
 *   keyListener: false for the requests of the new-key listener itself
 */
export async function request(path, {method = "GET", query, body, headers = {},
                                      raw = false, project = true, keyListener = true} = {}) {
  for (let attempt = 0; ; attempt++) {
    // built per attempt: a new key may have pinned another project
    const url = buildUrl(path, query, project ? state.project : null);
    const init = {method, headers: {...headers}};
    const key = apiKey();
    if (key) init.headers.Authorization = `Bearer ${key}`;
    if (body !== undefined) {
      init.headers["Content-Type"] = "application/json";
      init.body = JSON.stringify(body);
    }
    const response = await fetch(url, init);
    if (response.status === 401 && attempt < 3) {
      const detail = await errorDetail(response);
      if (key) sessionStorage.removeItem(KEY_STORAGE);
      const fresh = await askForKey(key ? `The server rejected the key (${detail}).` : detail);
      if (!fresh) throw new ApiError(401, detail);
      if (keyListener) await keyChanged();
      continue;
    }
    if (raw) return response;
    if (!response.ok) throw new ApiError(response.status, await errorDetail(response));
    if (response.status === 204) return null;
    return response.json();
  }
}

export const get = (path, query, options = {}) => request(path, {...options, query});
export const post = (path, body, options = {}) => request(path, {...options, method: "POST", body});
export const patch = (path, body, options = {}) => request(path, {...options, method: "PATCH", body});
export const del = (path, options = {}) => request(path, {...options, method: "DELETE"});

/** Download a response body as a file (works with the Authorization header, unlike a link). */
export async function download(path, query, fallbackName) {
  const response = await request(path, {query, raw: true});
  if (!response.ok) throw new ApiError(response.status, await errorDetail(response));
  const disposition = response.headers.get("Content-Disposition") || "";
  // filename* (RFC 5987) holds the exact name; filename is its ASCII fallback
  const exact = /filename\*=UTF-8''([^;]+)/.exec(disposition);
  const ascii = /filename="([^"]+)"/.exec(disposition);
  const name = exact ? decodeURIComponent(exact[1]) : ascii ? ascii[1] : fallbackName;
  const blob = await response.blob();
  const href = URL.createObjectURL(blob);
  const link = h("a", {href, download: name, hidden: true});
  document.body.append(link);
  link.click();
  link.remove();
  setTimeout(() => URL.revokeObjectURL(href), 10_000);
}

export const enc = encodeURIComponent;

/** The `cursor` of the page at position `n` of a list paged by position (a trajectory's steps
 * or events): the server's encoding of such a cursor (service/api/cursors.py), which this UI
 * ships with, so a table can jump to any page instead of only to the next one. */
export const positionCursor = (n) =>
  btoa(JSON.stringify([n])).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
