// Review by people (docs/review.md): the project's review queues, and a queue's review
// screen, worked by keyboard — n takes the next item, digits or y/n give the active score,
// c focuses the comment, Enter completes, s skips. Scores go through the server's checks
// (POST /api/v1/review-queues/{name}/items/{id}/complete): a score outside its config comes
// back as a 400 naming it, shown as it is.

import {apiKey, enc, errorText, get, post} from "../api.js";
import {clear, fmtInt, h, notice, truncate} from "../dom.js";
import {payload} from "../payload.js";
import {link} from "../router.js";

const AUTHOR_KEY = "trajhub.reviewer";

export async function renderReviewQueues(ctx) {
  const {main} = ctx;
  const {items: queues} = await get("/api/v1/review-queues");
  if (!ctx.alive()) return;
  main.append(h("header", {class: "page-head"}, h("h1", null, "Review"),
    h("p", {class: "muted"}, "Review queues: runs for people to review and score. " +
      "Create one with `trajhub review create`, fill it with `trajhub review add`.")));
  if (!queues.length) {
    main.append(notice("No review queues in this project yet."));
    return;
  }
  main.append(h("table", {class: "list", id: "queue-table"},
    h("thead", null, h("tr", null, ["Queue", "Scores", "Total", "Done", "Skipped", "In review",
      "Description"].map((t) => h("th", null, t)))),
    h("tbody", null, queues.map((q) => h("tr", {"data-queue": q.name},
      h("td", null, h("a", {href: link(`/review/${enc(q.name)}`)}, q.name)),
      h("td", null, q.score_names.join(", ")),
      h("td", {class: "num"}, fmtInt(q.total)), h("td", {class: "num"}, fmtInt(q.done)),
      h("td", {class: "num"}, fmtInt(q.skipped)), h("td", {class: "num"}, fmtInt(q.in_review)),
      h("td", null, truncate(q.description, 80)))))));
}

/** The keys that give a score of this config, and the value each gives. */
function scoreKeys(config) {
  if (!config || config.data_type === "boolean") return [["y", true], ["n", false]];
  if (config.data_type === "category") {
    return (config.categories || []).slice(0, 9).map((c, i) => [String(i + 1), c]);
  }
  const low = config.min ?? 0;
  const high = config.max ?? 9;
  const keys = [];
  for (let d = Math.max(0, Math.ceil(low)); d <= Math.min(9, Math.floor(high)); d++) {
    keys.push([String(d), d]);
  }
  return keys;
}

export async function renderReview(ctx) {
  const {main, args: [name]} = ctx;
  const [queue, {items: configs}] = await Promise.all([
    get(`/api/v1/review-queues/${enc(name)}`), get("/api/v1/score-configs")]);
  if (!ctx.alive()) return;
  const configOf = new Map(configs.map((c) => [c.name, c]));
  const screen = new ReviewScreen(ctx, queue, configOf);
  main.append(screen.el);
  screen.showQueue(queue);
  const onKey = (event) => {
    if (!ctx.alive()) {
      document.removeEventListener("keydown", onKey);
      return;
    }
    screen.key(event);
  };
  document.addEventListener("keydown", onKey);
}

class ReviewScreen {
  constructor(ctx, queue, configOf) {
    this.ctx = ctx;
    this.name = queue.name;
    this.scoreNames = queue.score_names;
    this.configOf = configOf;
    this.item = null;
    this.values = new Map();
    this.active = 0;
    this.busy = false;
    this.progress = h("p", {id: "review-progress", class: "muted"});
    this.message = h("div", {id: "review-message", role: "status"});
    this.author = h("input", {id: "review-author", name: "author", size: 16,
      value: localStorage.getItem(AUTHOR_KEY) || "",
      onchange: () => localStorage.setItem(AUTHOR_KEY, this.author.value.trim())});
    this.body = h("div", {id: "review-item"});
    this.el = h("div", {class: "review-page"},
      h("header", {class: "page-head"},
        h("div", {class: "crumbs"}, h("a", {href: link("/review")}, "Review"), " / "),
        h("h1", null, queue.name),
        queue.description ? h("p", null, queue.description) : null,
        this.progress,
        h("p", {class: "muted", id: "review-keys"},
          "Keys: n next · y/n or digits score the active score · c comment · Enter complete · " +
          "s skip · Esc leave a text box"),
        apiKey() ? null : h("label", {for: "review-author"}, "Reviewer ", this.author)),
      this.message, this.body);
    this.body.append(notice("Press n to take the next item."));
  }

