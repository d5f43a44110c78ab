// What the lists the server pages with a cursor (trajectories, sessions) share: the filter form
// above the list and the "Previous page" / "Next page" buttons below it.

import {h, toIso} from "./dom.js";
import {navigate} from "./router.js";

/** A text filter `name`, its id `prefix` + name, showing the value the address gives it. */
export function textInput(prefix, name, params) {
  return h("input", {id: `${prefix}${name}`, name, type: "text", size: 12,
    value: params.get(name) || "", spellcheck: "false"});
}

/** The filter form of the list at `path`: submitting it opens the list with the filters given
 * (the empty ones left out, `start` and `end` as RFC 3339). */
export function filterForm(path, label, ...fields) {
  const form = h("form", {class: "filters", role: "search", "aria-label": label,
    onsubmit: (event) => {
      event.preventDefault();
      const next = {};
      for (const [key, value] of new FormData(form).entries()) if (value) next[key] = value;
      next.start = toIso(next.start);
      next.end = toIso(next.end);
      navigate(path, next);
    }}, ...fields);
  return form;
}

// The address holds only the current page's cursor, so the cursors of the pages before it are
// kept here, per list and filter set, for "Previous page".
const previousCursors = new Map();

/** Fill `pager` for the page at `path` (e.g. "/sessions") shown with the address `params`. */
export function fillPager(pager, path, params, nextCursor) {
  const filterKey = path + "?" + [...params.entries()]
    .filter(([k]) => k !== "cursor" && k !== "project")
    .map(([k, v]) => `${k}=${v}`).join("&");
  const cursor = params.get("cursor") || "";
  const stack = previousCursors.get(filterKey) || [];
  if (cursor) {
    pager.append(h("button", {type: "button", onclick: () => {
      const before = stack.pop();
      navigate(path, {...Object.fromEntries(params), cursor: before || ""});
    }}, "← Previous page"), " ");
  }
  if (nextCursor) {
    pager.append(h("button", {type: "button", id: "next-page", onclick: () => {
      stack.push(cursor);
      previousCursors.set(filterKey, stack);
      navigate(path, {...Object.fromEntries(params), cursor: nextCursor});
    }}, "Next page →"));
  }
}
