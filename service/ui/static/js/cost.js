// Money as the API prices it: a model no price source knows has no price, and the UI says so
// instead of showing a number.

import {h} from "./dom.js";

/** US dollars, never in exponent form: "$0.0000042", "$0.0005334", "$1.23". */
export function fmtUsd(usd, signed = false) {
  if (usd === null || usd === undefined) return "unknown";
  const v = Number(usd);
  const sign = signed && v > 0 ? "+" : v < 0 ? "−" : "";
  const abs = Math.abs(v);
  if (abs === 0) return `${sign}$0`;
  // cents for a dollar or more; below, four significant digits (a step costs micro-dollars)
  const text = abs >= 1 ? abs.toFixed(2)
    : Number(abs.toPrecision(4)).toFixed(12).replace(/0+$/, "");
  return `${sign}$${text}`;
}

/** The models a cost could not price, as a sentence. */
export function unpricedText(models) {
  return models && models.length ? `no price for ${models.join(", ")}` : "";
}

/** Which sources priced a cost, each with its date; the configured ones when none did. */
export function priceSourcesText(cost) {
  return cost.price_sources && cost.price_sources.length
    ? cost.price_sources.join("; ") : cost.price_table;
}

/**
 * A Cost of the API ({usd, complete, unpriced_models, price_sources, price_table}) as a short
 * node: "$0.0012", "unknown (no price for m)", or "$0.0012 + unknown (no price for m)".
 */
export function costNode(cost) {
  if (!cost) return h("span", {class: "muted"}, "—");
  const title = `prices: ${priceSourcesText(cost)}`;
  const unpriced = unpricedText(cost.unpriced_models);
  if (cost.usd === null || cost.usd === undefined) {
    if (!unpriced) return h("span", {class: "muted", title: "no model steps"}, "—");
    return h("span", {class: "unknown-cost", title}, `unknown (${unpriced})`);
  }
  if (!cost.complete) {
    return h("span", {class: "unknown-cost", title}, `${fmtUsd(cost.usd)} + unknown (${unpriced})`);
  }
  return h("span", {title}, fmtUsd(cost.usd));
}
