// Capture one shape under one JS client.
//
//   node run.mjs <shape> <stream|invoke> [cozeloop_js|openinference_js|traceloop_js]
//
// cozeloop_js (the default): @cozeloop/langchain's callback handler, OTLP/JSON to
// /v1/loop/opentelemetry/v1/traces. openinference_js: @arizeai/openinference-instrumentation-langchain,
// which patches @langchain/core's CallbackManager and exports through the OTel JS SDK 2.x
// (NodeTracerProvider, BatchSpanProcessor) and its OTLP exporter, protobuf over HTTP, gzip, to
// /v1/traces. traceloop_js: @traceloop/node-server-sdk's initialize() (its own NodeSDK, LangChain
// instrumentation and OTLP protobuf exporter, gzip, to /v1/traces) and the run in withWorkflow,
// as Traceloop documents it (../README.md, "JS setup").
//
// Writes ../../fixtures/real-clients/<client>/<shape>.<graph>.<mode>/http_NNN_*.{bin,json},
// the request bodies exactly as sent (gzip: OTEL_EXPORTER_OTLP_COMPRESSION) and their headers.
// Trace and span ids come from the OTel SDK's RandomIdGenerator, which draws on Math.random:
// Math.random is seeded from the capture's name first, so re-running gives the same ids and no
// two captures share a trace id.
import { seededRandom, startReceiver, withSessionId } from "./capture.mjs";

const CLIENTS = ["cozeloop_js", "openinference_js", "traceloop_js"];
const [shape, mode, client = "cozeloop_js"] = process.argv.slice(2);
if (!shape || !["stream", "invoke"].includes(mode) || !CLIENTS.includes(client)) {
  console.error(`usage: node run.mjs <shape> <stream|invoke> [${CLIENTS.join("|")}]`);
  process.exit(2);
}

const { SCRIPT, build, close, run } = await import("./agents.mjs");
const runName = `${shape}.${SCRIPT.shapes[shape].graph}.${mode}`;
const interrupted = SCRIPT.interrupt_shapes.includes(shape);
Math.random = seededRandom(`${client}/${runName}`);
process.env.OTEL_EXPORTER_OTLP_COMPRESSION = "gzip";
const outdir = new URL(`../../fixtures/real-clients/${client}/${runName}/`, import.meta.url);
const receiver = await startReceiver(outdir);
const { endpoint } = receiver;

// ---------------------------------------------------------------- the traced run
/** The client's callbacks to pass to the run (none: it patches LangChain) and its flush. */
async function setUp() {
  if (client === "cozeloop_js") {
    const { CozeloopCallbackHandler } = await import("./vendor/cozeloop-langchain.mjs");
    // an interrupted thread's runs carry its session as conversation.mjs's turns do, so the
    // resumed run is the next turn of the interrupted one's session; the other shapes are one
    // run each and keep the plain handler
    const Handler = interrupted ? withSessionId(CozeloopCallbackHandler) : CozeloopCallbackHandler;
    const handler = new Handler({
      spanExporter: { workspaceId: "7480000000000000001", token: "pat_dummy_offline_token",
                      traceEndpoint: `${endpoint}/v1/loop/opentelemetry/v1/traces` },
    });
    return { callbacks: [handler],
             finish: async () => { await handler.flush(); await handler.shutdown(); } };
  }
  if (client === "traceloop_js") {
    // As Traceloop documents it: its SDK's initialize() (which starts the OTel NodeSDK with
    // Traceloop's span processor and @traceloop/instrumentation-langchain, patching both the CJS
    // and the ESM @langchain/core CallbackManager), pointed at the receiver instead of
    // api.traceloop.com; the run itself goes in withWorkflow (see `traced` below)
    const traceloop = await import("@traceloop/node-server-sdk");
    traceloop.initialize({ baseUrl: endpoint, apiKey: "tl_dummy_offline_key",
                           appName: `capture-${client}`, traceloopSyncEnabled: false,
                           silenceInitializationMessage: true });
    // the instrumentation patches the ESM CallbackManager from a dynamic import(): let it land
    await new Promise((resolve) => setTimeout(resolve, 200));
    return { callbacks: undefined,
             // the SDK records no LangChain metadata: an interrupted thread's runs get its
             // session and user as association properties, the SDK's way to give them
             traced: (fn) => traceloop.withWorkflow(
               interrupted ? { name: shape, associationProperties: {
                 session_id: SCRIPT.session_id, user_id: SCRIPT.user_id } } : { name: shape },
               fn),
             finish: async () => { await traceloop.forceFlush(); } };
  }
  const { NodeTracerProvider, BatchSpanProcessor } = await import("otel2-sdk-trace-node");
  const { resourceFromAttributes } = await import("otel2-resources");
  const { OTLPTraceExporter } = await import("otel2-exporter-trace-otlp-proto");
  const exporter = new OTLPTraceExporter({ url: `${endpoint}/v1/traces`, compression: "gzip" });
  const provider = new NodeTracerProvider({
    resource: resourceFromAttributes({ "service.name": `capture-${client}`,
                                       "service.version": "0.0.1",
                                       "deployment.environment": "offline-test" }),
    spanProcessors: [new BatchSpanProcessor(exporter)],
  });
  provider.register();
  // it patches this module's CallbackManager, the one agents.mjs's @langchain/core uses
  const CallbackManagerModule = await import("@langchain/core/callbacks/manager");
  const { LangChainInstrumentation } = await import(
    "@arizeai/openinference-instrumentation-langchain");
  new LangChainInstrumentation({ tracerProvider: provider })
    .manuallyInstrument(CallbackManagerModule);
  return { callbacks: undefined,
           finish: async () => { await provider.forceFlush(); await provider.shutdown(); } };
}

const { callbacks, finish, traced = (fn) => fn() } = await setUp();
try {
  const out = await run(await build(shape), shape, mode === "stream", callbacks, traced);
  console.log("final answer:", out.messages.at(-1).content);
} catch (e) {
  console.log("run raised:", e.name, e.message);
}
await close();
await finish();
await new Promise((resolve) => setTimeout(resolve, 300));
receiver.close();
console.log(`${client}/${runName}: ${receiver.count()} requests`);
process.exit(receiver.count() ? 0 : 1);
