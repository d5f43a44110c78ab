// Capture the two-turn conversation (../script.py CONVERSATION) under @cozeloop/langchain, the
// JS twin of ../conversation.py:
//
//   node conversation.mjs
//
// Writes ../../fixtures/sessions/cozeloop_js/conversation/http_NNN_*.{bin,json}. The library's
// callback handler records no session, conversation or thread id (it declares the `session.id`
// attribute but never sets it, and takes no tags), so the application sets it: a subclass
// (capture.mjs's withSessionId) puts the run's metadata `session_id` on the root span of each run
// as `session.id`, the attribute the library declares for it (tests/capture/README.md, "Sessions").
import { seededRandom, startReceiver, withSessionId } from "./capture.mjs";

const { SCRIPT, buildConversation, runConversation } = await import("./agents.mjs");
Math.random = seededRandom("cozeloop_js/sessions/conversation");
process.env.OTEL_EXPORTER_OTLP_COMPRESSION = "gzip";
const outdir = new URL("../../fixtures/sessions/cozeloop_js/conversation/", import.meta.url);
const receiver = await startReceiver(outdir);
const { endpoint } = receiver;

// ---------------------------------------------------------------- the traced run
const { CozeloopCallbackHandler } = await import("./vendor/cozeloop-langchain.mjs");

const SessionCallbackHandler = withSessionId(CozeloopCallbackHandler);

const handler = new SessionCallbackHandler({
  spanExporter: { workspaceId: "7480000000000000001", token: "pat_dummy_offline_token",
                  traceEndpoint: `${endpoint}/v1/loop/opentelemetry/v1/traces` },
});
console.log("answers:", await runConversation(buildConversation(), [handler]));
await handler.flush();
await handler.shutdown();
await new Promise((resolve) => setTimeout(resolve, 300));
receiver.close();
console.log(`cozeloop_js/conversation: ${receiver.count()} requests (${SCRIPT.conversation.turns.length} turns)`);
process.exit(receiver.count() ? 0 : 1);
