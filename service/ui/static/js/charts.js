// Time-series charts (uPlot, vendored from the npm registry: service/ui/vendor) and, under each,
// the same figures as a table: the chart for the eye, the table for reading exact values and for
// screen readers. A point (or a table row) opens the runs behind it.

import uPlot from "../vendor/uplot/uPlot.esm.js";
import {h} from "./dom.js";

const COLORS = ["#2563eb", "#dc2626", "#16a34a", "#d97706", "#7c3aed", "#0891b2", "#db2777",
  "#4b5563"];
const WIDTH = 560;
const HEIGHT = 220;

/**
 * One chart in a <figure id=`id`>.
 * - `times`: the buckets' starts (Unix seconds), ascending;
 * - `lines`: [{label, values}], `values[i]` the value at `times[i]` (null: no point);
 * - `format(value)`: the axis's and the table's text of a value;
 * - `open(i, line)`: called when the point `i` of the line `line` is clicked (or its row's
 *   link), e.g. to open the runs behind it; `href(i, line)` gives the table's link.
 */
export function timeChart({id, title, times, lines, format, href, open}) {
  const figure = h("figure", {class: "chart", id},
    h("figcaption", null, title));
  if (!times.length) {
    figure.append(h("p", {class: "muted small"}, "No runs in this range."));
    return figure;
  }
  const plot = h("div", {class: "chart-plot"});
  figure.append(plot, dataTable(title, times, lines, format, href));
  const options = {
    width: WIDTH, height: HEIGHT,
    scales: {x: {time: true}},
    series: [{}, ...lines.map((line, n) => ({
      label: line.label, stroke: COLORS[n % COLORS.length], width: 2,
      points: {show: true, size: 6}, value: (u, v) => (v === null ? "—" : format(v)),
    }))],
    axes: [{}, {values: (u, ticks) => ticks.map(format), size: 70}],
    hooks: {ready: [(u) => u.over.addEventListener("click", () => {
      const i = u.cursor.idx;
      if (i === null || i === undefined) return;
      // the line whose point at this time is drawn nearest the pointer
      let best = -1;
      let distance = Infinity;
      lines.forEach((line, n) => {
        if (line.values[i] === null) return;
        const d = Math.abs(u.valToPos(line.values[i], "y") - u.cursor.top);
        if (d < distance) [best, distance] = [n, d];
      });
      if (best >= 0) open(i, best);
    })]},
  };
  const chart = new uPlot(options, [times, ...lines.map((l) => l.values)], plot);
  // read by the browser tests, to click a point where it is drawn
  figure.chart = chart;
  return figure;
}

function dataTable(title, times, lines, format, href) {
  const rows = times.map((t, i) => h("tr", null,
    h("th", {scope: "row"}, h("a", {href: href(i, 0)}, new Date(t * 1000).toISOString())),
    lines.map((line, n) => h("td", {class: "num"},
      line.values[i] === null ? "—" : h("a", {href: href(i, n)}, format(line.values[i]))))));
  return h("details", {class: "chart-data"},
    h("summary", null, "Data"),
    h("table", {class: "grid"},
      h("caption", {class: "sr-only"}, title),
      h("thead", null, h("tr", null, h("th", {scope: "col"}, "Bucket"),
        lines.map((line) => h("th", {scope: "col"}, line.label)))),
      h("tbody", null, rows)));
}
