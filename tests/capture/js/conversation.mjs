// Capture the two-turn conversation (../script.py CONVERSATION) under @cozeloop/langchain, the
// JS twin of ../conversation.py:
//
//   node conversation.mjs
//
// Writes ../../fixtures/sessions/cozeloop_js/conversation/http_NNN_*.{bin,json}. The library's
// callback handler records no session, conversation or thread id (it declares the `session.id`
// attribute but never sets it, and takes no tags), so the application sets it: a subclass puts
// the run's metadata `session_id` on the root span of each run as `session.id`, the attribute
// the library declares for it (tests/capture/README.md, "Sessions").
import { mkdirSync, rmSync, writeFileSync } from "node:fs";
import { createServer } from "node:http";

function seededRandom(text) {
  let h = 2166136261; // FNV-1a of the name, then mulberry32
  for (const ch of text) h = Math.imul(h ^ ch.charCodeAt(0), 16777619) >>> 0;
  return () => {
    h = (h + 0x6d2b79f5) >>> 0;
    let t = Math.imul(h ^ (h >>> 15), 1 | h);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const { SCRIPT, buildConversation, runConversation } = await import("./agents.mjs");
Math.random = seededRandom("cozeloop_js/sessions/conversation");
process.env.OTEL_EXPORTER_OTLP_COMPRESSION = "gzip";
const outdir = new URL("../../fixtures/sessions/cozeloop_js/conversation/", import.meta.url);
rmSync(outdir, { recursive: true, force: true });
mkdirSync(outdir, { recursive: true });

// ---------------------------------------------------------------- receiver (as ../receiver.py)
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
const endpoint = `http://127.0.0.1:${server.address().port}`;

// ---------------------------------------------------------------- the traced run
const { CozeloopCallbackHandler } = await import("./vendor/cozeloop-langchain.mjs");

class SessionCallbackHandler extends CozeloopCallbackHandler {
  // (chain, inputs, runId, parentRunId, tags, metadata, runType, runName)
  handleChainStart(...args) {
    const out = super.handleChainStart(...args);
    const [, , runId, parentRunId, , metadata] = args;
    if (!parentRunId && metadata?.session_id) {
      this._runMap.get(runId)?.setAttribute("session.id", String(metadata.session_id));
    }
    return out;
  }
}

const handler = new SessionCallbackHandler({
  spanExporter: { workspaceId: "7480000000000000001", token: "pat_dummy_offline_token",
                  traceEndpoint: `${endpoint}/v1/loop/opentelemetry/v1/traces` },
});
console.log("answers:", await runConversation(buildConversation(), [handler]));
await handler.flush();
await handler.shutdown();
await new Promise((resolve) => setTimeout(resolve, 300));
server.close();
console.log(`cozeloop_js/conversation: ${count} requests (${SCRIPT.conversation.turns.length} turns)`);
process.exit(count ? 0 : 1);
