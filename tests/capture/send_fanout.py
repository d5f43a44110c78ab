"""Capture a LangGraph run that fans sub-agents out in parallel with `Send`, under OpenInference.

  .venv-capture/bin/python -m tests.capture.send_fanout

The multi-agent shapes of script.py are captured under every client (README.md); this one is
captured once, for the agent graph (docs/agent-graph.md), under openinference (its spans record
the LangGraph super-step, so the fan-out is visible). It writes
tests/fixtures/graph/send_fanout.openinference/http_NNN_*.{bin,json}, the same layout as the
other captures, with seeded ids.

The graph, `research_team` (a StateGraph):
- `plan` asks its model for the cities to look up (one call; the answer is the JSON list
  CITIES) and returns one `Send("researcher", ...)` per city;
- `researcher` is a `create_react_agent(..., name="researcher")` node with the tool
  `get_weather`: each of the three runs (in the same super-step, in parallel) calls its model,
  which asks for `get_weather(<its city>)`, then its model again, which answers;
- `summarize` calls its model once, after all three, and the run ends.
So: 1 + 3 × 2 + 1 = 8 model calls, 3 tool calls, 4 agent activations (the root and three
researchers). tests/test_agent_graph.py writes the graph this gives from these facts.
"""

from __future__ import annotations

import json
import operator
import shutil
import sys
import time
import zlib
from pathlib import Path
from typing import Annotated, Any

from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.prebuilt import create_react_agent
from langgraph.types import Send

from tests.capture import agents
from tests.capture.run_python import _otel_provider

OUT = Path(__file__).parent.parent / "fixtures" / "graph" / "send_fanout.openinference"
CITIES = ["Paris", "Tokyo", "Lima"]
QUESTION = "Compare the weather in Paris, Tokyo and Lima."
USAGE = {"input_tokens": 20, "output_tokens": 5, "total_tokens": 25}


class CityModel(GenericFakeChatModel):
    """The researcher's model: asks for the weather of the city in its question, then answers
    with the tool's result (each parallel run gets the reply for its own city)."""

    messages: Any = iter(())

    def bind_tools(self, tools: Any, **kwargs: Any) -> Any:
        return self

    def _generate(self, messages: list[BaseMessage], stop: list[str] | None = None,
                  run_manager: Any = None, **kwargs: Any) -> ChatResult:
        time.sleep(0.02)  # the three runs overlap
        question = next(str(m.content) for m in messages if isinstance(m, HumanMessage))
        city = question.rsplit(" ", 1)[-1].rstrip("?")
        if isinstance(messages[-1], ToolMessage):
            reply = AIMessage(f"{city}: {messages[-1].content}", usage_metadata=USAGE)
        else:
            reply = AIMessage("", usage_metadata=USAGE, tool_calls=[{
                "id": f"call_{city.lower()}", "name": "get_weather", "args": {"city": city},
                "type": "tool_call"}])
        return ChatResult(generations=[ChatGeneration(message=reply)])


class TextModel(GenericFakeChatModel):
    """The planner's and the summarizer's model: one fixed answer."""

    messages: Any = iter(())
    answer: str

    def _generate(self, messages: list[BaseMessage], stop: list[str] | None = None,
                  run_manager: Any = None, **kwargs: Any) -> ChatResult:
        return ChatResult(generations=[ChatGeneration(
            message=AIMessage(self.answer, usage_metadata=USAGE))])


class State(MessagesState):
    reports: Annotated[list[str], operator.add]


def build() -> Any:
    planner = TextModel(answer=json.dumps(CITIES))
    summarizer = TextModel(answer="Paris is sunny, Tokyo cloudy, Lima sunny.")
    researcher = create_react_agent(CityModel(), [agents.get_weather], name="researcher")

    def plan(state: State) -> dict[str, Any]:
        planner.invoke(state["messages"])
        return {}

    def fan_out(state: State) -> list[Send]:
        return [Send("researcher", {"messages": [HumanMessage(f"What is the weather in {city}")]})
                for city in CITIES]

    def summarize(state: State) -> dict[str, Any]:
        return {"messages": [summarizer.invoke(state["messages"])]}

    g = StateGraph(State)
    g.add_node("plan", plan)
    g.add_node("researcher", researcher)
    g.add_node("summarize", summarize)
    g.add_edge(START, "plan")
    g.add_conditional_edges("plan", fan_out, ["researcher"])
    g.add_edge("researcher", "summarize")
    g.add_edge("summarize", END)
    return g.compile(name="research_team")


def main() -> int:
    from openinference.instrumentation.langchain import LangChainInstrumentor

    from tests.capture.receiver import Receiver

    shutil.rmtree(OUT, ignore_errors=True)
    with Receiver(OUT) as receiver:
        provider = _otel_provider("openinference", receiver.endpoint,
                                  zlib.crc32(b"openinference/send_fanout"))
        LangChainInstrumentor().instrument(tracer_provider=provider)
        out = build().invoke({"messages": [HumanMessage(QUESTION, id="human-1")]},
                             {"configurable": {"thread_id": "send-fanout-1"}})
        print("final answer:", out["messages"][-1].content)
        provider.force_flush()
        provider.shutdown()
        time.sleep(0.3)
    files = sorted(OUT.glob("http_*.bin"))
    print(f"{OUT}: {len(files)} requests")
    return 0 if files else 1


if __name__ == "__main__":
    sys.exit(main())
