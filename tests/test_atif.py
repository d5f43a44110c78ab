"""ATIF export and import (normalizers/atif.py, docs/atif.md): the round trip trajhub → ATIF →
trajhub keeps steps, agents, tool calls, tokens and errors; every export validates against the
ATIF v1.8 pydantic models (the `atif` package, an independent implementation of Harbor's
`harbor.models.trajectories`, which itself needs Python 3.12); a document written by another
producer imports as the run it describes."""

from __future__ import annotations

import json
from dataclasses import replace
from datetime import UTC, datetime
from typing import Any

import atif
import pytest

from tests.normalize_spans import span as _span
from trajhub.normalizers import derive, trajectory_to_dict
from trajhub.normalizers.atif import SCHEMA_VERSION, AtifError, from_atif, to_atif
from trajhub.normalizers.document import parse_document
from trajhub.normalizers.model import STATUS_ERROR, AttributeValue, Span
from trajhub.normalizers.sources import spans_from_resource_spans
from trajhub.normalizers.trajectory import Trajectory

OP = "gen_ai.operation.name"
START_NS = 1_764_000_000_000 * 1_000_000
BASE_MS = 1_764_000_000_000


def span(span_id: str, parent: str, name: str, start: float, end: float,
         attrs: dict[str, AttributeValue], *, status: int = 0, message: str = "") -> Span:
    built = _span(span_id, parent, name, BASE_MS + start, BASE_MS + end, attrs, status=status,
                  message=message)
    return replace(built, kind=1)


def chat(span_id: str, parent: str, start: float, end: float, *, inp: list[dict[str, Any]],
         out: dict[str, Any], tokens: tuple[int, int, int, int, int],
         error: str = "") -> Span:
    usage_in, usage_out, read, write, reasoning = tokens
    attrs: dict[str, AttributeValue] = {
        OP: "chat", "gen_ai.request.model": "gpt-4o", "gen_ai.response.model": "gpt-4o",
        "gen_ai.provider.name": "openai",
        "gen_ai.input.messages": json.dumps(inp), "gen_ai.output.messages": json.dumps([out]),
        "gen_ai.usage.input_tokens": usage_in, "gen_ai.usage.output_tokens": usage_out,
        "gen_ai.usage.cache_read.input_tokens": read,
        "gen_ai.usage.cache_creation.input_tokens": write,
        "gen_ai.usage.reasoning.output_tokens": reasoning,
    }
    if error:
        attrs["error.type"] = error
    return span(span_id, parent, "chat gpt-4o", start, end, attrs,
                status=STATUS_ERROR if error else 0, message="rate limited" if error else "")


def tool(span_id: str, parent: str, start: float, end: float, name: str, call_id: str,
         arguments: dict[str, Any], result: str, *, failed: bool = False) -> Span:
    return span(span_id, parent, f"execute_tool {name}", start, end, {
        OP: "execute_tool", "gen_ai.tool.name": name, "gen_ai.tool.call.id": call_id,
        "gen_ai.tool.call.arguments": json.dumps(arguments), "gen_ai.tool.call.result": result,
        **({"error.type": "TimeoutError"} if failed else {}),
    }, status=STATUS_ERROR if failed else 0, message="timed out" if failed else "")


def user(text: str) -> dict[str, Any]:
    return {"role": "user", "parts": [{"type": "text", "content": text}]}


def calls(*pairs: tuple[str, str, dict[str, Any]]) -> dict[str, Any]:
    return {"role": "assistant", "parts": [
        {"type": "tool_call", "id": i, "name": n, "arguments": a} for i, n, a in pairs]}


def said(text: str) -> dict[str, Any]:
    return {"role": "assistant", "parts": [{"type": "text", "content": text}],
            "finish_reason": "stop"}


