"""The scripted multi-agent runs: what every fake model says, turn by turn, and what every tool
returns. One source for the Python agents (agents.py), the JS agents (js/, through
script.json) and the ground truth (ground_truth.py).

A shape's `models` maps an agent name to its model's turns, in call order. A turn has the
assistant `content`, its `tool_calls` ({"name", "args", "id"}) and its scripted token `usage`
({"input", "output"}). Each agent has its own scripted model, so the turns do not depend on
how the agents interleave.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

HERE = Path(__file__).parent
MODEL_NAME = "fake-gpt-4o-mini"
THREAD_ID = "thread-capture-1"
SESSION_ID = "session-capture-1"
USER_ID = "user-42"

WEATHER_QUESTION = "What's the weather in Paris, and what is 2+3?"
WEATHER_RESULT = "Sunny, 22C in Paris"
TOKYO_RESULT = "Cloudy, 18C in Tokyo"
FLAKY_ERROR = "ConnectionError: weather service unavailable (simulated)"
BOOKING_ERROR = "booking service rejected the request (simulated)"


def turn(content: str, usage: tuple[int, int], *calls: tuple[str, dict[str, Any], str]
         ) -> dict[str, Any]:
    return {
        "content": content,
        "tool_calls": [{"name": n, "args": a, "id": i} for n, a, i in calls],
        "usage": {"input": usage[0], "output": usage[1]},
    }


def route(target: str, usage: tuple[int, int]) -> dict[str, Any]:
    """A supervisor's structured routing decision: JSON content, no tool call."""
    return turn(json.dumps({"next": target}), usage)


SHAPES: dict[str, dict[str, Any]] = {
    # a StateGraph whose "supervisor" node asks its model where to go next, and whose
    # "weather_agent" / "math_agent" nodes are create_react_agent(..., name=...) subgraphs
    "supervisor_subgraphs": {
        "graph": "stategraph",
        "question": WEATHER_QUESTION,
        "models": {
            "supervisor": [
                route("weather_agent", (50, 8)),
                route("math_agent", (90, 8)),
                turn("It is sunny and 22C in Paris, and 2 + 3 = 5.", (130, 16)),
            ],
            "weather_agent": [
                turn("", (60, 10), ("get_weather", {"city": "Paris"}, "call_weather_1")),
                turn("It is sunny and 22C in Paris.", (85, 9)),
            ],
            "math_agent": [
                turn("", (70, 12), ("add", {"a": 2, "b": 3}, "call_add_1")),
                turn("2 + 3 = 5.", (95, 6)),
            ],
        },
    },
    # langgraph-supervisor's create_supervisor: the supervisor hands off with transfer_to_* tools
    "supervisor_handoff": {
        "graph": "langgraph_supervisor",
        "question": WEATHER_QUESTION,
        "models": {
            "supervisor": [
                turn("", (55, 11), ("transfer_to_weather_agent", {}, "call_handoff_1")),
                turn("", (110, 11), ("transfer_to_math_agent", {}, "call_handoff_2")),
                turn("It is sunny and 22C in Paris, and 2 + 3 = 5.", (160, 16)),
            ],
            "weather_agent": [
                turn("", (60, 10), ("get_weather", {"city": "Paris"}, "call_weather_1")),
                turn("It is sunny and 22C in Paris.", (85, 9)),
            ],
            "math_agent": [
                turn("", (70, 12), ("add", {"a": 2, "b": 3}, "call_add_1")),
                turn("2 + 3 = 5.", (95, 6)),
            ],
        },
    },
    # langgraph-swarm: weather_agent answers its part, then hands off to math_agent
    "swarm_handoff": {
        "graph": "langgraph_swarm",
        "question": WEATHER_QUESTION,
        "models": {
            "weather_agent": [
                turn("", (60, 10), ("get_weather", {"city": "Paris"}, "call_weather_1")),
                turn("It is sunny and 22C in Paris. Handing over for the math.", (85, 14),
                     ("transfer_to_math_agent", {}, "call_handoff_1")),
            ],
            "math_agent": [
                turn("", (100, 12), ("add", {"a": 2, "b": 3}, "call_add_1")),
                turn("It is sunny and 22C in Paris, and 2 + 3 = 5.", (125, 16)),
            ],
        },
    },
    # "assistant" calls a tool that runs another agent ("researcher") to completion
    "agent_in_tool": {
        "graph": "prebuilt",
        "question": "Ask the researcher what the weather is in Paris.",
        "models": {
            "assistant": [
                turn("", (40, 14), ("ask_researcher", {"question": "What is the weather in Paris?"},
                                    "call_research_1")),
                turn("The researcher says: it is sunny and 22C in Paris.", (80, 13)),
            ],
            "researcher": [
                turn("", (30, 10), ("get_weather", {"city": "Paris"}, "call_weather_1")),
                turn("It is sunny and 22C in Paris.", (55, 9)),
            ],
        },
    },
    # three tool calls in one model turn, run in parallel by the ToolNode
    "parallel_tools": {
        "graph": "prebuilt",
        "question": "What's the weather in Paris and Tokyo, and what is 2+3?",
        "models": {
            "assistant": [
                turn("Looking all three up at once.", (120, 30),
                     ("get_weather", {"city": "Paris"}, "call_weather_1"),
                     ("get_weather", {"city": "Tokyo"}, "call_weather_2"),
                     ("add", {"a": 2, "b": 3}, "call_add_1")),
                turn("Paris: sunny, 22C. Tokyo: cloudy, 18C. 2 + 3 = 5.", (210, 20)),
            ],
        },
    },
    # flaky_weather fails on its first call; the ToolNode turns the error into a tool message
    # and the model calls the tool again, which then succeeds
    "tool_retry": {
        "graph": "prebuilt",
        "question": "What's the weather in Paris?",
        "models": {
            "assistant": [
                turn("", (45, 10), ("flaky_weather", {"city": "Paris"}, "call_flaky_1")),
                turn("The lookup failed, trying again.", (90, 15),
                     ("flaky_weather", {"city": "Paris"}, "call_flaky_2")),
                turn("It is sunny and 22C in Paris.", (130, 9)),
            ],
        },
    },
    # the second model turn calls book_flight, which raises; the ToolNode does not catch it,
    # so the whole run raises
    "run_error": {
        "graph": "prebuilt",
        "question": "What's the weather in Paris? If it is sunny, book me a flight there.",
        "models": {
            "assistant": [
                turn("", (50, 10), ("get_weather", {"city": "Paris"}, "call_weather_1")),
                turn("It is sunny, booking the flight.", (95, 18),
                     ("book_flight", {"city": "Paris"}, "call_book_1")),
            ],
        },
    },
}


