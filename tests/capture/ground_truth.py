"""Write tests/fixtures/real-clients/ground_truth/<shape>.json from the scripts (script.py).

Nothing here looks at a capture or at trajhub: every number, name and text comes from the
scripted models' turns, the tools' scripted results and the shape of each graph as built in
agents.py. The format is described in tests/fixtures/real-clients/ground_truth/README.md.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from tests.capture import script

OUT = Path(__file__).parent.parent / "fixtures" / "real-clients" / "ground_truth"
#: 2 added the token details (cache read / cache write / reasoning), `error` of a model step and
#: `parallel_group` of an agent step; every field of 1 is unchanged, so captures checked
#: against 1 hold against 2
FORMAT_VERSION = 2
#: the conversation's ground truth (sessions) has its own format, unchanged
CONVERSATION_FORMAT_VERSION = 1
DETAILS = ("cache_read_tokens", "cache_write_tokens", "reasoning_tokens")

#: what each tool call returns, by (tool, canonical JSON of its arguments)
RESULTS: dict[tuple[str, str], str] = {
    ("get_weather", '{"city":"Paris"}'): script.WEATHER_RESULT,
    ("get_weather", '{"city":"Tokyo"}'): script.TOKYO_RESULT,
    ("get_weather", '{"city":"Lima"}'): "Sunny, 22C in Lima",
    ("add", '{"a":2,"b":3}'): "5",
    ("flaky_weather", '{"city":"Paris"}'): script.WEATHER_RESULT,
    ("transfer_to_weather_agent", "{}"): "Successfully transferred to weather_agent",
    ("transfer_to_math_agent", "{}"): "Successfully transferred to math_agent",
    # deepagents' own tools (deep_agent): what they answer for the scripted calls
    ("write_todos", json.dumps({"todos": script.TODOS}, sort_keys=True, separators=(",", ":"))):
        f"Updated todo list to {script.TODOS}",
    ("write_file", json.dumps({"content": script.NOTES, "file_path": script.NOTES_PATH},
                              separators=(",", ":"))): f"Updated file {script.NOTES_PATH}",
    ("read_file", json.dumps({"file_path": script.NOTES_PATH}, separators=(",", ":"))):
        f"@@ lines 1-1 of 1 @@\n{script.NOTES}",
    # interrupt_resume's book_flight, once the resumed run hands it the approval
    ("book_flight", '{"city":"Paris"}'): script.BOOKED_RESULT,
}
#: where the JS twin's tool answers other text than the Python one (the step's `output_js`):
#: deepagents.js writes the todos as JSON and words write_file's answer its own way; and
#: @langchain/mcp-adapters.js hands a text result that comes with structured content (FastMCP
#: adds `{"result": ...}` to a tool returning a string) to LangChain as one content block,
#: which LangChain turns into its JSON text
RESULTS_JS: dict[tuple[str, str], str] = {
    ("write_todos", json.dumps({"todos": script.TODOS}, sort_keys=True, separators=(",", ":"))):
        "Updated todo list to " + json.dumps(script.TODOS, separators=(",", ":")),
    ("write_file", json.dumps({"content": script.NOTES, "file_path": script.NOTES_PATH},
                              separators=(",", ":"))):
        f"Successfully wrote to '{script.NOTES_PATH}'",
}
#: shapes whose tools are MCP tools (the RESULTS_JS rule for their text results)
MCP_SHAPES = frozenset({"mcp_tools"})


def _mcp_js(text: str) -> str:
    """What LangChain.js makes of an MCP text result with FastMCP's structured content."""
    return json.dumps({"type": "text", "text": text, "structuredContent": {"result": text}},
                      separators=(",", ":"), ensure_ascii=False)


def _key(name: str, args: dict[str, Any]) -> tuple[str, str]:
    return name, json.dumps(args, sort_keys=True, separators=(",", ":"))


