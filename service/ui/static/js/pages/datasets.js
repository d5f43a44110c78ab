// Datasets: the list, a set's items with their expectations (editable) and metadata
// (read-only), exports.

import {del, download, enc, get, patch, post} from "../api.js";
import {link, navigate} from "../router.js";
import {append, clear, emptyRow, field, fmtInt, fmtTime, gridTable, h, pre, truncate} from "../dom.js";
import {asText, previewText} from "../payload.js";

export async function renderDatasets(ctx) {
  const {main} = ctx;
  main.append(h("h1", null, "Datasets"));
  const sets = await get("/api/v1/datasets");
  if (!ctx.alive()) return;
  const name = h("input", {id: "new-set-name", type: "text", required: true, size: 20,
    spellcheck: "false"});
  const description = h("input", {id: "new-set-description", type: "text", size: 40});
  const status = h("span", {role: "status"});
  main.append(
    gridTable("dataset-table", "Datasets", ["Set", "Description", "Items", "Updated"],
      h("tbody", null, sets.items.length ? sets.items.map((s) => h("tr", null,
        h("td", null, h("a", {href: link(`/datasets/${enc(s.name)}`)}, s.name)),
        h("td", null, s.description),
        h("td", {class: "num"}, fmtInt(s.item_count)),
        h("td", null, fmtTime(s.updated_time))))
        : emptyRow(4, "No dataset yet. Create one below, or add a run from its trajectory page."))),
    h("form", {class: "filters", onsubmit: async (event) => {
      event.preventDefault();
      try {
        await post("/api/v1/datasets", {name: name.value.trim(), description: description.value});
        navigate(`/datasets/${enc(name.value.trim())}`);
      } catch (error) {
        status.textContent = error.message;
        status.className = "failed-text";
      }
    }}, h("h2", null, "New set"),
    field("new-set-name", "Name", name),
    field("new-set-description", "Description", description),
    h("div", {class: "field buttons"}, h("button", {type: "submit"}, "Create")), status));
}

function expectationSummary(e) {
  const tools = Object.entries(e.tools || {}).map(([agent, list]) => `${agent}: ${list.join(", ")}`);
  return h("div", {class: "small"},
    h("div", null, h("span", {class: "muted"}, "agents "), (e.agents || []).join(", ") || "—"),
    h("div", null, h("span", {class: "muted"}, "tools "), tools.join("; ") || "—"),
    h("div", null, h("span", {class: "muted"}, "tool order "), (e.tool_order || []).join(" → ") || "—"),
    e.trajectory ? h("div", null, h("span", {class: "muted"}, "trajectory "),
      `${e.trajectory.length} expected steps`) : null);
}

/** An item's metadata (the rest of the run's state), read-only, as formatted JSON. */
function metadataView(metadata) {
  const keys = Object.keys(metadata || {});
  if (!keys.length) return h("span", {class: "muted"}, "—");
  return h("details", {class: "item-metadata"},
    h("summary", {class: "small"}, keys.join(", ")),
    pre(JSON.stringify(metadata, null, 2)));
}

function itemRow(set, item, onDeleted) {
  const cell = h("td", {class: "expectations"});
  const show = () => clear(cell).append(expectationSummary(item.expectations),
    h("button", {type: "button", class: "small-button", "aria-label": `Edit expectations of item ${item.id}`,
      onclick: edit}, "Edit expectations"));
  const edit = () => {
    const id = `exp-${item.id}`;
    const area = h("textarea", {id, rows: 12, cols: 60, spellcheck: "false"},
      JSON.stringify(item.expectations, null, 2));
    const status = h("p", {role: "status", class: "small"});
    clear(cell).append(h("label", {for: id, class: "small"}, "Expectations (JSON)"), area, status,
      h("div", {class: "actions"},
        h("button", {type: "button", class: "primary", onclick: async () => {
          try {
            const updated = await patch(`/api/v1/datasets/${enc(set)}/items/${enc(item.id)}`,
              {expectations: JSON.parse(area.value)});
            item = updated;
            show();
          } catch (error) {
            status.textContent = error.message;
            status.className = "small failed-text";
          }
        }}, "Save"),
        h("button", {type: "button", onclick: show}, "Cancel")));
    area.focus();
  };
  show();
  const row = h("tr", {dataset: {itemId: item.id}},
    h("td", {class: "mono small"}, item.id),
    h("td", null, item.source_trace_id
      ? h("a", {href: link(`/trajectories/${item.source_trace_id}`), class: "mono small"},
        item.source_trace_id) : h("span", {class: "muted"}, "—")),
    h("td", {class: "preview"}, truncate(previewText(asText(item.input)), 160)),
    cell,
    h("td", {class: "metadata"}, metadataView(item.metadata)),
    h("td", null, (item.tags || []).join(", ")),
    h("td", null, fmtTime(item.created_time)),
    h("td", null, h("button", {type: "button", "aria-label": `Delete item ${item.id}`,
      onclick: async (event) => {
        if (!confirm(`Delete item ${item.id}?`)) return;
        try {
          await del(`/api/v1/datasets/${enc(set)}/items/${enc(item.id)}`);
          row.remove();
          onDeleted();
        } catch (error) {
          event.target.replaceWith(h("span", {class: "failed-text"}, error.message));
        }
      }}, "Delete")));
  return row;
}

export async function renderDataset(ctx) {
  const {main, args: [name]} = ctx;
  const set = await get(`/api/v1/datasets/${enc(name)}`);
  if (!ctx.alive()) return;
  const count = h("span", {id: "item-count"}, fmtInt(set.item_count));
  const exportStatus = h("span", {role: "status", class: "small"});
  const exporter = (format, text) => h("button", {type: "button", onclick: async () => {
    try {
      await download(`/api/v1/datasets/${enc(name)}/export`, {format}, `${name}.${format}`);
      exportStatus.textContent = "";
    } catch (error) {
      exportStatus.textContent = error.message;
    }
  }}, text);
  const body = h("tbody");
  const more = h("div", {class: "pager"});
  append(main, [
    h("div", {class: "crumbs"}, h("a", {href: link("/datasets")}, "Datasets"), " / "),
    h("h1", null, set.name),
    set.description ? h("p", null, set.description) : null,
    h("p", null, count, " items · created ", fmtTime(set.created_time)),
    h("div", {class: "actions", role: "group", "aria-label": "Export"},
      h("span", {class: "muted"}, "Export: "), exporter("jsonl", "JSONL"), " ",
      exporter("csv", "CSV"), " ", exporter("agentevals", "agentevals"), " ", exportStatus),
    gridTable("item-table", `Items of ${set.name}`, ["Item", "Source trajectory", "Input",
      "Expectations", "Metadata", "Tags", "Added", ""], body),
    more]);
  const onDeleted = () => { count.textContent = fmtInt(Number(count.textContent.replace(/,/g, "")) - 1); };
  const load = async (cursor) => {
    const page = await get(`/api/v1/datasets/${enc(name)}/items`, {limit: 100, cursor});
    if (!ctx.alive()) return;
    body.append(...page.items.map((item) => itemRow(name, item, onDeleted)));
    if (!body.childElementCount) {
      body.append(emptyRow(8, "No items yet."));
    }
    clear(more);
    if (page.next_cursor) {
      more.append(h("button", {type: "button", onclick: () => load(page.next_cursor)}, "More items"));
    }
  };
  await load(null);
}
