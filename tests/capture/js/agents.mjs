// The JS LangGraph agents of every capture shape, on scripted fake chat models (no network):
// the equivalents of ../agents.py, playing the same turns (script.json, written from ../script.py).
import { readFileSync } from "node:fs";

import { BaseChatModel } from "@langchain/core/language_models/chat_models";
import { AIMessage, AIMessageChunk, HumanMessage, SystemMessage } from "@langchain/core/messages";
import { ChatGenerationChunk } from "@langchain/core/outputs";
import { tool } from "@langchain/core/tools";
import { convertToOpenAITool } from "@langchain/core/utils/function_calling";
import { Annotation, Command, END, MemorySaver, MessagesAnnotation, START, Send, StateGraph,
         interrupt } from "@langchain/langgraph";
import { ToolNode, createReactAgent } from "@langchain/langgraph/prebuilt";
import { createSupervisor } from "@langchain/langgraph-supervisor";
import { createHandoffTool, createSwarm } from "@langchain/langgraph-swarm";
import { z } from "zod";
import { createAgent, createMiddleware, todoListMiddleware, toolCallLimitMiddleware }
  from "langchain";

export const SCRIPT = JSON.parse(readFileSync(new URL("./script.json", import.meta.url), "utf8"));
const TOKEN_DELAY_MS = 2;
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

// the Python exception classes the scripts name, so errors read the same in both languages
export class ValueError extends Error {
  name = "ValueError";
}
class ConnectionError extends Error {
  name = "ConnectionError";
}
class ZeroDivisionError extends Error {
  name = "ZeroDivisionError";
}
class RuntimeError extends Error {
  name = "RuntimeError";
}
const ERRORS = { RuntimeError };

/** LangChain usage_metadata of a turn; the token details only where the script has them. */
function usage(turn) {
  const u = turn.usage;
  const out = { input_tokens: u.input, output_tokens: u.output, total_tokens: u.input + u.output };
  if ("cache_read" in u) {
    out.input_token_details = { cache_read: u.cache_read, cache_creation: u.cache_write };
    out.output_token_details = { reasoning: u.reasoning };
  }
  return out;
}

/** Plays one agent's turns from the script; supports tools, usage and streaming. */
class ScriptedChatModel extends BaseChatModel {
  constructor({ agent, turns }) {
    super({});
    this.agent = agent;
    this.turns = turns;
    this.index = 0;
    this.played = new Set();
    this.model = SCRIPT.model_name;
    this.temperature = 0;
  }

  _llmType() {
    return "scripted-fake-chat-model";
  }

  static lc_name() {
    return "ScriptedChatModel";
  }

  invocationParams() {
    return { model: this.model, model_name: this.model, temperature: this.temperature };
  }

  getLsParams(options) {
    return { ls_provider: "openai", ls_model_name: this.model, ls_model_type: "chat",
             ls_temperature: this.temperature };
  }

  bindTools(tools, kwargs = {}) {
    const { parallel_tool_calls, ...rest } = kwargs;
    return this.withConfig({ tools: tools.map((t) => convertToOpenAITool(t)), ...rest });
  }

  /** The next turn to play (its message id and the turn); throws a scripted error. */
  next(messages) {
    let i;
    if (this.turns.some((t) => "key" in t)) {
      // keyed turns (send_fanout): the next unplayed turn of this run's key
      const first = `${messages.find((m) => m.getType() === "human")?.content ?? ""}`;
      i = this.turns.findIndex((t, j) => !this.played.has(j) && first.includes(t.key));
      if (i < 0) i = this.turns.length;
      this.played.add(i);
    } else {
      i = this.index++;
    }
    if (i >= this.turns.length) throw new Error(`script of ${this.agent} exhausted`);
    const turn = this.turns[i];
    if (turn.error) throw new ERRORS[turn.error.type](turn.error.message);
    return [`${this.agent}-${i + 1}`, turn];
  }

  async _generate(messages, options, runManager) {
    const [id, turn] = this.next(messages);
    await sleep(TOKEN_DELAY_MS * 4);
    const finish = turn.tool_calls.length ? "tool_calls" : "stop";
    const message = new AIMessage({
      content: turn.content, id, name: this.agent,
      tool_calls: turn.tool_calls.map((c) => ({ ...c, type: "tool_call" })),
      usage_metadata: usage(turn),
      response_metadata: { model_name: this.model, finish_reason: finish },
    });
    return {
      generations: [{ text: turn.content, message, generationInfo: { finish_reason: finish } }],
      llmOutput: { tokenUsage: { promptTokens: turn.usage.input,
                                 completionTokens: turn.usage.output,
                                 totalTokens: turn.usage.input + turn.usage.output } },
    };
  }