class Activation:
    """One agent activation being written down, step by step."""

    def __init__(self, doc: dict[str, Any], agent: str, parent: int | None,
                 via_tool: str | None = None) -> None:
        self.doc = doc
        self.index = len(doc["activations"])
        self.shape: str = doc["shape"]
        self.body: dict[str, Any] = {"index": self.index, "agent": agent, "parent": parent,
                                     "via_tool": via_tool, "input_tokens": 0,
                                     "output_tokens": 0, **dict.fromkeys(DETAILS, 0),
                                     "steps": []}
        doc["activations"].append(self.body)

    def model(self, turn: dict[str, Any]) -> None:
        usage = turn["usage"]
        details = {"cache_read_tokens": usage.get("cache_read", 0),
                   "cache_write_tokens": usage.get("cache_write", 0),
                   "reasoning_tokens": usage.get("reasoning", 0)}
        self.body["input_tokens"] += usage["input"]
        self.body["output_tokens"] += usage["output"]
        for k, v in details.items():
            self.body[k] += v
        self.body["steps"].append({
            "type": "model", "input_tokens": usage["input"],
            "output_tokens": usage["output"], **details, "content": turn["content"],
            "tool_calls": [{"id": c["id"], "name": c["name"], "arguments": c["args"]}
                           for c in turn["tool_calls"]],
            "error": turn.get("error")})

    def tools(self, turn: dict[str, Any], errors: dict[str, dict[str, str]] | None = None,
              outputs: dict[str, str] | None = None) -> list[dict[str, Any]]:
        """The tool steps of a model turn's calls, in call order; errors/outputs by call id."""
        steps = []
        parallel = len(turn["tool_calls"]) > 1
        for call in turn["tool_calls"]:
            error = (errors or {}).get(call["id"])
            output = ((outputs or {}).get(call["id"])
                      or RESULTS.get(_key(call["name"], call["args"])))
            handoff = call["name"].removeprefix("transfer_to_") \
                if call["name"].startswith("transfer_to_") else None
            step = {"type": "tool", "name": call["name"], "tool_call_id": call["id"],
                    "arguments": call["args"], "output": None if error else output,
                    "error": error, "handoff_to": handoff,
                    "parallel_group": self.index * 100 + 1 if parallel else None}
            js = RESULTS_JS.get(_key(call["name"], call["args"]))
            if self.shape in MCP_SHAPES and output is not None:
                js = _mcp_js(output)
            if js is not None and not error:
                step["output_js"] = js
            steps.append(step)
            self.body["steps"].append(step)
        return steps

    def agent(self, child: Activation, parallel_group: int | None = None) -> None:
        self.body["steps"].append({"type": "agent", "agent": child.body["agent"],
                                   "activation": child.index,
                                   "parallel_group": parallel_group})

    def react_child(self, agent: str, turns: list[dict[str, Any]],
                    parallel_group: int | None = None) -> Activation:
        """A child activation entered by an agent step here, run as a ReAct loop of `turns`."""
        child = Activation(self.doc, agent, self.index)
        self.agent(child, parallel_group)
        _react(child, turns)
        return child


def _react(act: Activation, turns: list[dict[str, Any]],
           errors: dict[str, dict[str, str]] | None = None) -> None:
    """A ReAct loop: each turn's model step, then the tool steps of its calls."""
    for t in turns:
        act.model(t)
        act.tools(t, errors)


def _run(shape: str, agent: str, description: str, notes: Sequence[str] = ()
         ) -> tuple[dict[str, Any], Activation, dict[str, list[dict[str, Any]]]]:
    """The document of `shape` before its builder adds the steps: what the run is
    (`description`) and what a reader of it must know (`notes`); the activation of its root,
    `agent`; and the scripted models' turns, by agent."""
    spec = script.SHAPES[shape]
    doc = {"format_version": FORMAT_VERSION, "shape": shape, "graph": spec["graph"],
           "description": description, "user_request": spec["question"],
           "final_answer": None, "root": {}, "activations": [], "notes": list(notes)}
    return doc, Activation(doc, agent, None), spec["models"]


def supervisor_subgraphs() -> dict[str, Any]:
    doc, root, m = _run(
        "supervisor_subgraphs", "supervisor",
        "StateGraph 'supervisor' whose supervisor node routes (structured JSON answer of "
        "its model, no tool) to two create_react_agent(..., name=...) subgraph nodes, "
        "weather_agent then math_agent, and then answers.",
        notes=["The root graph is the supervisor agent itself: its routing decisions are "
               "its own model steps; the sub-agents are agent steps between them."])
    root.model(m["supervisor"][0])
    root.react_child("weather_agent", m["weather_agent"])
    root.model(m["supervisor"][1])
    root.react_child("math_agent", m["math_agent"])
    root.model(m["supervisor"][2])
    doc["final_answer"] = m["supervisor"][2]["content"]
    return doc