def run() -> list[Span]:
    """A supervisor that calls two tools in parallel (one fails), hands a question to a
    researcher sub-agent (whose first model call fails, the retry succeeds), and answers."""
    ask = [user("Weather and time in Paris, and who built the tower?")]
    return [
        span("a0", "", "invoke_agent supervisor", 0, 1000,
             {OP: "invoke_agent", "gen_ai.agent.name": "supervisor",
              "gen_ai.input.messages": json.dumps(ask),
              "gen_ai.output.messages": json.dumps([said("Rainy, 10:00, Eiffel.")])}),
        chat("m1", "a0", 10, 100, inp=ask,
             out=calls(("call_1", "get_weather", {"city": "Paris"}),
                       ("call_2", "get_time", {"tz": "Europe/Paris"})),
             tokens=(120, 30, 100, 20, 8)),
        tool("t1", "a0", 110, 150, "get_weather", "call_1", {"city": "Paris"}, "rainy, 57°F"),
        tool("t2", "a0", 111, 400, "get_time", "call_2", {"tz": "Europe/Paris"}, "",
             failed=True),
        span("a1", "a0", "invoke_agent researcher", 410, 800,
             {OP: "invoke_agent", "gen_ai.agent.name": "researcher",
              "gen_ai.input.messages": json.dumps([user("Who built the Eiffel tower?")]),
              "gen_ai.output.messages": json.dumps([said("Gustave Eiffel's company.")])}),
        chat("m2", "a1", 420, 430, inp=[user("Who built the Eiffel tower?")],
             out=said(""), tokens=(0, 0, 0, 0, 0), error="429"),
        chat("m3", "a1", 440, 600, inp=[user("Who built the Eiffel tower?")],
             out=calls(("call_3", "search", {"q": "Eiffel tower builder"})),
             tokens=(60, 12, 0, 0, 0)),
        tool("t3", "a1", 610, 700, "search", "call_3", {"q": "Eiffel tower builder"},
             "Gustave Eiffel's company"),
        chat("m4", "a1", 710, 790, inp=[user("Who built the Eiffel tower?")],
             out=said("Gustave Eiffel's company."), tokens=(90, 9, 40, 0, 0)),
        chat("m5", "a0", 810, 990, inp=ask, out=said("Rainy, 10:00, Eiffel."),
             tokens=(200, 15, 150, 0, 4)),
    ]


def stored(spans: list[Span]) -> Trajectory:
    """The trajectory as the service stores it and reads it back (parse_document)."""
    return parse_document(json.loads(json.dumps(trajectory_to_dict(derive(spans).trajectory))))


def reimported(document: dict[str, Any]) -> Trajectory:
    _, request = from_atif(document, START_NS)
    return derive(list(spans_from_resource_spans(request.resource_spans))).trajectory


def facts(trajectory: Trajectory) -> dict[str, Any]:
    """What the round trip must keep: agents with their steps in order, each step's type, name,
    tool call id, tool arguments and result, tokens and error; the root's error and totals."""
    def step(s: Any) -> tuple[Any, ...]:
        info = s.model_info
        tokens = None if info is None else (
            info.input_tokens, info.output_tokens, info.input_read_cached_tokens,
            info.input_creation_cached_tokens, info.reasoning_tokens)
        error = None if s.error is None else (s.error.code, s.error.msg)
        payload = (s.input, s.output) if s.type == "tool" else None
        return (s.type, s.name, s.tool_call_id, payload, tokens, error)

    root = trajectory.root_step
    return {
        "agents": [(a.name, [step(s) for s in a.steps]) for a in trajectory.agent_steps],
        "root_error": None if root.basic_info.error is None else (
            root.basic_info.error.code, root.basic_info.error.msg),
        "tokens": (root.metrics_info.input_tokens, root.metrics_info.output_tokens),
        "model_errors": {k: len(v) for k, v in root.metrics_info.model_errors.items()},
        "tool_errors": {k: len(v) for k, v in root.metrics_info.tool_errors.items()},
    }


