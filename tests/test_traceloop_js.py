"""Traceloop JS captures (`real-clients/traceloop_js/`) against the ground truth, as far as they go.

The captures are made as Traceloop documents it: `@traceloop/node-server-sdk`'s `initialize()`
and each run in `withWorkflow({name: <shape>}, ...)`. @traceloop/instrumentation-langchain 0.27.0
starts every span as a child of the active span, ignoring LangChain's parent run, so a run is ONE
trace whose spans all hang directly under the workflow span (tests/capture/README.md, "Known
gaps"). The SDK never ends the workflow span of a run that raised, so such a run's trace has no
root span: its outermost graph run is the root. Chains are named by class, never by agent or node,
and no span carries metadata: which agents ran and the agent each step belongs to are not in these
captures (so tests/test_normalize_multiagent.py checks only their root error), and trajhub makes
one agent step of the run's model and tool calls, in start order. What must come out right: the
tool calls of each activation in its order (name, call id, arguments, result or error), every
model call (its tokens, its answer with its tool calls, its failure), the failed steps, the
token totals and the run's error. Expected values come from the ground truth (written from the
script), never from trajhub.
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from tests.capture import script
from tests.normalize_support import REAL, capture_sets, load_traces
from trajhub.normalizers import derive
from trajhub.normalizers.trajectory import Step, Trajectory

CAPTURES = {
    name: files for name, files in capture_sets().items() if name.startswith("traceloop_js/")
}
GROUND_TRUTH = REAL / "ground_truth"
WORKFLOW_SCOPE = "@traceloop/node-server-sdk"


def _one_run(capture: str) -> bool:
    """A capture of one run; a shape of several runs on one thread (an interrupted run and its
    resume, one trace each) is checked run by run by tests/test_normalize_interrupts.py."""
    return capture.split("/")[1].split(".")[0] not in script.INTERRUPT_SHAPES


NAMES = sorted(filter(_one_run, CAPTURES))


def canonical(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def _shape(capture: str) -> str:
    return capture.split("/")[1].split(".")[0]


def _truth(capture: str) -> dict[str, Any]:
    return json.loads((GROUND_TRUTH / f"{_shape(capture)}.json").read_text())  # type: ignore[no-any-return]


def _want(truth: dict[str, Any], kind: str) -> list[dict[str, Any]]:
    return [s for a in truth["activations"] for s in a["steps"] if s["type"] == kind]


def _run(files: list[Path]) -> Trajectory:
    (spans,) = load_traces(files).values()
    return derive(spans).trajectory


def _steps(trajectory: Trajectory, kind: str) -> list[Step]:
    return [s for a in trajectory.agent_steps for s in a.steps if s.type == kind]


def test_every_shape_is_captured_in_both_modes() -> None:
    shapes = {p.stem for p in GROUND_TRUTH.glob("*.json")} - script.PYTHON_ONLY
    assert Counter(_shape(n) for n in CAPTURES) == {shape: 2 for shape in shapes}


@pytest.mark.parametrize("capture", NAMES)
def test_a_run_is_one_flat_trace_under_its_workflow_span(capture: str) -> None:
    """Every span hangs directly under the `withWorkflow` span; a run that raised lost that span
    (the SDK ends it only when the run resolves), so its spans all name one missing parent."""
    (spans,) = load_traces(CAPTURES[capture]).values()
    workflows = [s for s in spans if s.scope_name == WORKFLOW_SCOPE]
    parents = {s.parent_span_id for s in spans if s.scope_name != WORKFLOW_SCOPE}
    assert len(parents) == 1
    if _truth(capture)["root"]["error"] is None:
        (workflow,) = workflows
        assert workflow.name == f"{_shape(capture)}.workflow"
        assert workflow.attributes["traceloop.span.kind"] == "workflow"
        assert workflow.attributes["traceloop.workflow.name"] == _shape(capture)
        assert parents == {workflow.span_id}
    else:
        assert workflows == []


@pytest.mark.parametrize("capture", NAMES)
def test_the_run_is_one_agent_step_of_its_model_and_tool_calls(capture: str) -> None:
    """The known gap: no agents (a flat trace without metadata), one step per call."""
    truth = _truth(capture)
    trajectory = _run(CAPTURES[capture])
    (agent,) = trajectory.agent_steps
    assert Counter(s.type for s in agent.steps) == Counter(
        s["type"] for a in truth["activations"] for s in a["steps"] if s["type"] != "agent"
    )


def _in_order(calls: list[tuple[int | None, str]]) -> list[tuple[str, ...]]:
    """Call ids (of (parallel group, call id) pairs) in order, each run of one parallel group as
    one sorted tuple (its calls may run in any order)."""
    out: list[tuple[str, ...]] = []
    last: int | None = None
    for group, call in calls:
        if group is not None and group == last:
            out[-1] = tuple(sorted((*out[-1], call)))
        else:
            out.append((call,))
        last = group
    return out


@pytest.mark.parametrize("capture", NAMES)
def test_tool_sequence(capture: str) -> None:
    """Each activation's tool calls come in its order (calls of one parallel group in any order
    among themselves), with their names and arguments."""
    truth = _truth(capture)
    tools = _steps(_run(CAPTURES[capture]), "tool")
    assert sorted(t.metadata["tool_call_id"] for t in tools) == sorted(
        s["tool_call_id"] for s in _want(truth, "tool")
    )
    for activation in truth["activations"]:
        want = [s for s in activation["steps"] if s["type"] == "tool"]
        group = {s["tool_call_id"]: s["parallel_group"] for s in want}
        got = [t for t in tools if t.metadata["tool_call_id"] in group]
        assert _in_order([(group[t.metadata["tool_call_id"]], t.metadata["tool_call_id"])
                          for t in got]) == _in_order(
            [(s["parallel_group"], s["tool_call_id"]) for s in want]), activation["agent"]
        for step in got:
            (expected,) = [s for s in want if s["tool_call_id"] == step.metadata["tool_call_id"]]
            assert step.name == expected["name"]
            assert step.input == canonical(expected["arguments"])
            if expected["error"] is None and expected["handoff_to"] is None:
                # the JS twin's tool, where it answers other text than the Python one
                assert step.output == expected.get("output_js", expected["output"])


@pytest.mark.parametrize("capture", NAMES)
def test_failed_steps(capture: str) -> None:
    truth = _truth(capture)
    trajectory = _run(CAPTURES[capture])
    failed = Counter(
        (s.type, s.name if s.type == "tool" else "")
        for a in trajectory.agent_steps for s in a.steps
        if s.type in ("model", "tool") and s.failed
    )
    assert failed == Counter(
        (s["type"], s.get("name", "") if s["type"] == "tool" else "")
        for a in truth["activations"] for s in a["steps"] if s.get("error")
    )
    for step in _steps(trajectory, "tool"):
        if step.failed:
            (want,) = [s for s in _want(truth, "tool")
                       if s["tool_call_id"] == step.metadata["tool_call_id"]]
            assert step.basic_info.error is not None
            assert want["error"]["message"] in step.basic_info.error.msg


@pytest.mark.parametrize("capture", NAMES)
def test_token_totals(capture: str) -> None:
    """The run's totals, and each model call's (Traceloop JS records no token details)."""
    truth = _truth(capture)
    trajectory = _run(CAPTURES[capture])
    root = trajectory.root_step.metrics_info
    assert (root.input_tokens, root.output_tokens) == (
        truth["root"]["input_tokens"], truth["root"]["output_tokens"])
    models = _steps(trajectory, "model")
    assert Counter(
        (m.model_info.input_tokens, m.model_info.output_tokens) for m in models if m.model_info
    ) == Counter((s["input_tokens"], s["output_tokens"]) for s in _want(truth, "model"))


@pytest.mark.parametrize("capture", NAMES)
def test_model_answers(capture: str) -> None:
    """Each model call's answer, with the tool calls it asked for (recorded not on the model span
    but on the output of the chain run around it), and its failure."""
    truth = _truth(capture)
    models = _steps(_run(CAPTURES[capture]), "model")
    want = _want(truth, "model")
    assert Counter(m.failed for m in models) == Counter(s["error"] is not None for s in want)

    def message(step: dict[str, Any]) -> str:
        body: dict[str, Any] = {"content": step["content"], "role": "assistant"}
        if step["tool_calls"]:
            body["tool_calls"] = step["tool_calls"]
        return canonical(body)

    assert Counter(m.output for m in models if not m.failed) == Counter(
        message(s) for s in want if s["error"] is None
    )


@pytest.mark.parametrize("capture", NAMES)
def test_root_error(capture: str) -> None:
    truth = _truth(capture)
    error = _run(CAPTURES[capture]).root_step.basic_info.error
    if truth["root"]["error"] is None:
        assert error is None
    else:
        assert error is not None and truth["root"]["error"]["message"] in error.msg


@pytest.mark.parametrize("capture", NAMES)
def test_the_run_reads_its_question_and_answer(capture: str) -> None:
    """The root's input and output are the graph run's (the workflow span records the wrapped
    function's arguments, none, and the resolved state in the SDK's own serialisation)."""
    truth = _truth(capture)
    root = _run(CAPTURES[capture]).root_step
    assert truth["user_request"] in root.input
    if truth["root"]["error"] is None:
        assert json.loads(root.output) == {"content": truth["final_answer"], "role": "assistant"}


@pytest.mark.parametrize("capture", [n for n in NAMES if n.split("/")[1].startswith("tool_retry.")])
def test_a_bare_run_gives_one_trajectory_per_span(capture: str) -> None:
    """Without `withWorkflow` (no active span) the instrumentation starts every span without a
    parent, each a trace of its own (the earlier captures): the same spans, unlinked, give one
    trajectory each, and a tool span still names its tool from the ToolMessage it returned."""
    (spans,) = load_traces(CAPTURES[capture]).values()
    bare = [
        replace(s, trace_id=f"{i:032x}", parent_span_id="")
        for i, s in enumerate(s for s in spans if s.scope_name != WORKFLOW_SCOPE)
    ]
    runs = [derive([s]).trajectory for s in bare]
    assert len(runs) == len(bare)
    tools = [r.root_step for r in runs if r.root_step.metadata.get("span_type") == "task"]
    truth = _want(_truth(capture), "tool")
    assert sorted(t.name for t in tools if t.basic_info.error is None) == sorted(
        s["name"] for s in truth if s["error"] is None)