def supervisor_handoff() -> dict[str, Any]:
    doc, root, m = _run(
        "supervisor_handoff", "supervisor_team",
        "langgraph-supervisor create_supervisor([weather_agent, math_agent]) compiled as "
        "'supervisor_team': the supervisor agent hands off with transfer_to_* tools; each "
        "member runs once; the supervisor runs three times and answers.",
        notes=[
            "The root is the compiled graph (a graph, not an agent: it has no model steps "
            "of its own); the supervisor and the members are its children, in activation "
            "order.",
            "langgraph-supervisor appends a synthetic 'transfer_back_to_supervisor' AI "
            "message and tool message after each member; no model is called and no tool "
            "runs for them, so they are not steps."])
    for i, member in enumerate(["weather_agent", "math_agent", None]):
        root.react_child("supervisor", [m["supervisor"][i]])
        if member:
            root.react_child(member, m[member])
    doc["final_answer"] = m["supervisor"][2]["content"]
    return doc


def swarm_handoff() -> dict[str, Any]:
    doc, root, m = _run(
        "swarm_handoff", "swarm",
        "langgraph-swarm create_swarm([weather_agent, math_agent]) compiled as 'swarm': "
        "weather_agent answers its part and hands off to math_agent, which answers.",
        notes=["The root is the compiled swarm graph (no model steps of its own)."])
    root.react_child("weather_agent", m["weather_agent"])
    root.react_child("math_agent", m["math_agent"])
    doc["final_answer"] = m["math_agent"][1]["content"]
    return doc


def agent_in_tool() -> dict[str, Any]:
    doc, root, m = _run(
        "agent_in_tool", "assistant",
        "create_react_agent 'assistant' whose tool ask_researcher invokes another "
        "create_react_agent, 'researcher', and returns its answer.",
        notes=["The researcher activation runs inside the ask_researcher tool step of the "
               "assistant (`calls_agent` of that tool step, `via_tool` of the activation)."])
    root.model(m["assistant"][0])
    (tool_step,) = root.tools(m["assistant"][0],
                              outputs={"call_research_1": m["researcher"][1]["content"]})
    researcher = Activation(doc, "researcher", root.index, via_tool="ask_researcher")
    tool_step["calls_agent"] = researcher.index
    _react(researcher, m["researcher"])
    root.model(m["assistant"][1])
    doc["final_answer"] = m["assistant"][1]["content"]
    return doc


def _raised(call_id: str, text: str) -> dict[str, dict[str, str]]:
    """The error of the tool call `call_id`, from the "Type: message" text its tool raises."""
    kind, message = text.split(": ", 1)
    return {call_id: {"type": kind, "message": message}}


def _single(shape: str, description: str, errors: dict[str, dict[str, str]] | None = None,
            notes: Sequence[str] = ()) -> dict[str, Any]:
    doc, root, m = _run(shape, "assistant", description, notes)
    turns = m["assistant"]
    _react(root, turns, errors)
    if not turns[-1]["tool_calls"]:
        doc["final_answer"] = turns[-1]["content"]
    return doc


def parallel_tools() -> dict[str, Any]:
    return _single("parallel_tools",
                   "create_react_agent 'assistant' asking for three tools in one model turn; the "
                   "ToolNode runs them in parallel.",
                   notes=["Tool steps with the same parallel_group ran concurrently and may appear "
                          "in any order among themselves."])


def tool_retry() -> dict[str, Any]:
    return _single("tool_retry",
                   "create_react_agent 'assistant' (ToolNode(handle_tool_errors=True)): "
                   "flaky_weather fails on its first call, the model calls it again and it "
                   "succeeds; the run succeeds.",
                   errors=_raised("call_flaky_1", script.FLAKY_ERROR),
                   notes=["The failed call is handled by the ToolNode (its error becomes the tool "
                          "message the model sees), so the run as a whole succeeds."])


def run_error() -> dict[str, Any]:
    error = {"type": "ValueError", "message": script.BOOKING_ERROR}
    doc = _single("run_error",
                  "create_react_agent 'assistant' (ToolNode(handle_tool_errors=False)): "
                  "get_weather succeeds, then book_flight raises and the run raises.",
                  errors={"call_book_1": error})
    doc["root"]["error"] = error
    return doc


def react_agent() -> dict[str, Any]:
    return _single("react_agent",
                   "create_react_agent 'assistant' (ToolNode(handle_tool_errors=True)): "
                   "get_weather and add in one turn, in parallel, then divide(1, 0), which fails "
                   "and is caught, then the answer. The model turns report cache read, cache "
                   "write and reasoning tokens.",
                   errors=_raised("call_div_1", script.DIVIDE_ERROR),
                   notes=[
                       "The scripted run of the older single-agent `react` scenario "
                       "(tests/fixtures/README.md), as an agent named 'assistant'.",
                       "input_tokens includes the cache read and cache write tokens (LangChain's "
                       "usage_metadata counts them in input_tokens); reasoning tokens are part of "
                       "output_tokens."])