# A two-turn conversation (issue 21, sessions): one create_react_agent "assistant" with a
# checkpointer, run twice on the same thread; the second run sends only the new question and
# the checkpointer supplies the first turn. Its ids are its own, apart from the shapes', so a
# conversation capture never joins another capture's session.
CONVERSATION_SESSION_ID = "conversation-session-1"
CONVERSATION_THREAD_ID = "conversation-thread-1"
CONVERSATION_USER_ID = "user-7"
CONVERSATION: dict[str, Any] = {
    "agent": "assistant",
    "turns": [
        {"question": "What's the weather in Paris?",
         "models": [turn("", (40, 10), ("get_weather", {"city": "Paris"}, "call_weather_1")),
                    turn("It is sunny and 22C in Paris.", (70, 9))]},
        {"question": "And what is 2+3?",
         "models": [turn("", (95, 12), ("add", {"a": 2, "b": 3}, "call_add_1")),
                    turn("2 + 3 = 5.", (120, 6))]},
    ],
}

def write_json() -> Path:
    """script.json: the same scripts for the JS agents."""
    path = HERE / "js" / "script.json"
    doc = {"model_name": MODEL_NAME, "thread_id": THREAD_ID, "session_id": SESSION_ID,
           "user_id": USER_ID, "results": {"weather": WEATHER_RESULT, "tokyo": TOKYO_RESULT,
                                           "flaky_error": FLAKY_ERROR,
                                           "booking_error": BOOKING_ERROR},
           "shapes": SHAPES,
           "conversation": {"session_id": CONVERSATION_SESSION_ID,
                            "thread_id": CONVERSATION_THREAD_ID,
                            "user_id": CONVERSATION_USER_ID, **CONVERSATION}}
    path.write_text(json.dumps(doc, indent=2, ensure_ascii=False) + "\n")
    return path


if __name__ == "__main__":
    print(write_json())
