"""Payloads in the canonical forms (docs/trajectory-rules.md §8), alike under every instrumentation.

The invariance test runs over EVERY capture in tests/fixtures (real-clients and eino), grouped by
the run they recorded; expected values come from the scripted model's script
(tests/fake_agent.py `react_script`, `USER_QUESTION`, the tools' bodies), never from trajhub.
"""

from __future__ import annotations

import json
import re
from collections import defaultdict
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.capture import script
from tests.normalize_support import capture_sets, load_traces
from trajhub.normalizers import derive, trajectory_to_dict
from trajhub.normalizers.payloads import (
    chat_message,
    model_input,
    model_output,
    state_input,
    state_output,
    tool_output,
)
from trajhub.normalizers.trajectory import Trajectory

CAPTURES = capture_sets()
#: instrumentations of another runtime: the same script, but a different program (LangGraph.js)
JS_CLIENTS = frozenset({"cozeloop_js", "openinference_js", "traceloop_js"})
#: clients whose trace of a run is flat (Traceloop JS: every step a child of the workflow span,
#: so one agent step holds every agent's steps) and whose model inputs carry no tool calls nor
#: tool-call ids (tests/capture/README.md "Known gaps"): their positions are not the others';
#: test_traceloop_js.py checks their payloads against the ground truth instead
FLAT = frozenset({"traceloop_js"})

# --- the scripted run (tests/fake_agent.py) -----------------------------------------------------
SYSTEM = {"content": "You are a helpful assistant. Use tools.", "role": "system"}
USER = {"content": "What's the weather in Paris, what is 2+3, and what is 1/0?", "role": "user"}
TURN_1 = {
    "content": "Let me look up the weather and do the math.",
    "role": "assistant",
    "tool_calls": [
        {"arguments": {"city": "Paris"}, "id": "call_weather_1", "name": "get_weather"},
        {"arguments": {"a": 2, "b": 3}, "id": "call_add_1", "name": "add"},
    ],
}
TURN_2 = {
    "content": "Now the division.",
    "role": "assistant",
    "tool_calls": [{"arguments": {"a": 1, "b": 0}, "id": "call_div_1", "name": "divide"}],
}
FINAL = {
    "content": "It is sunny and 22C in Paris. 2 + 3 = 5. 1/0 is undefined (division by zero).",
    "role": "assistant",
}
TOOL_RESULTS = {"get_weather": "Sunny, 22C in Paris", "add": "5"}
TOOL_ARGUMENTS = {
    "get_weather": {"city": "Paris"},
    "add": {"a": 2, "b": 3},
    "divide": {"a": 1, "b": 0},
}


#: ids the frameworks draw at random in each run (langgraph-supervisor's transfer-back messages):
#: each instrumentation recorded a run of its own, so these differ between captures of one shape
RANDOM_ID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")