def model_failure() -> dict[str, Any]:
    doc = _single("model_failure",
                  "create_react_agent 'assistant': the model asks for get_weather, which "
                  "succeeds; the model's second call raises RuntimeError and the run raises.",
                  notes=["The failed model call is a model step with `error` and no tokens (the "
                         "call reported no usage)."])
    doc["final_answer"] = None
    doc["root"]["error"] = script.SHAPES["model_failure"]["models"]["assistant"][1]["error"]
    return doc


def send_fanout() -> dict[str, Any]:
    doc, root, m = _run(
        "send_fanout", "research_team",
        "StateGraph 'research_team': its plan node's model lists three cities; the node "
        "fans out one Send('researcher', ...) per city; the three create_react_agent "
        "'researcher' runs (one super-step, in parallel) each call get_weather for their "
        "city and answer; the summarize node's model answers.",
        notes=[
            "The root graph's plan and summarize nodes are plain nodes calling the root's "
            "model: their calls are the root's own model steps.",
            "The three researcher activations ran concurrently (agent steps of one "
            "parallel_group): they may appear in any order among themselves. They are "
            "listed in Send order (Paris, Tokyo, Lima); tell them apart by their tool "
            "calls."])
    root.model(m["research_team"][0])
    group = root.index * 100 + 1
    for city in script.FANOUT_CITIES:
        root.react_child("researcher", [t for t in m["researcher"] if t["key"] == city],
                         parallel_group=group)
    root.model(m["research_team"][1])
    doc["final_answer"] = m["research_team"][1]["content"]
    return doc


def mcp_tools() -> dict[str, Any]:
    return _single("mcp_tools",
                   "LangChain v1 create_agent 'assistant' on two tools of a local stdio MCP server "
                   "(FastMCP, through langchain-mcp-adapters): get_weather answers; "
                   "convert_currency fails and the adapter returns its error to the model (a "
                   "tool message with status 'error'); then the answer.",
                   errors=_raised("call_convert_1", script.CURRENCY_ERROR),
                   notes=[
                       "The failed call raised nothing in the run: the MCP server answered it with "
                       "isError and the adapter returned the error text to the model, so its span "
                       "ended normally. It is a failed tool step all the same "
                       "(docs/trajectory-rules.md, returned tool errors).",
                       "The MCP server's tool listing (ListTools) happens before the run and is "
                       "not a step."])


def create_agent_middleware() -> dict[str, Any]:
    return _single("create_agent_middleware",
                   "LangChain v1 create_agent 'assistant' with middleware: a before_model and an "
                   "after_model hook and a ToolCallLimitMiddleware (not reached); get_weather, "
                   "then add, then the answer.",
                   notes=["The middleware hooks run around every model call as graph nodes of "
                          "their own; they are plumbing of the agent, not agents and not steps."])


def deep_agent() -> dict[str, Any]:
    doc, root, m = _run(
        "deep_agent", "orchestrator",
        "deepagents create_deep_agent 'orchestrator': write_todos, the sub-agent "
        "'researcher' through the task tool (get_weather, then its answer), write_file "
        "and read_file on the in-state filesystem, then the answer.",
        notes=[
            "The researcher activation runs inside the orchestrator's task tool step "
            "(`calls_agent` of that step, `via_tool` of the activation), as in "
            "agent_in_tool.",
            "deepagents' middleware (todo list, filesystem, sub-agents, summarization, "
            "prompt caching, tool-call patching) are plumbing of the agent, not agents and "
            "not steps."])
    answer = m["researcher"][1]["content"]
    for t in m["orchestrator"]:
        root.model(t)
        for step in root.tools(t, outputs={"call_task_1": answer}):
            if step["name"] == "task":
                researcher = Activation(doc, "researcher", root.index, via_tool="task")
                step["calls_agent"] = researcher.index
                _react(researcher, m["researcher"])
    doc["final_answer"] = m["orchestrator"][-1]["content"]
    return doc


