// Small DOM and formatting helpers shared by every page.

/** Create an element: h("a", {href: "#/x", class: "y", onclick: f}, "text", child, [more]). */
export function h(tag, attrs, ...children) {
  const el = document.createElement(tag);
  if (attrs) {
    for (const [key, value] of Object.entries(attrs)) {
      if (value === null || value === undefined || value === false) continue;
      if (key === "class") el.className = value;
      else if (key === "style") Object.assign(el.style, value);
      else if (key === "dataset") Object.assign(el.dataset, value);
      else if (key.startsWith("on")) el.addEventListener(key.slice(2), value);
      else if (key === "value") el.value = value;
      else if (value === true) el.setAttribute(key, "");
      else el.setAttribute(key, String(value));
    }
  }
  append(el, children);
  return el;
}

/** One field of a form: its control `id`, with a label saying `text`. */
export function field(id, text, control) {
  return h("div", {class: "field"}, h("label", {for: id}, text), control);
}

/** The fields of a form, one a [text, control] pair: each control labelled by its own id. */
export function labelledFields(pairs) {
  return pairs.map(([text, control]) => field(control.id, text, control));
}

/** A table's head: one row of column headers (`scope="col"`, for screen readers). */
export function headRow(columns) {
  return h("thead", null, h("tr", null, columns.map((c) => h("th", {scope: "col"}, c))));
}

/** A grid table of records: a caption for screen readers only, the column heads, then `body`
 * (a tbody, filled now or later). */
export function gridTable(id, caption, columns, body) {
  return h("table", {class: "grid", id}, h("caption", {class: "sr-only"}, caption),
    headRow(columns), body);
}

/** The head of a page listing a project's records of one kind (alert rules, rules): its
 * `title` and `intro`, appended to `main` now; a status line `${id}-status` for what the page's
 * buttons did; `fill(records, row)`, which puts a row (`row(record)`) per record in the table
 * `${id}-table`, or the `empty` text where there is none; and `place(...parts)`, which appends
 * the status line, the table and then the page's other `parts` to `main`. */
export function recordsPage(main, {title, intro, id, caption, columns, empty}) {
  main.append(h("h1", null, title), h("p", {class: "muted"}, intro));
  const status = h("div", {id: `${id}-status`, role: "status"});
  const body = h("tbody");
  const table = gridTable(`${id}-table`, caption, columns, body);
  return {
    status,
    fill(records, row) {
      clear(body).append(...(records.length ? records.map(row)
        : [emptyRow(columns.length, empty)]));
    },
    place(...parts) {
      append(main, [status, table, ...parts]);
    },
  };
}

/** A button acting on one row's record: `cls` names what it does, `label` tells a screen
 * reader which record; with `pressed` (true or false) it is a switch (aria-pressed). */
export function rowButton(cls, label, text, onclick, pressed) {
  return h("button", {type: "button", class: cls, "aria-label": label, onclick,
    "aria-pressed": pressed === undefined ? null : String(pressed)}, text);
}

/** The one row of a table that has no records: `text`, muted, across its `span` columns. */
export function emptyRow(span, text) {
  return h("tr", null, h("td", {colspan: span, class: "muted"}, text));
}

export function append(el, children) {
  for (const child of children.flat(Infinity)) {
    if (child === null || child === undefined || child === false) continue;
    el.append(child instanceof Node ? child : String(child));
  }
  return el;
}

export function clear(el) {
  el.replaceChildren();
  return el;
}

const intFormat = new Intl.NumberFormat("en-US");

export function fmtInt(n) {
  return n === null || n === undefined || Number.isNaN(Number(n)) ? "—" : intFormat.format(Number(n));
}

/** Milliseconds as "840 ms", "4.2 s", "3 m 12 s". */
export function fmtMs(ms) {
  if (ms === null || ms === undefined || ms === "") return "—";
  const v = Number(ms);
  if (Number.isNaN(v)) return "—";
  if (v < 1000) return `${Math.round(v)} ms`;
  if (v < 60_000) return `${(v / 1000).toFixed(v < 10_000 ? 2 : 1)} s`;
  const m = Math.floor(v / 60_000);
  return `${m} m ${Math.round((v % 60_000) / 1000)} s`;
}

/** An RFC 3339 time (or Unix ms) in local time, "2026-11-22 09:29:48". */
export function fmtTime(value) {
  if (value === null || value === undefined || value === "") return "—";
  const d = new Date(value);
  if (Number.isNaN(d.getTime())) return typeof value === "number" ? "—" : String(value);
  const p = (n, w = 2) => String(n).padStart(w, "0");
  return `${d.getFullYear()}-${p(d.getMonth() + 1)}-${p(d.getDate())} ` +
    `${p(d.getHours())}:${p(d.getMinutes())}:${p(d.getSeconds())}`;
}

export function fmtPct(x) {
  return x === null || x === undefined ? "—" : `${(x * 100).toFixed(1)}%`;
}

export function fmtScore(x) {
  return x === null || x === undefined ? "—" : Number(x).toFixed(3);
}

export function truncate(text, n) {
  if (text === null || text === undefined) return "";
  const s = String(text);
  return s.length > n ? s.slice(0, n - 1) + "…" : s;
}

/** A status badge: "final", "open" (refreshing), "failed"… */
export function badge(text, kind) {
  return h("span", {class: `badge badge-${kind || text}`}, text);
}

/** A message block for loading, empty and error states. */
export function notice(text, kind = "info") {
  return h("p", {class: `notice notice-${kind}`, role: kind === "error" ? "alert" : null}, text);
}

export function pre(text, cls = "json") {
  return h("pre", {class: cls, tabindex: "0"}, text);
}

/** datetime-local value → RFC 3339 (UTC) for the API, and back. */
export function toIso(local) {
  if (!local) return "";
  const d = new Date(local);
  return Number.isNaN(d.getTime()) ? "" : d.toISOString();
}

export function toLocal(iso) {
  if (!iso) return "";
  const d = new Date(iso);
  if (Number.isNaN(d.getTime())) return "";
  const p = (n) => String(n).padStart(2, "0");
  return `${d.getFullYear()}-${p(d.getMonth() + 1)}-${p(d.getDate())}` +
    `T${p(d.getHours())}:${p(d.getMinutes())}`;
}
