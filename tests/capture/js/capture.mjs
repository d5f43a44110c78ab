// What every JS capture script shares: Math.random seeded from the capture's name, and the
// receiver that writes each request as the client sent it (as ../receiver.py does).
import { mkdirSync, rmSync, writeFileSync } from "node:fs";
import { createServer } from "node:http";

/** A deterministic Math.random for `text`: FNV-1a of the name, then mulberry32. */
export function seededRandom(text) {
  let h = 2166136261;
  for (const ch of text) h = Math.imul(h ^ ch.charCodeAt(0), 16777619) >>> 0;
  return () => {
    h = (h + 0x6d2b79f5) >>> 0;
    let t = Math.imul(h ^ (h >>> 15), 1 | h);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/**
 * A receiver on a free loopback port that writes request N to `outdir` (emptied first) as
 * http_NNN_<path>.bin (the body as sent) and .json (method, path, headers, body length), and
 * answers as the server would: an empty OTLP answer, or Coze Loop's success. Returns its
 * `endpoint`, `count()` of requests so far and `close()`.
 */
export async function startReceiver(outdir) {
  rmSync(outdir, { recursive: true, force: true });
  mkdirSync(outdir, { recursive: true });
  let count = 0;
  const server = createServer((req, res) => {
    const parts = [];
    req.on("data", (part) => parts.push(part));
    req.on("end", () => {
      const body = Buffer.concat(parts);
      count += 1;
      const safe = req.url.split("?")[0].replace(/^\/+|\/+$/g, "").replaceAll("/", "_");
      const base = new URL(`http_${String(count).padStart(3, "0")}_${safe}`, outdir);
      writeFileSync(`${base.pathname}.bin`, body);
      writeFileSync(`${base.pathname}.json`, JSON.stringify(
        { method: req.method, path: req.url, headers: req.headers, body_len: body.length },
        null, 2) + "\n");
      const json = (req.headers["content-type"] || "").includes("json");
      const out = req.url.includes("opentelemetry") ? (json ? "{}" : "")
        : JSON.stringify({ code: 0, msg: "success", data: {} });
      res.writeHead(200, { "content-type": json ? "application/json" : "application/x-protobuf" });
      res.end(out);
    });
  });
  await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    endpoint: `http://127.0.0.1:${server.address().port}`,
    count: () => count,
    close: () => server.close(),
  };
}

/**
 * `CozeloopCallbackHandler` (from the vendored @cozeloop/langchain), extended as a JS application
 * has to: its handler records no session, conversation or thread id (it declares `session.id`
 * but never sets it, and takes no tags), so the subclass puts the run's metadata `session_id` on
 * each run's root span as `session.id` (../README.md, "Sessions").
 */
export function withSessionId(CozeloopCallbackHandler) {
  return class SessionCallbackHandler extends CozeloopCallbackHandler {
    // (chain, inputs, runId, parentRunId, tags, metadata, runType, runName)
    handleChainStart(...args) {
      const out = super.handleChainStart(...args);
      const [, , runId, parentRunId, , metadata] = args;
      if (!parentRunId && metadata?.session_id) {
        this._runMap.get(runId)?.setAttribute("session.id", String(metadata.session_id));
      }
      return out;
    }
  };
}