def test_the_hand_built_run_is_what_the_round_trip_is_checked_against() -> None:
    """The expected facts, written from the script of `run()`, not from trajhub's output."""
    got = facts(stored(run()))
    assert [(name, [(s[0], s[1]) for s in steps]) for name, steps in got["agents"]] == [
        ("supervisor", [("model", "chat gpt-4o"), ("tool", "get_weather"), ("tool", "get_time"),
                        ("agent", "researcher"), ("model", "chat gpt-4o")]),
        ("researcher", [("model", "chat gpt-4o"), ("model", "chat gpt-4o"), ("tool", "search"),
                        ("model", "chat gpt-4o")]),
    ]
    assert got["tokens"] == (120 + 60 + 90 + 200, 30 + 12 + 9 + 15)
    assert got["model_errors"] == {"429": 1} and got["tool_errors"] == {"-1": 1}


def test_round_trip_keeps_steps_agents_tool_calls_tokens_and_errors() -> None:
    original = stored(run())
    document = to_atif(original)
    back = reimported(document)
    assert facts(back) == facts(original)


def test_round_trip_of_a_run_whose_root_is_no_agent() -> None:
    """A web request span around the agent: the root is no activation; after the round trip it
    still is none, and the agent is the same."""
    spans = [span("r0", "", "POST /chat", 0, 1000, {"http.request.method": "POST"}),
             *[replace(s, parent_span_id="r0") if s.span_id == "a0" else s for s in run()]]
    original = stored(spans)
    assert original.agent_steps[0].name == "supervisor"
    back = reimported(to_atif(original))
    assert facts(back) == facts(original)
    assert back.root_step.name == "POST /chat"


def test_the_export_is_valid_atif_v1_8() -> None:
    document = to_atif(stored(run()))
    assert document["schema_version"] == SCHEMA_VERSION == "ATIF-v1.8"
    parsed = atif.Trajectory.model_validate(document)
    assert parsed.agent.name == "supervisor"


def test_the_export_has_atif_shape_tool_results_answer_their_calls() -> None:
    document = to_atif(stored(run()))
    sources = [s["source"] for s in document["steps"]]
    # the user's question, the model call with its two tool calls answered in its observation,
    # the sub-agent's activation, the final answer
    assert sources == ["user", "agent", "agent", "agent"]
    assert document["steps"][0]["message"] == "Weather and time in Paris, and who built the tower?"
    first = document["steps"][1]
    assert [c["function_name"] for c in first["tool_calls"]] == ["get_weather", "get_time"]
    assert first["tool_calls"][0]["arguments"] == {"city": "Paris"}
    results = first["observation"]["results"]
    assert [(r["source_call_id"], r["content"]) for r in results] == [
        ("call_1", "rainy, 57°F"), ("call_2", "")]
    assert first["metrics"] == {"prompt_tokens": 120, "completion_tokens": 30,
                                "cached_tokens": 100,
                                "extra": {"reasoning_tokens": 8, "cache_creation_tokens": 20}}
    assert results[1]["extra"]["trajhub"]["basic_info"]["error"] == {"code": -1,
                                                                      "msg": "timed out"}
    delegation = document["steps"][2]
    assert delegation["llm_call_count"] == 0
    ref = delegation["observation"]["results"][0]["subagent_trajectory_ref"][0]
    (researcher,) = document["subagent_trajectories"]
    assert ref["trajectory_id"] == researcher["trajectory_id"] == "a1"
    assert researcher["agent"]["name"] == "researcher"
    assert document["final_metrics"]["total_prompt_tokens"] == 120 + 200  # its own steps