  async *_streamResponseChunks(messages, options, runManager) {
    const [id, turn] = this.next(messages);
    await sleep(TOKEN_DELAY_MS * 2); // time to first token
    const finish = turn.tool_calls.length ? "tool_calls" : "stop";
    const chunks = turn.content.split(/(\s)/).filter((t) => t).map((text) =>
      new ChatGenerationChunk({ text, message: new AIMessageChunk({ content: text, id,
                                                                     name: this.agent }) }));
    turn.tool_calls.forEach((c, index) => chunks.push(new ChatGenerationChunk({
      text: "",
      message: new AIMessageChunk({ content: "", id, name: this.agent, tool_call_chunks: [
        { name: c.name, args: JSON.stringify(c.args), id: c.id, index, type: "tool_call_chunk" }] }),
    })));
    chunks.push(new ChatGenerationChunk({
      text: "",
      message: new AIMessageChunk({ content: "", id, name: this.agent, usage_metadata: usage(turn),
                                    response_metadata: { model_name: this.model,
                                                         finish_reason: finish } }),
      generationInfo: { finish_reason: finish },
    }));
    for (const chunk of chunks) {
      await sleep(TOKEN_DELAY_MS);
      await runManager?.handleLLMNewToken(chunk.text, undefined, undefined, undefined, undefined,
                                          { chunk });
      yield chunk;
    }
  }
}

const model = (shape, agent) =>
  new ScriptedChatModel({ agent, turns: SCRIPT.shapes[shape].models[agent] });

// ---------------------------------------------------------------------------- tools
const getWeather = tool(
  async ({ city }) => (city === "Tokyo" ? SCRIPT.results.tokyo : `Sunny, 22C in ${city}`),
  { name: "get_weather", description: "Return the current weather for a city.",
    schema: z.object({ city: z.string() }) });

const add = tool(async ({ a, b }) => `${a + b}`,
  { name: "add", description: "Add two integers.",
    schema: z.object({ a: z.number().int(), b: z.number().int() }) });

const bookFlight = tool(async () => { throw new ValueError(SCRIPT.results.booking_error); },
  { name: "book_flight", description: "Book a flight to a city.",
    schema: z.object({ city: z.string() }) });

const divide = tool(async ({ a, b }) => {
  if (b === 0) throw new ZeroDivisionError(SCRIPT.results.divide_error.split(": ").slice(1).join(": "));
  return `${a / b}`;
}, { name: "divide", description: "Divide a by b.",
     schema: z.object({ a: z.number(), b: z.number() }) });

function flakyWeather() {
  let calls = 0;
  const message = SCRIPT.results.flaky_error.split(": ").slice(1).join(": ");
  return tool(async ({ city }) => {
    calls += 1;
    if (calls === 1) throw new ConnectionError(message);
    return `Sunny, 22C in ${city}`;
  }, { name: "flaky_weather", description: "Return the current weather for a city (the service is flaky).",
       schema: z.object({ city: z.string() }) });
}

/** interrupt_resume's book_flight: asks a person to approve (interrupt(), which ends the run),
 * and books once the resumed run hands it the approval. */
const bookFlightApproved = tool(async () => {
  const answer = interrupt(SCRIPT.interrupt.payload);
  return answer === SCRIPT.interrupt.resume ? SCRIPT.interrupt.booked : "Booking declined";
}, { name: "book_flight", description: "Book a flight to a city once a person approves.",
     schema: z.object({ city: z.string() }) });

// ---------------------------------------------------------------------------- graphs
function react(shape, agent, tools, handleToolErrors = true, checkpointer = undefined) {
  return createReactAgent({
    llm: model(shape, agent), tools: new ToolNode(tools, { handleToolErrors }),
    prompt: `You are ${agent}. Use tools.`, name: agent, checkpointer,
  });
}

function supervisorSubgraphs() {
  const shape = "supervisor_subgraphs";
  const supervisor = model(shape, "supervisor");
  const State = Annotation.Root({ ...MessagesAnnotation.spec, next: Annotation() });
  const supervise = async (state) => {
    const prompt = new SystemMessage("You are a supervisor. Route to weather_agent or math_agent, "
      + 'answering {"next": <agent>}, or answer the user.');
    const reply = await supervisor.invoke([prompt, ...state.messages]);
    try {
      return { next: JSON.parse(reply.content).next };
    } catch {
      return { next: END, messages: [reply] };
    }
  };
  return new StateGraph(State)
    .addNode("supervisor", supervise)
    .addNode("weather_agent", react(shape, "weather_agent", [getWeather]))
    .addNode("math_agent", react(shape, "math_agent", [add]))
    .addEdge(START, "supervisor")
    .addConditionalEdges("supervisor", (s) => s.next, ["weather_agent", "math_agent", END])
    .addEdge("weather_agent", "supervisor")
    .addEdge("math_agent", "supervisor")
    .compile({ name: "supervisor" });
}