  showQueue(q) {
    this.progress.textContent = `${q.total} items: ${q.done} done, ${q.skipped} skipped, ` +
      `${q.in_review} in review, ${q.pending - q.in_review} waiting`;
  }

  async refreshQueue() {
    try {
      this.showQueue(await get(`/api/v1/review-queues/${enc(this.name)}`));
    } catch (error) {
      console.warn(error);
    }
  }

  say(text, kind = "info") {
    this.message.replaceChildren(notice(text, kind));
  }

  authorBody() {
    if (apiKey()) return {};
    const author = this.author.value.trim();
    return author ? {author} : {};
  }

  key(event) {
    const typing = event.target instanceof HTMLElement
      && (event.target.matches("input, textarea, select") || event.target.isContentEditable);
    if (typing) {
      if (event.key === "Escape") event.target.blur();
      else if (event.key === "Enter" && (event.ctrlKey || event.metaKey)
               && event.target.id === "review-comment") {
        event.preventDefault();
        this.complete();
      }
      return;
    }
    if (event.ctrlKey || event.metaKey || event.altKey) return;
    if (event.key === "n" && !this.item) {
      event.preventDefault();
      this.next();
      return;
    }
    if (!this.item) return;
    if (event.key === "c") {
      event.preventDefault();
      document.getElementById("review-comment")?.focus();
    } else if (event.key === "Enter") {
      event.preventDefault();
      this.complete();
    } else if (event.key === "s") {
      event.preventDefault();
      this.skip();
    } else if (event.key === "Tab" && this.scoreNames.length > 1) {
      event.preventDefault();
      this.activate((this.active + (event.shiftKey ? -1 : 1) + this.scoreNames.length)
        % this.scoreNames.length);
    } else {
      const name = this.scoreNames[this.active];
      const hit = scoreKeys(this.configOf.get(name)).find(([k]) => k === event.key);
      if (hit) {
        event.preventDefault();
        this.give(name, hit[1]);
      }
    }
  }

  async next() {
    if (this.busy) return;
    this.busy = true;
    try {
      const {item} = await post(`/api/v1/review-queues/${enc(this.name)}/next`,
        this.authorBody());
      if (!this.ctx.alive()) return;
      this.message.replaceChildren();
      if (!item) {
        clear(this.body).append(notice("Nothing left to review: every item is done, skipped " +
          "or held by another reviewer."));
      } else {
        await this.show(item);
      }
    } catch (error) {
      this.say(errorText(error), "error");
    } finally {
      this.busy = false;
      this.refreshQueue();
    }
  }