def canonical(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def _run(files: list[Path]) -> Trajectory:
    traces = load_traces(files)
    if any(shape in str(files[0]) for shape in script.INTERRUPT_SHAPES):
        # two runs of one thread, of about the same size: compare the interrupted one (the
        # resumed one is compared in tests/test_normalize_interrupts.py)
        interrupted = [t for spans in traces.values() if (t := derive(spans).trajectory)
                       .root_step.metadata.get("outcome") == "interrupted"]
        return interrupted[0]
    spans = max(traces.values(), key=lambda s: (len(s), s[0].trace_id))
    return derive(spans).trajectory


def _groups() -> dict[str, dict[str, Trajectory]]:
    """run → {capture name: trajectory}. A run is a capture directory name (e.g.
    `react.prebuilt.stream`, or an Eino capture); JS captures form runs of their own."""
    groups: dict[str, dict[str, Trajectory]] = defaultdict(dict)
    for name, files in CAPTURES.items():
        parts = name.split("/")
        if parts[0] == "coze-loop-examples" or parts[0] in FLAT:
            continue  # each example is a different run
        if parts[0] == "eino-real":
            # one shape's runs under both callbacks play the same script
            run = f"eino-real/{parts[1]}"
        else:
            runtime = "js" if parts[0] in JS_CLIENTS else "python"
            run = f"{runtime}/{parts[1]}"
        groups[run][name] = _run(files)
    return dict(groups)


GROUPS = _groups()


def _payloads(trajectory: Trajectory) -> Iterator[tuple[tuple[Any, ...], str]]:
    """(position, payload) for every payload an instrumentation recorded in full. Positions are
    agent index and step type with its occurrence; tools by name and call id (parallel calls may
    run in any order)."""
    document = trajectory_to_dict(trajectory)

    def recorded(key: tuple[Any, ...], step: dict[str, Any]) -> Iterator[tuple[Any, ...]]:
        meta = step.get("metadata", {})
        if meta.get("payload_truncated") == "true":
            return
        missing = meta.get("payload_missing", "").split(",")
        for field in ("input", "output"):
            if field not in missing:
                yield (*key, field), RANDOM_ID.sub("<uuid>", step[field])

    yield from recorded(("root",), document["root_step"])
    for index, agent in enumerate(document["agent_steps"]):
        yield from recorded((index, "agent"), agent)
        seen: dict[tuple[str, str], int] = defaultdict(int)
        for step in agent["steps"]:
            kind = (step["type"], "" if step["type"] == "model" else step["name"])
            occurrence = step["metadata"].get("tool_call_id") or seen[kind]
            yield from recorded((index, *kind, occurrence), step)
            seen[kind] += 1


def _by_position(trajectories: dict[str, Trajectory]) -> dict[tuple[Any, ...], dict[str, str]]:
    found: dict[tuple[Any, ...], dict[str, str]] = defaultdict(dict)
    for name, trajectory in trajectories.items():
        for key, value in _payloads(trajectory):
            found[key][name] = value
    return found


@pytest.mark.parametrize("run", sorted(r for r in GROUPS if len(GROUPS[r]) > 1))
def test_same_run_gives_byte_identical_payloads(run: str) -> None:
    trajectories = GROUPS[run]
    # more than one instrumentation (or transport) recorded this run
    assert len({name.split("/")[0] + name.split("/")[-1] for name in trajectories}) > 1
    compared = 0
    for position, values in _by_position(trajectories).items():
        distinct = set(values.values())
        assert len(distinct) == 1, (position, values)
        compared += len(values) > 1
    assert compared > 0


#: shapes whose JS library is not a port of the Python one in what it writes: deepagents.js has
#: its own prompts and tool answers, @langchain/mcp-adapters.js its own form of a tool's result
#: and error. Their JS runs are compared with the ground truth (`output_js`) by
#: tests/test_normalize_multiagent.py, and JS client with JS client above.
OWN_JS_TEXTS = frozenset({"deep_agent", "mcp_tools"})


def _js_runs() -> list[str]:
    return sorted(r.removeprefix("js/") for r in GROUPS
                  if r.startswith("js/") and r.split("/")[1].split(".")[0] not in OWN_JS_TEXTS)


def test_every_capture_is_compared() -> None:
    """No capture escapes the invariance tests: each run was recorded at least twice, or it is a
    JS run of a script that Python instrumentations recorded too."""
    lonely = sorted(
        run
        for run, trajectories in GROUPS.items()
        if len(trajectories) < 2
        and not (run.startswith("js/") and f"python/{run.removeprefix('js/')}" in GROUPS)
    )
    assert lonely == []


@pytest.mark.parametrize("run", _js_runs())
def test_js_and_python_runs_differ_only_in_the_runtime_error_text(run: str) -> None:
    """LangGraph.js runs the same script; only the text of an exception a tool raised is the
    runtime's own (`Error: ZeroDivisionError: division by zero` against Python's
    `Error: ZeroDivisionError('float division by zero')`), where the ToolNode feeds it back to
    the model as the failed call's tool message."""
    python = _by_position(GROUPS[f"python/{run}"])
    js = _by_position(GROUPS[f"js/{run}"])
    assert js and set(js) <= set(python)
    for position, values in js.items():
        theirs = next(iter(python[position].values()))
        mine = next(iter(values.values()))
        if mine == theirs:
            continue
        mine_messages, their_messages = json.loads(mine), json.loads(theirs)
        differing = [(m, t) for m, t in zip(mine_messages, their_messages, strict=True) if m != t]
        assert differing, position
        for m, t in differing:
            assert m["role"] == t["role"] == "tool", position
            assert m["content"].startswith("Error: ") and t["content"].startswith("Error: ")
            assert {k: v for k, v in m.items() if k != "content"} == {
                k: v for k, v in t.items() if k != "content"
            }


def _react_runs() -> list[str]:
    return sorted(
        name
        for name in CAPTURES
        if name.split("/")[1:2] and name.split("/")[1].startswith("react.")
    )


@pytest.mark.parametrize("capture", _react_runs())
def test_react_payloads_are_the_scripts(capture: str) -> None:
    trajectory = _run(CAPTURES[capture])
    root = trajectory.root_step
    assert root.input == canonical([USER])
    assert root.output == canonical(FINAL)
    agent = trajectory.agent_steps[0]
    assert (agent.input, agent.output) == (root.input, root.output)
    models = [s for s in agent.steps if s.type == "model"]
    assert [s.output for s in models] == [canonical(TURN_1), canonical(TURN_2), canonical(FINAL)]
    # the first call sees the system prompt and the question; later ones the whole history
    assert models[0].input == canonical([SYSTEM, USER])
    history = json.loads(models[2].input)
    assert history[:3] == [SYSTEM, USER, TURN_1]
    tool_messages = [m for m in history if m["role"] == "tool"]
    assert [(m["name"], m["tool_call_id"]) for m in tool_messages] == [
        ("get_weather", "call_weather_1"),
        ("add", "call_add_1"),
        ("divide", "call_div_1"),
    ]
    assert [m["content"] for m in tool_messages[:2]] == [
        TOOL_RESULTS["get_weather"],
        TOOL_RESULTS["add"],
    ]
    for step in agent.steps:
        if step.type != "tool":
            continue
        assert step.input == canonical(TOOL_ARGUMENTS[step.name])
        if step.name == "divide":  # raised: no result, and the step says so
            assert step.output == "" and step.metadata["payload_missing"] == "output"
        else:
            assert step.output == TOOL_RESULTS[step.name]
            assert "payload_missing" not in step.metadata


@pytest.mark.parametrize(
    "capture", sorted(n for n in CAPTURES if n.split("/")[1:2] == ["model_error.prebuilt.stream"])
)
def test_failed_run_marks_its_missing_output(capture: str) -> None:
    trajectory = _run(CAPTURES[capture])
    root = trajectory.root_step
    assert root.input == canonical([USER])
    assert root.output == "" and root.metadata["payload_missing"] == "output"


def test_apmplus_marks_the_messages_it_skipped() -> None:
    """apmplus drops messages without content (the assistant turn that only calls tools): the
    second model call's input is incomplete and says so."""
    trajectory = _run(CAPTURES["eino-real/react_tools/apmplus"])
    models = [s for s in trajectory.agent_steps[0].steps if s.type == "model"]
    assert "payload_truncated" not in models[0].metadata
    assert models[1].metadata["payload_truncated"] == "true"


# --- the forms, one by one ----------------------------------------------------------------------


@pytest.mark.parametrize(
    "raw",
    [
        {"role": "human", "content": "hi"},
        {"type": "human", "data": {"content": "hi", "type": "human", "id": "x"}},
        {
            "lc": 1,
            "type": "constructor",
            "id": ["langchain", "schema", "messages", "HumanMessage"],
            "kwargs": {"content": "hi", "id": "human-1"},
        },
        {"content": "hi", "type": "human", "name": None},
        {"role": "user", "parts": [{"type": "text", "content": "hi"}]},
        {"role": "user", "content": [{"type": "text", "text": "hi"}]},
    ],
)
def test_every_user_message_form_is_one_message(raw: dict[str, Any]) -> None:
    assert chat_message(raw) == {"role": "user", "content": "hi"}


def test_multi_part_content_is_kept_as_parts() -> None:
    image = {"type": "image_url", "image_url": {"url": "data:x"}}
    message = chat_message({"role": "user", "content": [{"type": "text", "text": "see"}, image]})
    assert message == {"role": "user", "content": [{"type": "text", "text": "see"}, image]}


def test_model_output_forms() -> None:
    call = {"id": "c1", "type": "function", "function": {"name": "f", "arguments": '{"x": 1}'}}
    expected = canonical(
        {
            "content": "",
            "role": "assistant",
            "tool_calls": [{"arguments": {"x": 1}, "id": "c1", "name": "f"}],
        }
    )
    openai = {
        "choices": [{"message": {"role": "assistant", "content": None, "tool_calls": [call]}}]
    }
    langsmith = {
        "generations": [
            [
                {
                    "message": {
                        "lc": 1,
                        "type": "constructor",
                        "id": ["langchain", "schema", "messages", "AIMessage"],
                        "kwargs": {
                            "content": "",
                            "tool_calls": [{"name": "f", "args": {"x": 1}, "id": "c1"}],
                        },
                    }
                }
            ]
        ]
    }
    genai = [
        {
            "role": "assistant",
            "parts": [{"type": "tool_call", "id": "c1", "name": "f", "arguments": {"x": 1}}],
        }
    ]
    for raw in (openai, langsmith, genai):
        assert model_output(json.dumps(raw)) == expected


def test_model_input_takes_the_messages_only() -> None:
    raw = {"messages": [{"role": "user", "content": "q"}], "tools": [{"type": "function"}]}
    assert model_input(json.dumps(raw)) == canonical([{"role": "user", "content": "q"}])
    batched = {"messages": [[{"content": "q", "type": "human"}]]}  # LangSmith
    assert model_input(json.dumps(batched)) == canonical([{"role": "user", "content": "q"}])


def test_tool_output_unwraps_tool_messages_but_keeps_json_results() -> None:
    message = {"content": "5", "type": "tool", "tool_call_id": "c", "name": "add"}
    assert tool_output(json.dumps({"output": message})) == "5"
    assert tool_output(json.dumps({"type": "tool", "data": message})) == "5"
    result = '{"city": "Paris", "temp": 22}'  # JSON a tool returned stays exactly as it is
    assert tool_output(result) == result
    assert tool_output("plain text") == "plain text"


def test_state_payloads() -> None:
    state = {"messages": [{"role": "user", "content": "q"}, {"role": "assistant", "content": "a"}]}
    assert state_input(json.dumps({"inputs": state, "tags": []})) == canonical(
        [{"role": "user", "content": "q"}, {"role": "assistant", "content": "a"}]
    )
    assert state_output(json.dumps({"outputs": state})) == canonical(
        {"role": "assistant", "content": "a"}
    )
    # not chat-shaped: the object itself, canonical
    assert state_input('{"b": 1, "a": [1, 2]}') == '{"a":[1,2],"b":1}'
    assert state_output("just text") == "just text"


def test_returned_tool_errors_are_read_from_the_tool_message_status() -> None:
    """docs/trajectory-rules.md §4: a ToolMessage with status "error" (bare, in OpenInference's
    `data` form, in LangChain's `lc` form inside a callback's `{"output": ...}` envelope) is a
    returned error with its text; any other output, and a bare text, is not."""
    from trajhub.normalizers.payloads import returned_error

    blocks = [{"type": "text", "text": "Error executing tool x: boom", "id": "lc_1"}]
    bare = {"type": "tool", "content": "Error: boom", "tool_call_id": "c1", "status": "error"}
    data = {"type": "tool", "data": {"content": blocks, "type": "tool", "status": "error"}}
    lc = {"output": {"lc": 1, "type": "constructor", "id": ["langchain", "ToolMessage"],
                     "kwargs": {"content": "Error: boom", "type": "tool", "status": "error"}},
          "kwargs": {}}
    assert returned_error(json.dumps(bare)) == "Error: boom"
    assert returned_error(json.dumps(data)) == "Error executing tool x: boom"
    assert returned_error(json.dumps(lc)) == "Error: boom"
    assert returned_error(json.dumps({**bare, "status": "success"})) is None
    assert returned_error("Error: boom") is None
    assert returned_error(json.dumps({"output": "Error: boom"})) is None


def test_a_single_text_block_result_is_its_text() -> None:
    """langchain-mcp-adapters returns a tool's result as content blocks; however recorded (the
    blocks' JSON, inside a ToolMessage, inside cozeloop's repr), one text block is its text."""
    blocks = [{"type": "text", "text": "Sunny", "id": "lc_1"}]
    assert tool_output(json.dumps(blocks)) == "Sunny"
    assert tool_output(json.dumps({"type": "tool", "content": blocks})) == "Sunny"
    two = [*blocks, {"type": "image", "url": "u"}]
    assert tool_output(json.dumps(two)) == json.dumps(two)  # not a text result: as recorded
    assert tool_output(json.dumps(["a"])) == json.dumps(["a"])  # a tool's own JSON list
    message = chat_message({"role": "tool", "content": json.dumps(blocks)})
    assert message == {"role": "tool", "content": "Sunny"}
    repr_ = str({"content": blocks, "artifact": {"structured_content": {"result": "Sunny"}}})
    assert chat_message({"role": "tool", "content": repr_}) == {"role": "tool", "content": "Sunny"}