function supervisorHandoff() {
  const shape = "supervisor_handoff";
  return createSupervisor({
    agents: [react(shape, "weather_agent", [getWeather]), react(shape, "math_agent", [add])],
    llm: model(shape, "supervisor"),
    prompt: "You are a supervisor. Hand off to weather_agent or math_agent.",
  }).compile({ name: "supervisor_team" });
}

function swarmHandoff() {
  const shape = "swarm_handoff";
  const weather = react(shape, "weather_agent",
                        [getWeather, createHandoffTool({ agentName: "math_agent" })]);
  return createSwarm({ agents: [weather, react(shape, "math_agent", [add])],
                       defaultActiveAgent: "weather_agent" }).compile({ name: "swarm" });
}

function agentInTool() {
  const shape = "agent_in_tool";
  const researcher = react(shape, "researcher", [getWeather]);
  const askResearcher = tool(async ({ question }) => {
    const result = await researcher.invoke(
      { messages: [new HumanMessage({ content: question, id: "tool-human-1" })] });
    return `${result.messages.at(-1).content}`;
  }, { name: "ask_researcher", description: "Ask the researcher agent a question.",
       schema: z.object({ question: z.string() }) });
  return react(shape, "assistant", [askResearcher]);
}

function sendFanout() {
  const shape = "send_fanout";
  const lead = model(shape, "research_team");
  const researcher = react(shape, "researcher", [getWeather]);
  const State = Annotation.Root({ ...MessagesAnnotation.spec, cities: Annotation() });
  const plan = async (state) => {
    const reply = await lead.invoke(state.messages);
    return { cities: JSON.parse(reply.content) };
  };
  const fanOut = (state) => state.cities.map((city) => new Send("researcher", {
    messages: [new HumanMessage({ content: SCRIPT.fanout_question.replace("{city}", city),
                                  id: `send-human-${city}` })],
  }));
  const summarize = async (state) => ({ messages: [await lead.invoke(state.messages)] });
  return new StateGraph(State)
    .addNode("plan", plan)
    .addNode("researcher", researcher)
    .addNode("summarize", summarize)
    .addEdge(START, "plan")
    .addConditionalEdges("plan", fanOut, ["researcher"])
    .addEdge("researcher", "summarize")
    .addEdge("summarize", END)
    .compile({ name: "research_team" });
}

/** The python that runs the MCP server (../mcp_server.py): the capture venv's, or $CAPTURE_PYTHON. */
const REPO = new URL("../../../", import.meta.url).pathname;
const PYTHON = process.env.CAPTURE_PYTHON ?? `${REPO}.venv-capture/bin/python`;
const closers = [];

/** createAgent "assistant" on the two tools of the same local stdio MCP server as the Python
 * twin (the FastMCP server of ../mcp_server.py, started by @langchain/mcp-adapters). */
async function mcpTools() {
  const { MultiServerMCPClient } = await import("@langchain/mcp-adapters");
  const client = new MultiServerMCPClient({ mcpServers: { capture: {
    transport: "stdio", command: PYTHON, args: ["-m", "tests.capture.mcp_server"],
    cwd: REPO, env: { ...process.env, PYTHONPATH: REPO },
  } } });
  closers.push(() => client.close());
  const tools = (await client.getTools()).sort((a, b) => a.name.localeCompare(b.name));
  return createAgent({ model: model("mcp_tools", "assistant"), tools,
                       systemPrompt: "You are assistant. Use tools.", name: "assistant" });
}

/** createAgent "assistant" with a beforeModel and an afterModel hook (which change nothing)
 * and a tool-call limit the run stays under. */
function createAgentMiddleware() {
  const noteTurn = createMiddleware({ name: "note_turn", beforeModel: () => undefined });
  const checkReply = createMiddleware({ name: "check_reply", afterModel: () => undefined });
  return createAgent({
    model: model("create_agent_middleware", "assistant"), tools: [getWeather, add],
    systemPrompt: "You are assistant. Use tools.", name: "assistant",
    middleware: [noteTurn, checkReply, toolCallLimitMiddleware({ runLimit: 5 })],
  });
}

/** deepagents' "orchestrator" with the sub-agent "researcher" (started through `task`), on
 * the default in-state filesystem; write_todos from LangChain's todoListMiddleware, as in
 * the Python twin (deepagents leaves it out of its default stack). */