  async show(item) {
    this.item = item;
    this.values = new Map();
    this.active = 0;
    let doc = null;
    try {
      doc = await get(`/api/v1/trajectories/${enc(item.trace_id)}`);
    } catch (error) {
      console.warn(error);
    }
    if (!this.ctx.alive()) return;
    const root = doc?.root_step || {};
    const steps = (doc?.agent_steps || []).flatMap((agent) =>
      (agent.steps || []).map((step) => ({agent: agent.name, step})));
    this.scoreRows = this.scoreNames.map((name, i) => this.scoreRow(name, i));
    this.comment = h("textarea", {id: "review-comment", name: "comment", rows: 3, cols: 60,
      placeholder: "Why (c to write, Esc to leave)"});
    this.expectations = h("textarea", {id: "review-expectations", name: "expectations",
      rows: 4, cols: 60, placeholder: '{"tools": {"agent": ["tool"]}} — the expected ' +
        "behaviour, corrected (optional)"});
    clear(this.body).append(
      h("section", {class: "review-scores", "aria-label": "Scores"},
        h("h2", null, "Scores"),
        this.scoreNames.length ? h("table", {class: "list", id: "review-score-table"},
          h("tbody", null, this.scoreRows)) : h("p", {class: "muted"}, "This queue asks for no scores."),
        h("label", {for: "review-comment"}, "Comment"), this.comment,
        h("details", null, h("summary", null, "Correct the expected behaviour"),
          this.expectations),
        h("p", null,
          h("button", {type: "button", id: "review-complete", onclick: () => this.complete()},
            "Complete (Enter)"), " ",
          h("button", {type: "button", id: "review-skip", onclick: () => this.skip()},
            "Skip (s)"))),
      h("section", {class: "review-run", "aria-label": "The run"},
        h("h2", null, "Run ", h("a", {class: "mono", id: "review-trace",
          href: link(`/trajectories/${enc(item.trace_id)}`)}, item.trace_id)),
        doc ? [
          h("h3", null, "Input"), payload(root.input, "messages"),
          h("h3", null, "Output"), payload(root.output, "messages"),
          h("h3", null, `Steps (${steps.length})`),
          h("table", {class: "list", id: "review-steps"}, h("tbody", null,
            steps.map(({agent, step}) => h("tr", null,
              h("td", null, agent || ""),
              h("td", null, h("span", {class: `type type-${step.type}`}, step.type)),
              h("td", null, step.name || "(unnamed)"),
              h("td", {class: "muted"}, step.status === "error" ? "error" : "")))))]
          : notice("The trajectory could not be read.", "error")));
    this.activate(0);
  }

  scoreRow(name, index) {
    const config = this.configOf.get(name);
    const keys = scoreKeys(config);
    const value = h("td", {class: "review-value", "data-value-of": name}, "—");
    const row = h("tr", {"data-score": name, onclick: () => this.activate(index)},
      h("th", null, name),
      h("td", {class: "muted"}, config ? config.data_type : "any"),
      h("td", null, keys.map(([k, v]) => h("button", {type: "button", class: "key",
        onclick: (e) => { e.stopPropagation(); this.activate(index); this.give(name, v); }},
        `${k}: ${String(v)}`))),
      value);
    row.valueCell = value;
    return row;
  }

  activate(index) {
    this.active = index;
    this.scoreRows?.forEach((row, i) => {
      if (i === index) row.setAttribute("aria-current", "true");
      else row.removeAttribute("aria-current");
    });
  }

  give(name, value) {
    this.values.set(name, value);
    const index = this.scoreNames.indexOf(name);
    this.scoreRows[index].valueCell.textContent = String(value);
    // the next score without a value becomes the active one
    const open = this.scoreNames.findIndex((n) => !this.values.has(n));
    if (open >= 0) this.activate(open);
  }

  async complete() {
    if (!this.item || this.busy) return;
    const missing = this.scoreNames.filter((n) => !this.values.has(n));
    if (missing.length) {
      this.say(`Give ${missing.join(", ")} first.`, "error");
      return;
    }
    const body = {...this.authorBody(),
      scores: [...this.values].map(([name, value]) => ({name, value}))};
    const comment = this.comment.value.trim();
    if (comment) body.comment = comment;
    const expectations = this.expectations.value.trim();
    if (expectations) {
      try {
        body.expectations = JSON.parse(expectations);
      } catch (error) {
        this.say(`The expected behaviour is not JSON: ${error.message}`, "error");
        return;
      }
    }
    await this.settle("complete", body, "Completed");
  }

  async skip() {
    if (!this.item || this.busy) return;
    await this.settle("skip", this.authorBody(), "Skipped");
  }

  /** POST the item's `action` (complete or skip), then say `done` and offer the next item. */
  async settle(action, body, done) {
    this.busy = true;
    try {
      await post(`/api/v1/review-queues/${enc(this.name)}/items/${this.item.id}/${action}`, body);
      if (!this.ctx.alive()) return;
      this.finished(`${done} ${this.item.trace_id}. Press n for the next item.`);
    } catch (error) {
      this.say(errorText(error), "error");
    } finally {
      this.busy = false;
    }
  }

  finished(text) {
    this.item = null;
    clear(this.body);
    this.say(text);
    this.refreshQueue();
  }
}