def interrupt_resume() -> dict[str, Any]:
    """The thread as a whole (its activation holds the steps of both runs), and `runs`: each
    run of the thread (one trace each), with its input, outcome, interrupt and steps."""
    doc = _single("interrupt_resume",
                  "create_react_agent 'assistant' with an InMemorySaver checkpointer: its "
                  "book_flight tool calls interrupt() to ask a person to approve, which ends the "
                  "first run; the second run resumes the thread with Command(resume=...), the "
                  "tool books and the model answers.",
                  notes=[
                      "Two runs on one thread, one trace each; `activations` describes the thread "
                      "as a whole, `runs` each run. LangGraph runs the interrupted tool again "
                      "from its start when the thread resumes, so book_flight is a step of both "
                      "runs.",
                      "The first run is neither failed nor succeeded: it is interrupted (no "
                      "failed step, no root error); the second run's input is the resume value, "
                      "not the serialised Command."])
    first, second = doc["activations"][0]["steps"][:2], doc["activations"][0]["steps"][1:]
    asked = {**first[1], "output": None}  # the call that interrupted returned nothing
    doc["runs"] = [
        {"index": 0, "input": script.SHAPES["interrupt_resume"]["question"],
         "outcome": "interrupted",
         "interrupt": {"node": "book_flight", "payload": script.INTERRUPT_PAYLOAD},
         "steps": [first[0], asked], "final_answer": None},
        {"index": 1, "input": script.RESUME_VALUE, "outcome": "succeeded", "interrupt": None,
         "steps": second, "final_answer": doc["final_answer"]},
    ]
    return doc


BUILDERS = [supervisor_subgraphs, supervisor_handoff, swarm_handoff, agent_in_tool,
            parallel_tools, tool_retry, run_error, react_agent, model_failure, send_fanout,
            mcp_tools, create_agent_middleware, deep_agent, interrupt_resume]


def build(shape: str) -> dict[str, Any]:
    (builder,) = [b for b in BUILDERS if b.__name__ == shape]
    doc = builder()
    acts = doc["activations"]
    doc["root"] = {"name": acts[0]["agent"], "error": doc["root"].get("error"),
                   "input_tokens": sum(a["input_tokens"] for a in acts),
                   "output_tokens": sum(a["output_tokens"] for a in acts),
                   **{k: sum(a[k] for a in acts) for k in DETAILS}}
    return doc


#: the session id each client's capture of the conversation lands under, by the precedence of
#: docs/conventions.md ("Which id is the session"): the application's session id where the
#: instrumentation records it (metadata `session_id`), else the conversation or thread id
CONVERSATION_SESSION_BY_CLIENT = {
    "openinference": script.CONVERSATION_SESSION_ID,  # session.id (metadata session_id)
    "traceloop": script.CONVERSATION_SESSION_ID,      # association property session_id
    "langsmith": script.CONVERSATION_SESSION_ID,      # langsmith.metadata.session_id
    # records only the thread id, as gen_ai.conversation.id
    "otel_genai": script.CONVERSATION_THREAD_ID,
    "cozeloop_python": script.CONVERSATION_THREAD_ID,  # the application's thread_id tag
    # session.id, which the application sets (the JS callback handler records no id itself)
    "cozeloop_js": script.CONVERSATION_SESSION_ID,
}


def conversation() -> dict[str, Any]:
    """The ground truth of the two-turn conversation (script.CONVERSATION): one session of two
    turns, in order, each with the user's question, the final answer, its tools and tokens."""
    spec = script.CONVERSATION
    turns = []
    for i, t in enumerate(spec["turns"]):
        turns.append({
            "index": i, "question": t["question"], "answer": t["models"][-1]["content"],
            "tools": [c["name"] for m in t["models"] for c in m["tool_calls"]],
            "input_tokens": sum(m["usage"]["input"] for m in t["models"]),
            "output_tokens": sum(m["usage"]["output"] for m in t["models"]),
            "failed": False})
    return {"format_version": CONVERSATION_FORMAT_VERSION, "agent": spec["agent"],
            "description": "create_react_agent 'assistant' with a checkpointer, invoked twice on "
                           "one thread; the second invocation sends only its new question",
            "user_id": script.CONVERSATION_USER_ID,
            "session_id_by_client": CONVERSATION_SESSION_BY_CLIENT,
            "turns": turns,
            "session": {"turns": len(turns),
                        "input_tokens": sum(t["input_tokens"] for t in turns),
                        "output_tokens": sum(t["output_tokens"] for t in turns),
                        "failed_turns": 0}}

def write_all() -> list[Path]:
    OUT.mkdir(parents=True, exist_ok=True)
    paths = []
    for shape in script.SHAPES:
        path = OUT / f"{shape}.json"
        path.write_text(json.dumps(build(shape), indent=2, ensure_ascii=False) + "\n")
        paths.append(path)
    return paths


if __name__ == "__main__":
    for p in write_all():
        print(p)