async function deepAgent() {
  const { createDeepAgent } = await import("deepagents");
  const shape = "deep_agent";
  const researcher = { name: "researcher", description: "Looks up the weather of a city.",
                       systemPrompt: "You are researcher. Use tools.", tools: [getWeather],
                       model: model(shape, "researcher") };
  return createDeepAgent({ model: model(shape, "orchestrator"), tools: [getWeather],
                           systemPrompt: "You are orchestrator.", subagents: [researcher],
                           middleware: [todoListMiddleware()], name: "orchestrator" });
}

/** Close what a graph opened (the MCP client and its server process). */
export async function close() {
  for (const closer of closers.splice(0)) await closer();
}

export async function build(shape) {
  switch (shape) {
    case "supervisor_subgraphs": return supervisorSubgraphs();
    case "supervisor_handoff": return supervisorHandoff();
    case "swarm_handoff": return swarmHandoff();
    case "agent_in_tool": return agentInTool();
    case "parallel_tools": return react(shape, "assistant", [getWeather, add]);
    case "tool_retry": return react(shape, "assistant", [flakyWeather()]);
    case "run_error": return react(shape, "assistant", [getWeather, bookFlight], false);
    case "react_agent": return react(shape, "assistant", [getWeather, add, divide]);
    case "model_failure": return react(shape, "assistant", [getWeather]);
    case "send_fanout": return sendFanout();
    case "mcp_tools": return mcpTools();
    case "create_agent_middleware": return createAgentMiddleware();
    case "deep_agent": return deepAgent();
    case "interrupt_resume":
      return react(shape, "assistant", [bookFlightApproved], true, new MemorySaver());
    default: throw new Error(`unknown shape ${shape}`);
  }
}

/** createAgent runs every middleware hook as a node of its own: these runs take more than
 * LangGraph's default 25 super-steps (as ../agents.py's RECURSION_LIMITS). */
const RECURSION_LIMITS = { create_agent_middleware: 100, deep_agent: 250 };

/**
 * Run once; stream=true streams messages from every (sub)graph so the models stream. An
 * interrupt shape runs twice on its thread (the run that interrupted, then its resume with
 * Command({resume})), each run through `traced` (one trace per run under a client that wraps
 * runs, as traceloop_js's withWorkflow does).
 */
export async function run(graph, shape, stream, callbacks, traced = (fn) => fn()) {
  const config = {
    configurable: { thread_id: SCRIPT.thread_id },
    metadata: { session_id: SCRIPT.session_id, user_id: SCRIPT.user_id },
    tags: ["trajhub-capture"],
    recursionLimit: RECURSION_LIMITS[shape] ?? 25,
    callbacks,
  };
  const inputs = { messages: [new HumanMessage({ content: SCRIPT.shapes[shape].question,
                                                 id: "human-1" })] };
  if (SCRIPT.interrupt_shapes.includes(shape)) {
    await traced(() => runOnce(graph, inputs, config, stream));
    return traced(() => runOnce(graph, new Command({ resume: SCRIPT.interrupt.resume }), config,
                                stream));
  }
  return traced(() => runOnce(graph, inputs, config, stream));
}

/** One run: invoke, or stream and keep the root graph's last values. */
async function runOnce(graph, inputs, config, stream) {
  if (!stream) return graph.invoke(inputs, config);
  let last = null;
  const events = await graph.stream(inputs, { ...config, streamMode: ["messages", "values"],
                                              subgraphs: true });
  for await (const [namespace, mode, data] of events) {
    if (mode === "values" && namespace.length === 0) last = data;
  }
  return last;
}

// ---------------------------------------------------------------------------- a conversation
// The two-turn conversation of ../conversation.py (script.CONVERSATION): one agent with a
// checkpointer, invoked twice on one thread, the second time with only its new question.
export function buildConversation() {
  const spec = SCRIPT.conversation;
  const llm = new ScriptedChatModel({ agent: spec.agent,
                                      turns: spec.turns.flatMap((t) => t.models) });
  return createReactAgent({ llm, tools: new ToolNode([getWeather, add]),
                            prompt: `You are ${spec.agent}. Use tools.`, name: spec.agent,
                            checkpointer: new MemorySaver() });
}

export async function runConversation(graph, callbacks) {
  const spec = SCRIPT.conversation;
  const config = {
    configurable: { thread_id: spec.thread_id },
    metadata: { session_id: spec.session_id, user_id: spec.user_id },
    tags: ["trajhub-capture"],
    callbacks,
  };
  const answers = [];
  for (const [i, turn] of spec.turns.entries()) {
    const out = await graph.invoke(
      { messages: [new HumanMessage({ content: turn.question, id: `human-${i + 1}` })] }, config);
    answers.push(out.messages.at(-1).content);
    await sleep(50); // the turns start apart, as a person's do
  }
  return answers;
}
