"""The Python LangGraph agents of every capture shape, on scripted fake chat models (no network).

`build(shape)` gives the compiled graph of a shape; `run(graph, shape, stream, callbacks)` runs
it once, the way the existing real-client harness did (`graph.stream(...)` so the models stream
and first-token latency exists, or `graph.invoke(...)`). Each agent has its own scripted model
(script.py), so the run is the same whatever the instrumentation.
"""

from __future__ import annotations

import json
import re
import threading
import time
import warnings
from collections.abc import Callable, Iterator, Sequence
from typing import Any

from langchain_core.callbacks import CallbackManagerForLLMRun
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, AIMessageChunk, BaseMessage, HumanMessage
from langchain_core.messages.tool import tool_call_chunk
from langchain_core.outputs import ChatGeneration, ChatGenerationChunk, ChatResult
from langchain_core.tools import tool
from langchain_core.utils.function_calling import convert_to_openai_tool
from langgraph.graph import MessagesState
from langgraph.types import Send

from tests.capture import script

warnings.filterwarnings("ignore")  # create_react_agent's deprecation notice
TOKEN_DELAY_S = 0.002


def _usage(turn: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """(LangChain usage_metadata, OpenAI-style token_usage) of a scripted turn; the token
    details only where the script has them (the older shapes' captures carry none)."""
    u = turn["usage"]
    inp, out = u["input"], u["output"]
    lc: dict[str, Any] = {"input_tokens": inp, "output_tokens": out, "total_tokens": inp + out}
    oa: dict[str, Any] = {"prompt_tokens": inp, "completion_tokens": out,
                          "total_tokens": inp + out}
    if "cache_read" in u:
        lc["input_token_details"] = {"cache_read": u["cache_read"],
                                     "cache_creation": u["cache_write"]}
        lc["output_token_details"] = {"reasoning": u["reasoning"]}
        oa["prompt_tokens_details"] = {"cached_tokens": u["cache_read"]}
        oa["completion_tokens_details"] = {"reasoning_tokens": u["reasoning"]}
    return lc, oa


_ERRORS: dict[str, type[Exception]] = {"RuntimeError": RuntimeError}


class ScriptedChatModel(GenericFakeChatModel):
    """Plays one agent's turns from script.py; supports tools, usage and streaming."""

    messages: Iterator[Any] = iter(())  # unused (the parent's field)
    agent: str
    turns: list[dict[str, Any]]
    model_name: str = script.MODEL_NAME
    temperature: float = 0.0
    _idx: int = 0
    _played: Any = None
    _lock: Any = None

    def model_post_init(self, __context: Any) -> None:
        object.__setattr__(self, "_lock", threading.Lock())
        object.__setattr__(self, "_idx", 0)
        object.__setattr__(self, "_played", frozenset())

    @classmethod
    def is_lc_serializable(cls) -> bool:
        return True  # serialized kwargs carry model_name, as ChatOpenAI's do (Traceloop reads it)

    @classmethod
    def get_lc_namespace(cls) -> list[str]:
        return ["realclients", "capture"]

    @property
    def _llm_type(self) -> str:
        return "scripted-fake-chat-model"

    @property
    def _identifying_params(self) -> dict[str, Any]:
        return {"model_name": self.model_name, "temperature": self.temperature}

    def _get_ls_params(self, stop: list[str] | None = None, **kwargs: Any) -> Any:
        params = super()._get_ls_params(stop=stop, **kwargs)
        params["ls_provider"] = "openai"
        params["ls_model_name"] = self.model_name
        params["ls_temperature"] = self.temperature
        return params

    def bind_tools(self, tools: Sequence[Any], *, parallel_tool_calls: bool | None = None,
                   **kwargs: Any) -> Any:
        return self.bind(tools=[convert_to_openai_tool(t) for t in tools], **kwargs)

    def _next(self, messages: list[BaseMessage]) -> tuple[str, dict[str, Any]]:
        """The next turn to play (its message id and the turn); raises a scripted error."""
        with self._lock:
            if any("key" in t for t in self.turns):
                # keyed turns (send_fanout): the next unplayed turn of this run's key
                first = next(str(m.content) for m in messages if isinstance(m, HumanMessage))
                played = self._played
                i = next((j for j, t in enumerate(self.turns) if j not in played
                          and t["key"] in first), len(self.turns))
                object.__setattr__(self, "_played", played | {i})
            else:
                i = self._idx
                object.__setattr__(self, "_idx", i + 1)
        if i >= len(self.turns):
            raise RuntimeError(f"script of {self.agent} exhausted")
        turn = self.turns[i]
        if turn.get("error"):
            raise _ERRORS[turn["error"]["type"]](turn["error"]["message"])
        return f"{self.agent}-{i + 1}", turn

    def _message(self, msg_id: str, turn: dict[str, Any]) -> AIMessage:
        finish = "tool_calls" if turn["tool_calls"] else "stop"
        return AIMessage(
            content=turn["content"], id=msg_id, name=self.agent,
            tool_calls=[{**c, "type": "tool_call"} for c in turn["tool_calls"]],
            usage_metadata=_usage(turn)[0],  # type: ignore[arg-type]
            response_metadata={"model_name": self.model_name, "finish_reason": finish})

    def _generate(self, messages: list[BaseMessage], stop: list[str] | None = None,
                  run_manager: CallbackManagerForLLMRun | None = None,
                  **kwargs: Any) -> ChatResult:
        msg_id, turn = self._next(messages)
        time.sleep(TOKEN_DELAY_S * 4)
        finish = "tool_calls" if turn["tool_calls"] else "stop"
        return ChatResult(
            generations=[ChatGeneration(message=self._message(msg_id, turn),
                                        generation_info={"finish_reason": finish})],
            llm_output={"token_usage": _usage(turn)[1], "model_name": self.model_name,
                        "id": f"chatcmpl-{msg_id}"})

    def _stream(self, messages: list[BaseMessage], stop: list[str] | None = None,
                run_manager: CallbackManagerForLLMRun | None = None,
                **kwargs: Any) -> Iterator[ChatGenerationChunk]:
        msg_id, turn = self._next(messages)
        time.sleep(TOKEN_DELAY_S * 2)  # time to first token
        chunks = [ChatGenerationChunk(message=AIMessageChunk(content=tok, id=msg_id,
                                                             name=self.agent))
                  for tok in re.split(r"(\s)", turn["content"]) if tok]
        chunks += [ChatGenerationChunk(message=AIMessageChunk(
            content="", id=msg_id, name=self.agent, tool_call_chunks=[tool_call_chunk(
                name=c["name"], args=json.dumps(c["args"]), id=c["id"], index=idx)]))
            for idx, c in enumerate(turn["tool_calls"])]
        finish = "tool_calls" if turn["tool_calls"] else "stop"
        chunks.append(ChatGenerationChunk(
            message=AIMessageChunk(content="", id=msg_id, name=self.agent,
                                   usage_metadata=_usage(turn)[0],  # type: ignore[arg-type]
                                   response_metadata={"model_name": self.model_name,
                                                      "finish_reason": finish},
                                   chunk_position="last"),
            generation_info={"finish_reason": finish}))
        for chunk in chunks:
            time.sleep(TOKEN_DELAY_S)
            if run_manager:
                run_manager.on_llm_new_token(chunk.text, chunk=chunk)
            yield chunk


def model(shape: str, agent: str) -> ScriptedChatModel:
    return ScriptedChatModel(agent=agent, turns=script.SHAPES[shape]["models"][agent])


# --------------------------------------------------------------------------- tools
@tool
def get_weather(city: str) -> str:
    """Return the current weather for a city."""
    return script.TOKYO_RESULT if city == "Tokyo" else f"Sunny, 22C in {city}"


@tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@tool
def book_flight(city: str) -> str:
    """Book a flight to a city."""
    raise ValueError(script.BOOKING_ERROR)


@tool
def divide(a: float, b: float) -> float:
    """Divide a by b."""
    if b == 0:
        raise ZeroDivisionError(script.DIVIDE_ERROR.split(": ", 1)[1])
    return a / b


def flaky_weather_tool() -> Any:
    """A weather lookup whose first call fails (a fresh one per run)."""
    calls = [0]

    @tool
    def flaky_weather(city: str) -> str:
        """Return the current weather for a city (the service is flaky)."""
        calls[0] += 1
        if calls[0] == 1:
            raise ConnectionError(script.FLAKY_ERROR.split(": ", 1)[1])
        return f"Sunny, 22C in {city}"

    return flaky_weather


def approval_booking_tool() -> Any:
    """interrupt_resume's book_flight: asks a person to approve (LangGraph's interrupt(), which
    ends the run), and books once the resumed run hands it the approval."""
    from langgraph.types import interrupt

    @tool("book_flight")
    def book_flight_approved(city: str) -> str:
        """Book a flight to a city once a person approves."""
        answer = interrupt(script.INTERRUPT_PAYLOAD)
        return script.BOOKED_RESULT if answer == script.RESUME_VALUE else "Booking declined"

    return book_flight_approved


# --------------------------------------------------------------------------- graphs
def _react(shape: str, agent: str, tools: list[Any], handle_errors: bool = True,
           checkpointer: Any = None) -> Any:
    from langgraph.prebuilt import ToolNode, create_react_agent

    tool_node = ToolNode(tools, handle_tool_errors=handle_errors)
    return create_react_agent(model(shape, agent), tool_node,
                              prompt=f"You are {agent}. Use tools.", name=agent,
                              checkpointer=checkpointer)


def _supervisor_subgraphs() -> Any:
    from langchain_core.messages import SystemMessage
    from langgraph.graph import END, START, MessagesState, StateGraph

    shape = "supervisor_subgraphs"
    supervisor = model(shape, "supervisor")

    class State(MessagesState):
        next: str

    def supervise(state: State) -> dict[str, Any]:
        prompt = SystemMessage("You are a supervisor. Route to weather_agent or math_agent, "
                               'answering {"next": <agent>}, or answer the user.')
        reply = supervisor.invoke([prompt, *state["messages"]])
        try:
            return {"next": json.loads(str(reply.content))["next"]}
        except ValueError:
            return {"next": END, "messages": [reply]}

    g = StateGraph(State)
    g.add_node("supervisor", supervise)
    g.add_node("weather_agent", _react(shape, "weather_agent", [get_weather]))
    g.add_node("math_agent", _react(shape, "math_agent", [add]))
    g.add_edge(START, "supervisor")
    g.add_conditional_edges("supervisor", lambda s: s["next"],
                            ["weather_agent", "math_agent", END])
    g.add_edge("weather_agent", "supervisor")
    g.add_edge("math_agent", "supervisor")
    return g.compile(name="supervisor")


def _supervisor_handoff() -> Any:
    from langgraph_supervisor import create_supervisor

    shape = "supervisor_handoff"
    workflow = create_supervisor(
        [_react(shape, "weather_agent", [get_weather]), _react(shape, "math_agent", [add])],
        model=model(shape, "supervisor"),
        prompt="You are a supervisor. Hand off to weather_agent or math_agent.")
    return workflow.compile(name="supervisor_team")


def _swarm_handoff() -> Any:
    from langgraph_swarm import create_handoff_tool, create_swarm

    shape = "swarm_handoff"
    weather = _react(shape, "weather_agent",
                     [get_weather, create_handoff_tool(agent_name="math_agent")])
    math = _react(shape, "math_agent", [add])
    return create_swarm([weather, math], default_active_agent="weather_agent").compile(
        name="swarm")


def _agent_in_tool() -> Any:
    shape = "agent_in_tool"
    researcher = _react(shape, "researcher", [get_weather])

    @tool
    def ask_researcher(question: str) -> str:
        """Ask the researcher agent a question."""
        result = researcher.invoke({"messages": [HumanMessage(question, id="tool-human-1")]})
        return str(result["messages"][-1].content)

    return _react(shape, "assistant", [ask_researcher])


class FanoutState(MessagesState):
    """send_fanout's state (module level: LangGraph resolves the nodes' type hints by name)."""

    cities: list[str]


def _send_fanout() -> Any:
    from langgraph.graph import END, START, StateGraph

    shape = "send_fanout"
    lead = model(shape, "research_team")
    researcher = _react(shape, "researcher", [get_weather])

    def plan(state: FanoutState) -> dict[str, Any]:
        reply = lead.invoke(state["messages"])
        return {"cities": json.loads(str(reply.content))}

    def fan_out(state: FanoutState) -> list[Send]:
        return [Send("researcher", {"messages": [HumanMessage(script.fanout_question(city),
                                                              id=f"send-human-{city}")]})
                for city in state["cities"]]

    def summarize(state: FanoutState) -> dict[str, Any]:
        return {"messages": [lead.invoke(state["messages"])]}

    g = StateGraph(FanoutState)
    g.add_node("plan", plan)
    g.add_node("researcher", researcher)
    g.add_node("summarize", summarize)
    g.add_edge(START, "plan")
    g.add_conditional_edges("plan", fan_out, ["researcher"])
    g.add_edge("researcher", "summarize")
    g.add_edge("summarize", END)
    return g.compile(name="research_team")


def _mcp_tools() -> Any:
    """create_agent "assistant" on the tools of the local stdio MCP server (mcp_server.py).
    The adapter starts the server as a subprocess for each tool call; its tools are async only,
    so `run` drives this graph with `ainvoke` / `astream`."""
    import asyncio
    import sys

    from langchain.agents import create_agent
    from langchain_mcp_adapters.client import MultiServerMCPClient

    client = MultiServerMCPClient({"capture": {
        "command": sys.executable, "args": ["-m", "tests.capture.mcp_server"],
        "transport": "stdio"}})
    tools = asyncio.run(client.get_tools())
    return create_agent(model("mcp_tools", "assistant"), sorted(tools, key=lambda t: t.name),
                        system_prompt="You are assistant. Use tools.", name="assistant")


def _create_agent_middleware() -> Any:
    """create_agent "assistant" with a before_model and an after_model hook (which change
    nothing) and a tool-call limit that the run stays under."""
    from langchain.agents import create_agent
    from langchain.agents.middleware import ToolCallLimitMiddleware, after_model, before_model

    @before_model
    def note_turn(state: Any, runtime: Any) -> dict[str, Any] | None:
        return None

    @after_model
    def check_reply(state: Any, runtime: Any) -> dict[str, Any] | None:
        return None

    return create_agent(model("create_agent_middleware", "assistant"), [get_weather, add],
                        system_prompt="You are assistant. Use tools.", name="assistant",
                        middleware=[note_turn, check_reply, ToolCallLimitMiddleware(run_limit=5)])


def _deep_agent() -> Any:
    """deepagents' "orchestrator" with the sub-agent "researcher" (started through `task`),
    on the default in-state filesystem. deepagents 0.7 leaves `write_todos` out of its default
    stack, so the agent gets it from LangChain's TodoListMiddleware."""
    from deepagents import create_deep_agent
    from langchain.agents.middleware import TodoListMiddleware

    shape = "deep_agent"
    researcher = {"name": "researcher", "description": "Looks up the weather of a city.",
                  "system_prompt": "You are researcher. Use tools.", "tools": [get_weather],
                  "model": model(shape, "researcher")}
    return create_deep_agent(model(shape, "orchestrator"), [get_weather],
                             system_prompt="You are orchestrator.", subagents=[researcher],
                             middleware=[TodoListMiddleware()], name="orchestrator")


#: shapes whose tools are async only (MCP tools), so the graph runs with ainvoke / astream
ASYNC_SHAPES = frozenset({"mcp_tools"})


def _interrupt_resume() -> Any:
    from langgraph.checkpoint.memory import InMemorySaver

    return _react("interrupt_resume", "assistant", [approval_booking_tool()],
                  checkpointer=InMemorySaver())


#: each shape's graph builder; the single-agent shapes are create_react_agent "assistant" with
#: the tools of its script
BUILDERS: dict[str, Callable[[], Any]] = {
    "supervisor_subgraphs": _supervisor_subgraphs,
    "supervisor_handoff": _supervisor_handoff,
    "swarm_handoff": _swarm_handoff,
    "agent_in_tool": _agent_in_tool,
    "parallel_tools": lambda: _react("parallel_tools", "assistant", [get_weather, add]),
    "tool_retry": lambda: _react("tool_retry", "assistant", [flaky_weather_tool()]),
    "run_error": lambda: _react("run_error", "assistant", [get_weather, book_flight],
                                handle_errors=False),
    "react_agent": lambda: _react("react_agent", "assistant", [get_weather, add, divide]),
    "model_failure": lambda: _react("model_failure", "assistant", [get_weather]),
    "send_fanout": _send_fanout,
    "mcp_tools": _mcp_tools,
    "create_agent_middleware": _create_agent_middleware,
    "deep_agent": _deep_agent,
    "interrupt_resume": _interrupt_resume,
}


def build(shape: str) -> Any:
    if shape not in BUILDERS:
        raise ValueError(f"unknown shape {shape}")
    return BUILDERS[shape]()


#: create_agent runs every middleware hook as a node of its own, and under Traceloop every
#: hook of a decorated middleware (not just the one it defines) becomes a node: these runs take
#: more than LangGraph's default 25 super-steps
RECURSION_LIMITS = {"create_agent_middleware": 100, "deep_agent": 250}


def run(graph: Any, shape: str, stream: bool, callbacks: list[Any] | None = None) -> Any:
    """Run once; stream=True streams messages from every (sub)graph so the models stream."""
    config: dict[str, Any] = {
        "configurable": {"thread_id": script.THREAD_ID},
        "metadata": {"session_id": script.SESSION_ID, "user_id": script.USER_ID},
        "tags": ["trajhub-capture"],
        "recursion_limit": RECURSION_LIMITS.get(shape, 25),
    }
    if callbacks:
        config["callbacks"] = callbacks
    inputs: Any = {"messages": [HumanMessage(script.SHAPES[shape]["question"], id="human-1")]}
    if shape in script.INTERRUPT_SHAPES:
        # the first run ends at the tool's interrupt(); the second resumes the same thread
        from langgraph.types import Command

        _run_once(graph, inputs, config, stream)
        return _run_once(graph, Command(resume=script.RESUME_VALUE), config, stream)
    if shape in ASYNC_SHAPES:
        import asyncio

        return asyncio.run(_arun(graph, inputs, config, stream))
    return _run_once(graph, inputs, config, stream)


def _run_once(graph: Any, inputs: Any, config: dict[str, Any], stream: bool) -> Any:
    """One run of a sync graph: invoke, or stream and keep the root graph's last values."""
    if not stream:
        return graph.invoke(inputs, config)
    last = None
    for namespace, mode, data in graph.stream(inputs, config, stream_mode=["messages", "values"],
                                              subgraphs=True):
        if mode == "values" and not namespace:
            last = data
    return last


async def _arun(graph: Any, inputs: dict[str, Any], config: dict[str, Any], stream: bool) -> Any:
    """`run` for a graph with async-only tools."""
    if not stream:
        return await graph.ainvoke(inputs, config)
    last = None
    async for namespace, mode, data in graph.astream(
            inputs, config, stream_mode=["messages", "values"], subgraphs=True):
        if mode == "values" and not namespace:
            last = data
    return last
