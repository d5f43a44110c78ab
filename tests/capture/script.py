"""The scripted multi-agent runs: what every fake model says, turn by turn, and what every tool
returns. One source for the Python agents (agents.py), the JS agents (js/, through
script.json) and the ground truth (ground_truth.py).

A shape's `models` maps an agent name to its model's turns, in call order. A turn has the
assistant `content`, its `tool_calls` ({"name", "args", "id"}) and its scripted token `usage`
({"input", "output"}, and where scripted "cache_read", "cache_write" and "reasoning": the
LangChain usage_metadata `input_token_details.cache_read` / `.cache_creation` and
`output_token_details.reasoning`; `input` includes the cached tokens, as LangChain counts them).
A turn with an `error` ({"type", "message"}) is a model call that raises that exception instead
of answering. A turn with a `key` belongs to the activation whose user message contains that key
(`send_fanout`: three activations of one agent run in parallel, so the order of their calls is
not fixed; each plays the turns of its own city, in order). Otherwise each agent has its own
scripted model, so the turns do not depend on how the agents interleave.
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
DIVIDE_ERROR = "ZeroDivisionError: division by zero"
MODEL_ERROR = "RuntimeError: upstream model returned HTTP 500 (simulated)"
CURRENCY_ERROR = "ValueError: currency service rejected the request (simulated)"
NOTES_PATH = "/notes.md"
NOTES = "Paris: sunny, 22C"
TODOS = [{"content": "Ask the researcher for the weather in Paris", "status": "in_progress"},
         {"content": "Write the answer to /notes.md", "status": "pending"}]
FANOUT_CITIES = ["Paris", "Tokyo", "Lima"]


def turn(content: str, usage: tuple[int, ...], *calls: tuple[str, dict[str, Any], str],
         key: str | None = None) -> dict[str, Any]:
    """usage: (input, output) or (input, output, cache_read, cache_write, reasoning)."""
    counts = {"input": usage[0], "output": usage[1]}
    if len(usage) == 5:
        counts.update(cache_read=usage[2], cache_write=usage[3], reasoning=usage[4])
    out: dict[str, Any] = {
        "content": content,
        "tool_calls": [{"name": n, "args": a, "id": i} for n, a, i in calls],
        "usage": counts,
    }
    if key is not None:
        out["key"] = key
    return out


def failing_turn(error: str) -> dict[str, Any]:
    """A model call that raises `error` ("Type: message") and reports no usage."""
    kind, message = error.split(": ", 1)
    return {"content": "", "tool_calls": [], "usage": {"input": 0, "output": 0},
            "error": {"type": kind, "message": message}}


def route(target: str, usage: tuple[int, int]) -> dict[str, Any]:
    """A supervisor's structured routing decision: JSON content, no tool call."""
    return turn(json.dumps({"next": target}), usage)


