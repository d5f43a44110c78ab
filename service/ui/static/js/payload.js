// Step payloads made readable: chat messages as a conversation, JSON formatted, text as text.
// Payloads are strings in the trajectory format; which shape they hold depends on the step type
// (docs/trajectory-rules.md §8) and, for older derivations, on the instrumentation.

import {h, pre} from "./dom.js";

const ROLE_OF_TYPE = {
  human: "user", user: "user", HumanMessage: "user", HumanMessageChunk: "user",
  ai: "assistant", assistant: "assistant", AIMessage: "assistant", AIMessageChunk: "assistant",
  system: "system", SystemMessage: "system", developer: "system",
  tool: "tool", ToolMessage: "tool", function: "tool", FunctionMessage: "tool",
};
const NOT_JSON = Symbol("not JSON");

export function parseJson(text) {
  if (typeof text !== "string") return text;
  const t = text.trim();
  if (!t || !"{[\"".includes(t[0])) return NOT_JSON;
  try {
    return JSON.parse(t);
  } catch {
    return NOT_JSON;
  }
}

function parseArgs(value) {
  if (typeof value !== "string") return value;
  const parsed = parseJson(value);
  return parsed === NOT_JSON ? value : parsed;
}

function toolCall(call) {
  if (!call || typeof call !== "object") return null;
  const fn = call.function || {};
  return {
    id: call.id || call.tool_call_id || "",
    name: call.name || fn.name || "",
    arguments: parseArgs(call.arguments ?? call.args ?? fn.arguments ?? null),
  };
}

/** One chat message in any of the shapes instrumentations send, or null. */
export function toMessage(m) {
  if (!m || typeof m !== "object" || Array.isArray(m)) return null;
  // LangChain's serialized form: {lc: 1, type: "constructor", id: [..., "AIMessage"], kwargs}
  if (m.lc && m.kwargs && Array.isArray(m.id)) {
    const role = ROLE_OF_TYPE[m.id[m.id.length - 1]];
    return role ? toMessage({...m.kwargs, role}) : null;
  }
  // LangChain's messages_to_dict form: {type: "human", data: {content, ...}}
  if (typeof m.type === "string" && m.data && typeof m.data === "object" && !m.role) {
    return toMessage({...m.data, type: m.type});
  }
  const role = m.role || ROLE_OF_TYPE[m.type];
  if (!role || typeof role !== "string") return null;
  let content = m.content;
  const calls = [...(m.tool_calls || [])];
  if (content === undefined && Array.isArray(m.parts)) {
    // OTel GenAI: {role, parts: [{type: "text", content}, {type: "tool_call", ...}]}
    const texts = [];
    for (const part of m.parts) {
      if (part.type === "text") texts.push(part.content ?? "");
      else if (part.type === "tool_call") calls.push(part);
      else if (part.type === "tool_call_response") texts.push(part.response ?? part.result ?? "");
      else texts.push(part);
    }
    content = texts.every((t) => typeof t === "string") ? texts.join("\n") : texts;
  }
  if (content === undefined && !calls.length) return null;
  return {
    role,
    content: content ?? "",
    name: m.name || "",
    tool_call_id: m.tool_call_id || "",
    status: m.status || "",
    tool_calls: calls.map(toolCall).filter(Boolean),
  };
}

/** The messages a payload holds (a list, {messages}, OpenAI {choices}, one message), or null. */
export function toMessages(value) {
  if (value === null || value === undefined || value === NOT_JSON) return null;
  if (Array.isArray(value)) {
    const messages = value.map(toMessage);
    return messages.length && messages.every(Boolean) ? messages : null;
  }
  if (typeof value !== "object") return null;
  if (Array.isArray(value.messages)) return toMessages(value.messages);
  if (Array.isArray(value.choices)) {
    return toMessages(value.choices.map((c) => c.message || c.delta).filter(Boolean));
  }
  const one = toMessage(value);
  return one ? [one] : null;
}

function contentNode(content) {
  if (typeof content === "string") return h("div", {class: "msg-text"}, content || "(empty)");
  if (Array.isArray(content) && content.every((p) => p && p.type === "text")) {
    return h("div", {class: "msg-text"}, content.map((p) => p.text ?? p.content ?? "").join("\n"));
  }
  return pre(JSON.stringify(content, null, 2));
}

export function conversation(messages) {
  return h("ol", {class: "conversation"}, messages.map((m) => h("li", {class: `msg role-${m.role}`},
    h("div", {class: "msg-head"}, h("strong", null, m.role),
      m.name ? ` ${m.name}` : "",
      m.tool_call_id ? h("span", {class: "muted"}, ` ← ${m.tool_call_id}`) : "",
      m.status === "error" ? h("span", {class: "failed-text"}, " error") : ""),
    m.content !== "" || !m.tool_calls.length ? contentNode(m.content) : null,
    m.tool_calls.map((call) => h("div", {class: "tool-call"},
      h("span", {class: "muted"}, "calls "), h("code", null, call.name),
      call.id ? h("span", {class: "muted"}, ` (${call.id})`) : "",
      pre(JSON.stringify(call.arguments, null, 2)))))));
}

/**
 * A payload as a readable node.
 *   kind: "messages" (model steps, agents: prefer a conversation) or "json" (tool arguments and
 *   results: formatted JSON when it parses, else the text as it is).
 */
export function payload(text, kind, missing) {
  if (text === null || text === undefined || text === "") {
    return h("p", {class: "muted"}, missing ? "(not recorded by the instrumentation)" : "(empty)");
  }
  const parsed = parseJson(text);
  if (kind === "messages") {
    const messages = toMessages(parsed);
    if (messages) return conversation(messages);
  }
  if (parsed !== NOT_JSON) {
    if (typeof parsed === "string") return pre(parsed, "text");
    return pre(JSON.stringify(parsed, null, 2));
  }
  return pre(text, "text");
}

/** One line for a table cell: the (last) user message of a chat payload, else the text. */
export function previewText(text) {
  if (text === null || text === undefined) return "";
  const messages = toMessages(parseJson(text));
  if (messages) {
    const user = [...messages].reverse().find((m) => m.role === "user") || messages.at(-1);
    return typeof user.content === "string" ? user.content : JSON.stringify(user.content);
  }
  return String(text);
}

/** An item field (JSON) as the payload text it came from. */
export function asText(value) {
  if (value === null || value === undefined) return "";
  return typeof value === "string" ? value : JSON.stringify(value);
}
