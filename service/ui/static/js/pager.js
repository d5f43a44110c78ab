// The "Previous page" / "Next page" buttons of a list the server pages with a cursor. The
// address holds only the current page's cursor, so the cursors of the pages before it are kept
// here, per list and filter set, for "Previous page".

import {h} from "./dom.js";
import {navigate} from "./router.js";

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