def _members() -> dict[str, list[dict[str, Any]]]:
    """The two members the supervisor shapes hand over to, each answering its part in a turn."""
    return {
        "weather_agent": [
            turn("", (60, 10), ("get_weather", {"city": "Paris"}, "call_weather_1")),
            turn("It is sunny and 22C in Paris.", (85, 9)),
        ],
        "math_agent": [
            turn("", (70, 12), ("add", {"a": 2, "b": 3}, "call_add_1")),
            turn("2 + 3 = 5.", (95, 6)),
        ],
    }


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
            **_members(),
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
            **_members(),
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
    # a single ReAct agent (the older single-agent `react` scenario, tests/fixtures/README.md,
    # as a named agent): two tools in parallel, then divide(1, 0), which fails and which the
    # ToolNode catches, then the answer. Its model turns report cache read / cache write /
    # reasoning tokens.
    "react_agent": {
        "graph": "prebuilt",
        "question": "What's the weather in Paris, what is 2+3, and what is 1/0?",
        "models": {
            "assistant": [
                turn("", (120, 30, 64, 16, 12),
                     ("get_weather", {"city": "Paris"}, "call_weather_1"),
                     ("add", {"a": 2, "b": 3}, "call_add_1")),
                turn("", (180, 18, 96, 0, 4), ("divide", {"a": 1, "b": 0}, "call_div_1")),
                turn("Paris: sunny, 22C. 2 + 3 = 5. 1/0 is undefined (division by zero).",
                     (230, 25, 128, 8, 6)),
            ],
        },
    },
    # the model answers once (get_weather), then its second call raises: the run raises
    "model_failure": {
        "graph": "prebuilt",
        "question": "What's the weather in Paris?",
        "models": {
            "assistant": [
                turn("", (45, 10, 32, 8, 3), ("get_weather", {"city": "Paris"}, "call_weather_1")),
                failing_turn(MODEL_ERROR),
            ],
        },
    },
    # a StateGraph "research_team": its plan node asks its model for the cities, and fans out one
    # Send("researcher", ...) per city; the three create_react_agent "researcher" runs (one
    # super-step, in parallel) each call get_weather for their city; then the summarize node
    # calls the model once more and answers
    "send_fanout": {
        "graph": "stategraph",
        "question": "Compare the weather in Paris, Tokyo and Lima.",
        "models": {
            "research_team": [
                turn(json.dumps(FANOUT_CITIES), (40, 12, 0, 32, 0)),
                turn("Paris is sunny (22C), Tokyo cloudy (18C), Lima sunny (22C).",
                     (150, 20, 32, 0, 5)),
            ],
            "researcher": [
                t
                for i, city in enumerate(FANOUT_CITIES)
                for t in (
                    turn("", (30 + i, 10, 16, 0, 2),
                         ("get_weather", {"city": city}, f"call_weather_{city.lower()}"),
                         key=city),
                    turn(f"{city}: " + (TOKYO_RESULT if city == "Tokyo"
                                        else f"Sunny, 22C in {city}"),
                         (55 + i, 9 + i, 16, 0, 0), key=city),
                )
            ],
        },
    },
    # a LangChain v1 create_agent "assistant" whose two tools come from a local stdio MCP server
    # (mcp_server.py, through langchain-mcp-adapters): get_weather answers; convert_currency
    # fails, and the adapter returns its error to the model as a tool message; then the answer
    "mcp_tools": {
        "graph": "create_agent",
        "question": "What's the weather in Paris, and what are 100 EUR in JPY?",
        "models": {
            "assistant": [
                turn("", (50, 10), ("get_weather", {"city": "Paris"}, "call_weather_1")),
                turn("", (80, 12), ("convert_currency", {"amount": 100, "currency": "JPY"},
                                    "call_convert_1")),
                turn("It is sunny and 22C in Paris; the currency conversion failed.",
                     (120, 15)),
            ],
        },
    },
    # create_agent "assistant" with middleware: a before_model and an after_model hook and a
    # ToolCallLimitMiddleware (not reached); two tools called one after the other
    "create_agent_middleware": {
        "graph": "create_agent",
        "question": WEATHER_QUESTION,
        "models": {
            "assistant": [
                turn("", (55, 10), ("get_weather", {"city": "Paris"}, "call_weather_1")),
                turn("", (85, 12), ("add", {"a": 2, "b": 3}, "call_add_1")),
                turn("It is sunny and 22C in Paris, and 2 + 3 = 5.", (110, 16)),
            ],
        },
    },
    # deepagents.create_deep_agent "orchestrator": write_todos, the "researcher" sub-agent through
    # the task tool (it calls get_weather and answers), write_file and read_file on the agent's
    # in-state filesystem, then the answer
    "deep_agent": {
        "graph": "deepagents",
        "question": "Find out the weather in Paris and keep a note of it.",
        "models": {
            "orchestrator": [
                turn("", (300, 40), ("write_todos", {"todos": TODOS}, "call_todos_1")),
                turn("", (340, 30), ("task", {"description": "What is the weather in Paris?",
                                              "subagent_type": "researcher"}, "call_task_1")),
                turn("", (380, 25), ("write_file", {"file_path": NOTES_PATH, "content": NOTES},
                                     "call_write_1")),
                turn("", (410, 20), ("read_file", {"file_path": NOTES_PATH}, "call_read_1")),
                turn("It is sunny and 22C in Paris; the note is in /notes.md.", (440, 18)),
            ],
            "researcher": [
                turn("", (90, 10), ("get_weather", {"city": "Paris"}, "call_weather_1")),
                turn("It is sunny and 22C in Paris.", (120, 9)),
            ],
        },
    },
    # create_react_agent "assistant" with an InMemorySaver checkpointer: its book_flight tool calls
    # interrupt(INTERRUPT_PAYLOAD) to ask a person to approve, so the first run ends there; the
    # second run resumes the same thread with Command(resume=RESUME_VALUE), the tool (run again
    # from its start) gets the value from interrupt() and books, and the model answers
    "interrupt_resume": {
        "graph": "prebuilt",
        "question": "Book me a flight to Paris.",
        "models": {
            "assistant": [
                turn("", (40, 10), ("book_flight", {"city": "Paris"}, "call_book_1")),
                turn("Your flight to Paris is booked.", (70, 12)),
            ],
        },
    },
}

#: interrupt_resume: what book_flight asks the person, their answer, and what the tool returns
INTERRUPT_PAYLOAD = {"question": "Book a flight to Paris?", "city": "Paris"}
RESUME_VALUE = "approve"
BOOKED_RESULT = "Booked a flight to Paris"
#: shapes run twice on one thread (an interrupted run, then its resume): one trace per run
INTERRUPT_SHAPES = frozenset({"interrupt_resume"})


#: shapes with no JS twin (captured under the Python clients only: README.md, "Shapes not
#: captured"); every shape has one now
PYTHON_ONLY: frozenset[str] = frozenset()


def fanout_question(city: str) -> str:
    """The user message of the `send_fanout` researcher run for `city` (its turns' `key`)."""
    return f"What is the weather in {city}?"


# A two-turn conversation (a session of two turns): one create_react_agent "assistant" with a
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
                                           "booking_error": BOOKING_ERROR,
                                           "divide_error": DIVIDE_ERROR,
                                           "model_error": MODEL_ERROR},
           "fanout_cities": FANOUT_CITIES,
           "fanout_question": fanout_question("{city}"),
           "interrupt": {"payload": INTERRUPT_PAYLOAD, "resume": RESUME_VALUE,
                         "booked": BOOKED_RESULT},
           "interrupt_shapes": sorted(INTERRUPT_SHAPES),
           "shapes": SHAPES,
           "conversation": {"session_id": CONVERSATION_SESSION_ID,
                            "thread_id": CONVERSATION_THREAD_ID,
                            "user_id": CONVERSATION_USER_ID, **CONVERSATION}}
    path.write_text(json.dumps(doc, indent=2, ensure_ascii=False) + "\n")
    return path


if __name__ == "__main__":
    print(write_json())
