"""Spans written to mirror the product spec's trajectory.example.json give its structure.

The root session span and the agent and tools are OpenInference spans; the model calls are OTel
GenAI spans (so the example's first-token latencies can be expressed, in seconds): one trace may
mix conventions. Metrics are derived by hand from these spans, not copied from the example, whose
numbers are illustrative (its model durations sum to 3100, not 3200; its tokens to 650/260).

The example nests `agent_steps` inside `root_step`; the schema (normative) puts it at the top.
"""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any

import jsonschema

from tests.normalize_spans import span
from tests.normalize_support import FIXTURES
from trajhub.normalizers import derive, trajectory_to_dict
from trajhub.normalizers.model import Span

EXAMPLE = json.loads((FIXTURES / "spec" / "trajectory.example.json").read_text())
SCHEMA = json.loads((FIXTURES / "spec" / "trajectory.schema.json").read_text())
T0 = 1715400000000  # ms


def _oi(kind: str, input_text: str, output_text: str, **extra: Any) -> dict[str, Any]:
    return {
        "openinference.span.kind": kind,
        "input.value": input_text,
        "output.value": output_text,
        **extra,
    }


def example_spans() -> list[Span]:
    root = EXAMPLE["root_step"]
    agent = root["agent_steps"][0]
    out = [
        span(
            root["id"],
            "",
            root["name"],
            T0,
            T0 + 4500,
            _oi("CHAIN", root["input"], root["output"]),
            trace_id=EXAMPLE["id"],
        ),
        span(
            agent["id"],
            root["id"],
            agent["name"],
            T0 + 100,
            T0 + 4500,
            _oi("AGENT", agent["input"], agent["output"]),
            trace_id=EXAMPLE["id"],
        ),
    ]
    for step in agent["steps"]:
        start = int(step["basic_info"]["started_at"])
        end = start + int(step["basic_info"]["duration"])
        if step["type"] == "model":
            info = step["model_info"]
            attrs: dict[str, Any] = {
                "gen_ai.operation.name": "chat",
                "gen_ai.request.model": "gpt-4o",
                "gen_ai.provider.name": "openai",
                "gen_ai.input.messages": step["input"],
                "gen_ai.output.messages": step["output"],
                "gen_ai.usage.input_tokens": info["input_tokens"],
                "gen_ai.usage.output_tokens": info["output_tokens"],
                "gen_ai.usage.reasoning.output_tokens": info["reasoning_tokens"],
                # seconds on the wire, milliseconds in the trajectory
                "gen_ai.response.time_to_first_chunk": int(info["latency_first_resp"]) / 1000,
            }
        else:
            attrs = _oi("TOOL", step["input"], step["output"], **{"tool.name": step["name"]})
        # a tool step is named after the tool (tool.name), not after its span
        name = step["name"] if step["type"] == "model" else f"run {step['name']}"
        out.append(span(step["id"], agent["id"], name, start, end, attrs, trace_id=EXAMPLE["id"]))
    return out


def test_example_structure() -> None:
    derivation = derive(example_spans())
    got = trajectory_to_dict(derivation.trajectory)
    jsonschema.validate(got, SCHEMA)
    want_root = EXAMPLE["root_step"]
    want_agent = want_root["agent_steps"][0]

    assert got["id"] == EXAMPLE["id"]
    for key in ("id", "name", "input", "output", "basic_info"):
        assert got["root_step"][key] == want_root[key], key
    # the root session span is not an agent step: it owns no model/tool step itself
    assert len(got["agent_steps"]) == 1
    agent = got["agent_steps"][0]
    for key in ("id", "parent_id", "name", "input", "output", "basic_info"):
        assert agent[key] == want_agent[key], key
    assert len(agent["steps"]) == len(want_agent["steps"])
    for mine, theirs in zip(agent["steps"], want_agent["steps"], strict=True):
        for key in ("id", "parent_id", "type", "name", "output", "basic_info"):
            assert mine[key] == theirs[key], (theirs["id"], key)
        if theirs["type"] == "tool":
            # docs/trajectory-rules.md §8: a tool's input is the canonical JSON of its
            # arguments (keys sorted, no spaces); the example, older than that rule, spaces them
            arguments = json.loads(theirs["input"])
            canonical = json.dumps(
                arguments, sort_keys=True, separators=(",", ":"), ensure_ascii=False
            )
            assert mine["input"] == canonical
        else:
            assert mine["input"] == theirs["input"]
        if theirs["type"] == "model":
            assert mine["model_info"] == theirs["model_info"]
        else:
            assert "model_info" not in mine

    # metrics by hand: model steps 400 + 600 + 2100 ms, tools 500 + 800 ms,
    # tokens 100+200+350 / 50+60+150, 2 tools of 5 calls, no errors
    expected = {
        "llm_duration": "3100",
        "tool_duration": "1300",
        "tool_errors": {},
        "tool_error_rate": 0.0,
        "model_errors": {},
        "model_error_rate": 0.0,
        "tool_step_proportion": 0.4,
        "input_tokens": 650,
        "output_tokens": 260,
    }
    assert agent["metrics_info"] == expected
    assert got["root_step"]["metrics_info"] == expected
    first = agent["steps"][0]
    assert first["metadata"]["model_name"] == "gpt-4o"
    assert first["metadata"]["convention"] == "genai"
    assert agent["metadata"]["convention"] == "openinference"
    summary = derivation.summary
    assert summary.agent_names == ["TravelPlannerAgent"]
    assert summary.tool_names == ["search_tool", "weather_tool"]
    assert summary.conventions == ["genai", "openinference"]
    assert (summary.start_ns, summary.duration_ms) == (T0 * 1_000_000, 4500)
    assert summary.step_count == 5 and not summary.has_error
    # explanation in (start, end, id) order: step_001 starts with the agent but ends first
    assert [e.span_id for e in derivation.explanation][:3] == [
        "span_root_001",
        "span_step_001",
        "span_agent_001",
    ]
    assert [e.kind for e in derivation.explanation] == [
        "root",
        "model",
        "agent",
        "tool",
        "model",
        "tool",
        "model",
    ]


def test_example_with_a_failed_tool_and_model() -> None:
    spans = example_spans()
    failed = []
    for s in spans:
        if s.span_id == "span_step_002":  # tool: exception event, no status
            s = replace(s, status_code=2, status_message="ValueError('bad city')")
        if s.span_id == "span_step_003":  # model: provider HTTP code
            attributes = {**s.attributes, "error.type": "429", "http.response.status_code": 429}
            s = replace(s, attributes=attributes, status_code=2, status_message="rate limited")
        failed.append(s)
    got = trajectory_to_dict(derive(failed).trajectory)
    metrics = got["agent_steps"][0]["metrics_info"]
    assert metrics["tool_errors"] == {"-1": ["span_step_002"]}
    assert metrics["model_errors"] == {"429": ["span_step_003"]}
    assert metrics["tool_error_rate"] == 0.5
    assert metrics["model_error_rate"] == 0.3333333333
    steps = {s["id"]: s for s in got["agent_steps"][0]["steps"]}
    assert steps["span_step_002"]["basic_info"]["error"] == {
        "code": -1,
        "msg": "ValueError('bad city')",
    }
    assert steps["span_step_003"]["basic_info"]["error"]["code"] == 429
    assert "error" not in steps["span_step_001"]["basic_info"]
