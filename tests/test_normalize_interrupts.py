"""Interrupted runs (docs/trajectory-rules.md, "Interrupted runs") under every Python
instrumentation, against the ground truth of `interrupt_resume`
(real-clients/ground_truth/interrupt_resume.json, written from the script, never from trajhub).

Each capture holds two runs of one thread, one trace each: the first ends at the tool's
`interrupt()`, the second resumes it with `Command(resume=...)`. The first must be interrupted,
not failed (no failed step, no root error, `has_error` false), and name the tool that called
`interrupt()` and its payload; the second must take the resume value as its input and succeed.
Both must have the steps of the ground truth.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.capture import script
from tests.normalize_support import REAL, capture_sets, load_traces
from trajhub.normalizers import derive
from trajhub.normalizers.builder import Derivation
from trajhub.normalizers.document import run_order
from trajhub.normalizers.interrupts import INTERRUPTED, NODE, OUTCOME, PAYLOAD
from trajhub.normalizers.run_context import run_context

SHAPE = "interrupt_resume"
TRUTH: dict[str, Any] = json.loads((REAL / "ground_truth" / f"{SHAPE}.json").read_text())
CAPTURES = {name: files for name, files in capture_sets().items()
            if name.split("/")[1].split(".")[0] == SHAPE}
#: clients that do not record a run's input when it is a `Command` (the official OTel GenAI
#: LangChain instrumentation records only the messages it finds in the input): the resumed
#: run's input is missing, not wrong (tests/capture/README.md, "Known gaps")
NO_COMMAND_INPUT = frozenset({"otel_genai", "otel_genai_span_and_event"})
#: clients that record the thread id (gen_ai.conversation.id, or cozeloop Python's `thread_id`
#: tag, the one the application gives it as in the conversation captures) but not the
#: metadata's session id, so the thread names the session (docs/conventions.md, "Which id is
#: the session")
THREAD_ONLY = frozenset({"otel_genai", "otel_genai_span_and_event", "cozeloop_python"})


def _runs(name: str) -> list[Derivation]:
    """The capture's runs in start order; a trace with no step (Traceloop's trace of the graph's
    construction) is no run."""
    traces = load_traces(CAPTURES[name])
    ordered = sorted(traces.values(), key=lambda spans: min(s.start_ns for s in spans))
    return [d for spans in ordered if (d := derive(spans)).summary.step_count]


def _steps(derivation: Derivation) -> list[tuple[str, str]]:
    """(type, name) of the run's model and tool steps, in order; model steps by type only."""
    placed = run_order(derivation.trajectory).steps
    return [(p.step.type, "" if p.step.type == "model" else p.step.name) for p in placed]


def test_every_python_client_captured_the_shape_in_both_modes() -> None:
    clients = {name.split("/")[0] for name in CAPTURES}
    assert {"openinference", "openinference_genai", "traceloop", "langsmith", "otel_genai",
            "cozeloop_python"} <= clients
    assert len(CAPTURES) == 2 * len(clients)


@pytest.mark.parametrize("name", sorted(CAPTURES))
def test_two_runs_the_first_interrupted_the_second_resumed(name: str) -> None:
    client = name.split("/")[0]
    first_truth, second_truth = TRUTH["runs"]
    runs = _runs(name)
    assert len(runs) == 2 and runs[0].trajectory.id != runs[1].trajectory.id
    first, second = runs

    root = first.trajectory.root_step
    assert root.metadata[OUTCOME] == INTERRUPTED
    assert root.metadata[NODE] == first_truth["interrupt"]["node"]
    assert json.loads(root.metadata[PAYLOAD]) == first_truth["interrupt"]["payload"]
    assert root.basic_info.error is None and not first.summary.has_error
    assert json.loads(root.input)[-1]["content"] == first_truth["input"]

    assert OUTCOME not in second.trajectory.root_step.metadata
    assert not second.summary.has_error
    if client not in NO_COMMAND_INPUT:
        assert second.trajectory.root_step.input == second_truth["input"]
    assert json.loads(second.trajectory.root_step.output)["content"] == \
        second_truth["final_answer"]

    for run, truth in ((first, first_truth), (second, second_truth)):
        expected = [(s["type"], "" if s["type"] == "model" else s["name"])
                    for s in truth["steps"]]
        assert _steps(run) == expected, name
        assert run.summary.failed_tool_steps == run.summary.failed_model_steps == 0


@pytest.mark.parametrize("name", sorted(CAPTURES))
def test_the_resumed_run_is_a_turn_of_the_interrupted_runs_session(name: str) -> None:
    """Both runs carry the thread's session id (the script's metadata `session_id`, or its
    `thread_id` where only that is recorded), so the resumed run is the session's next turn."""
    client = name.split("/")[0]
    traces = load_traces(CAPTURES[name])
    ordered = sorted(traces.values(), key=lambda spans: min(s.start_ns for s in spans))
    sessions = [run_context(spans).session_id for spans in ordered
                if derive(spans).summary.step_count]
    expected = script.THREAD_ID if client in THREAD_ONLY else script.SESSION_ID
    assert sessions == [expected, expected]


def test_the_ground_truth_is_the_script() -> None:
    first, second = TRUTH["runs"]
    assert first["interrupt"]["payload"] == script.INTERRUPT_PAYLOAD
    assert second["input"] == script.RESUME_VALUE


def test_langgraph_js_interrupt_messages_are_read_and_nothing_else() -> None:
    """LangGraph.js's GraphInterrupt message is its interrupts as pretty JSON: alone (Coze Loop
    JS) or again after `GraphInterrupt: ` with the stack (OpenInference JS); a tool's own JSON
    list of another form is no interrupt."""
    from trajhub.normalizers.interrupts import is_interrupt, js_interrupts

    recorded = json.dumps([{"id": "i1", "value": script.INTERRUPT_PAYLOAD}], indent=2)
    assert js_interrupts(recorded) == [{"id": "i1", "value": script.INTERRUPT_PAYLOAD}]
    with_stack = f"{recorded}\n\nGraphInterrupt: {recorded}\n    at interrupt (interrupt.js:93:8)"
    assert js_interrupts(with_stack) is not None and is_interrupt(with_stack)
    assert js_interrupts("[") is None and not is_interrupt("[")
    assert js_interrupts(json.dumps([{"value": 1, "score": 2}])) is None
    assert js_interrupts(json.dumps([])) is None
