"""Traceloop JS captures (`real-clients/traceloop_js/`) against the ground truth, as far as they go.

@traceloop/instrumentation-langchain 0.27.0 starts every span without a parent (its callback
handler calls `tracer.startSpan` outside any active context), so one run arrives as many one-span
traces, and it names chains by class (`CompiledStateGraph`, `RunnableSequence`), never by agent
or node (tests/capture/README.md, "Known gaps"). The agents of a run and the agent each step
belongs to are therefore not in these captures, and tests/test_normalize_multiagent.py leaves
them out. What each span does carry must still come out right: every tool call of the script
(name, call id, arguments, result or error) and every model call (one each, its answer's text,
its failure), and the run's error on the outermost graph run. Expected values come from the
ground truth (written from the script), never from trajhub.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from tests.normalize_support import REAL, capture_sets, load_traces
from trajhub.normalizers import derive
from trajhub.normalizers.trajectory import Trajectory

CAPTURES = {
    name: files for name, files in capture_sets().items() if name.startswith("traceloop_js/")
}
GROUND_TRUTH = REAL / "ground_truth"


def canonical(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def _truth(capture: str) -> dict[str, Any]:
    shape = capture.split("/")[1].split(".")[0]
    return json.loads((GROUND_TRUTH / f"{shape}.json").read_text())  # type: ignore[no-any-return]


def _steps(truth: dict[str, Any], kind: str) -> list[dict[str, Any]]:
    return [s for a in truth["activations"] for s in a["steps"] if s["type"] == kind]


def _runs(files: list[Path]) -> list[Trajectory]:
    """The trajectory of every trace of the capture, in start order."""
    traces = sorted(load_traces(files).values(), key=lambda spans: min(s.start_ns for s in spans))
    return [derive(spans).trajectory for spans in traces]


def _is_model(run: Trajectory) -> bool:
    return run.root_step.metadata.get("span_type") == "chat"


def _is_tool(run: Trajectory) -> bool:
    return run.root_step.metadata.get("span_type") == "task"


NAMES = sorted(CAPTURES)


def test_every_shape_is_captured() -> None:
    shapes = {p.stem for p in GROUND_TRUTH.glob("*.json")}
    assert {n.split("/")[1].split(".")[0] for n in NAMES} == shapes


@pytest.mark.parametrize("capture", NAMES)
def test_every_trace_is_one_span(capture: str) -> None:
    """Why these captures cannot be compared with the ground truth's agents."""
    traces = load_traces(CAPTURES[capture])
    assert len(traces) > 1 and all(len(spans) == 1 for spans in traces.values())


@pytest.mark.parametrize("capture", NAMES)
def test_tool_calls_are_the_scripts(capture: str) -> None:
    truth = _truth(capture)
    tools = [r.root_step for r in _runs(CAPTURES[capture]) if _is_tool(r)]
    want = _steps(truth, "tool")
    assert len(tools) == len(want)
    succeeded = {t.metadata.get("tool_call_id"): t for t in tools if t.basic_info.error is None}
    failed = [t for t in tools if t.basic_info.error is not None]
    for step in want:
        if step["error"] is not None:
            continue
        tool = succeeded[step["tool_call_id"]]
        assert tool.name == step["name"]
        assert tool.input == canonical(step["arguments"])
        if step["handoff_to"] is None:
            assert tool.output == step["output"]
    # a failed call returns no ToolMessage: its name and call id are nowhere in its span
    want_failed = [s for s in want if s["error"] is not None]
    assert sorted(t.input for t in failed) == sorted(canonical(s["arguments"]) for s in want_failed)
    for step in want_failed:
        assert any(
            step["error"]["message"] in (t.basic_info.error.msg if t.basic_info.error else "")
            for t in failed
        )


@pytest.mark.parametrize("capture", NAMES)
def test_model_calls_are_the_scripts(capture: str) -> None:
    """One model call per scripted turn, with its text (Traceloop JS records no tool calls in a
    model's output) and its failure."""
    truth = _truth(capture)
    models = [r.root_step for r in _runs(CAPTURES[capture]) if _is_model(r)]
    want = _steps(truth, "model")
    assert len(models) == len(want)
    assert Counter(m.basic_info.error is not None for m in models) == Counter(
        s.get("error") is not None for s in want
    )
    answered = Counter(m.output for m in models if m.basic_info.error is None)
    assert answered == Counter(
        canonical({"content": s["content"], "role": "assistant"})
        for s in want
        if s.get("error") is None
    )


@pytest.mark.parametrize("capture", NAMES)
def test_root_error(capture: str) -> None:
    """The outermost graph run (the first trace) carries the run's error, and only then."""
    truth = _truth(capture)
    outer = _runs(CAPTURES[capture])[0].root_step
    assert outer.name == "CompiledStateGraph"
    error = outer.basic_info.error
    if truth["root"]["error"] is None:
        assert error is None
    else:
        assert error is not None and truth["root"]["error"]["message"] in error.msg