def test_a_document_from_another_producer_imports_as_the_run_it_describes() -> None:
    """A plain ATIF v1.8 document (no trajhub extras), as the RFC describes one."""
    document = {
        "schema_version": "ATIF-v1.8",
        "session_id": "run-42",
        "agent": {"name": "terminus", "version": "2.0", "model_name": "claude-sonnet-4"},
        "steps": [
            {"step_id": 1, "source": "user", "message": "List the files",
             "timestamp": "2026-11-20T10:00:00Z"},
            {"step_id": 2, "source": "agent", "message": "I'll run ls.",
             "timestamp": "2026-11-20T10:00:01Z",
             "tool_calls": [{"tool_call_id": "tc1", "function_name": "bash",
                             "arguments": {"cmd": "ls"}}],
             "observation": {"results": [{"source_call_id": "tc1", "content": "a.txt b.txt"}]},
             "metrics": {"prompt_tokens": 500, "completion_tokens": 40, "cached_tokens": 300}},
            {"step_id": 3, "source": "agent", "message": "There are two files.",
             "timestamp": "2026-11-20T10:00:03Z",
             "metrics": {"prompt_tokens": 560, "completion_tokens": 8}},
        ],
    }
    atif.Trajectory.model_validate(document)
    trajectory = reimported(document)
    assert [(a.name, [(s.type, s.name) for s in a.steps]) for a in trajectory.agent_steps] == [
        ("terminus", [("model", "chat claude-sonnet-4"), ("tool", "bash"),
                      ("model", "chat claude-sonnet-4")])]
    model, bash, _ = trajectory.agent_steps[0].steps
    assert model.model_info is not None
    assert (model.model_info.input_tokens, model.model_info.output_tokens,
            model.model_info.input_read_cached_tokens) == (500, 40, 300)
    assert (bash.tool_call_id, json.loads(bash.input), bash.output) == (
        "tc1", {"cmd": "ls"}, "a.txt b.txt")
    assert trajectory.root_step.metrics_info.input_tokens == 1060
    step_time = datetime(2026, 11, 20, 10, 0, 1, tzinfo=UTC)  # the step's timestamp
    assert model.basic_info.started_at == str(int(step_time.timestamp()) * 1000)


def test_feedback_that_answers_no_tool_call_is_no_tool_step() -> None:
    """ATIF observations also carry system events and environment feedback (no
    `source_call_id`): they are part of the conversation the next model call sees."""
    document = {
        "schema_version": "ATIF-v1.8",
        "agent": {"name": "terminus", "version": "2.0", "model_name": "m"},
        "steps": [
            {"step_id": 1, "source": "user", "message": "Fix the build"},
            {"step_id": 2, "source": "system", "message": "Environment ready",
             "observation": {"results": [{"content": "tests: 3 failing"}]}},
            {"step_id": 3, "source": "agent", "message": "Looking at the failures.",
             "metrics": {"prompt_tokens": 50, "completion_tokens": 5}},
        ],
    }
    atif.Trajectory.model_validate(document)
    trajectory = reimported(document)
    (agent,) = trajectory.agent_steps
    assert [(s.type, s.name) for s in agent.steps] == [("model", "chat m")]
    assert "tests: 3 failing" in agent.steps[0].input


def test_importing_the_same_document_twice_gives_the_same_trace() -> None:
    document = to_atif(stored(run()))
    first, _ = from_atif(document, START_NS)
    second, _ = from_atif(json.loads(json.dumps(document)), START_NS + 5)
    assert first == second and len(first) == 32


@pytest.mark.parametrize(("document", "says"), [
    ([], "JSON object"),
    ({"schema_version": "ATIF-v9.0", "agent": {}, "steps": [{}]}, "schema_version"),
    ({"schema_version": "ATIF-v1.8", "steps": [{"source": "user", "message": ""}]}, "agent"),
    ({"schema_version": "ATIF-v1.8", "agent": {"name": "a", "version": "1"}, "steps": []},
     "steps"),
    ({"schema_version": "ATIF-v1.8", "agent": {"name": "a", "version": "1"},
      "steps": [{"source": "robot", "message": ""}]}, "steps[0].source"),
])
def test_a_document_that_is_no_atif_trajectory_is_refused_saying_why(
        document: Any, says: str) -> None:
    with pytest.raises(AtifError, match=says.replace("[", r"\[").replace("]", r"\]")):
        from_atif(document, START_NS)
