"""graph_trajectory_match: node steps per graph run, checked against agentevals' own extraction
of the same LangGraph run (`extract_langgraph_trajectory_from_thread`) and its strict matcher."""

from __future__ import annotations

import json
import warnings
from typing import Any

import pytest
from agentevals.graph_trajectory.strict import graph_trajectory_strict_match
from agentevals.graph_trajectory.utils import extract_langgraph_trajectory_from_thread
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.normalize_support import capture_sets, load_traces
from tests.test_evaluators_support import agent, model, tool, trajectory
from trajhub.evaluators import (
    ConfigError,
    GraphTrajectoryMatchConfig,
    evaluate,
    expectations_from_trajectory,
    graph_runs,
    parse_trajectory,
)
from trajhub.normalizers import derive

CAPTURES = capture_sets()
#: instrumentations that record LangGraph node metadata on model and tool spans
NODE_METADATA = ("openinference", "traceloop", "langsmith")


def agentevals_truth(flavour: str) -> list[list[str]]:
    """The scripted ReAct run of the captures, run again here with a checkpointer, and read by
    agentevals from the thread's checkpoints."""
    from langgraph.checkpoint.memory import InMemorySaver

    from tests.fake_agent import THREAD_ID, build_graph, run_graph

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        graph = build_graph("react", flavour)
        graph.checkpointer = InMemorySaver()
        run_graph(graph, stream=False)
        extracted = extract_langgraph_trajectory_from_thread(
            graph, {"configurable": {"thread_id": THREAD_ID}}
        )
    steps: list[list[str]] = extracted["outputs"]["steps"]
    return steps


@pytest.fixture(scope="module")
def truth() -> dict[str, list[list[str]]]:
    return {flavour: agentevals_truth(flavour) for flavour in ("manual", "prebuilt")}


def captured(capture: str, *, with_task_ids: bool) -> dict[str, Any]:
    spans = max(load_traces(CAPTURES[capture]).values(), key=len)
    doc: dict[str, Any] = json.loads(derive(spans).to_json())
    steps = [step for entry in doc["agent_steps"] for step in entry["steps"]]
    if with_task_ids:
        # the normalizers keep each step's task id (`langgraph_checkpoint_ns`), which tells
        # parallel tasks of one node apart
        assert any("langgraph_checkpoint_ns" in s.get("metadata", {}) for s in steps), capture
    else:
        for step in steps:
            step.get("metadata", {}).pop("langgraph_checkpoint_ns", None)
    return doc


REACT = sorted(c for c in CAPTURES if c.split("/")[0] in NODE_METADATA and "/react." in c)


@pytest.mark.parametrize("capture", REACT)
def test_captured_runs_match_agentevals_reading_the_same_run(
    capture: str, truth: dict[str, list[list[str]]]
) -> None:
    flavour = "manual" if ".manual." in capture else "prebuilt"
    expected = truth[flavour]
    doc = captured(capture, with_task_ids=True)
    runs = graph_runs(parse_trajectory(doc))
    assert runs == expected
    assert graph_trajectory_strict_match(
        outputs={"inputs": None, "results": [], "steps": runs},
        reference_outputs={"inputs": None, "results": [], "steps": expected},
    )["score"] is True
    assert evaluate("graph_trajectory_match", doc, {"graph_runs": expected}).passed
    # pre-filled expectations record the runs
    assert expectations_from_trajectory(doc).graph_runs == tuple(map(tuple, expected))


@pytest.mark.parametrize("capture", [c for c in REACT if ".manual." in c])
def test_without_task_ids_one_task_per_node_still_matches(
    capture: str, truth: dict[str, list[list[str]]]
) -> None:
    # the hand-built graph runs one `tools` task per super-step, so node + step counter suffice
    doc = captured(capture, with_task_ids=False)
    assert graph_runs(parse_trajectory(doc)) == truth["manual"]


def test_capture_without_node_metadata_is_an_error_not_a_failure() -> None:
    capture = next(c for c in sorted(CAPTURES) if c.startswith("cozeloop_python/react."))
    doc = captured(capture, with_task_ids=False)
    with pytest.raises(ValueError, match="no LangGraph node steps"):
        evaluate("graph_trajectory_match", doc, {"graph_runs": [["__start__", "agent"]]})


def node(name: str, counter: int, *, ns: str | None = None, out: str = "") -> dict[str, Any]:
    step = model(out)
    step["metadata"] = {"langgraph_node": name, "langgraph_step": str(counter)}
    if ns is not None:
        step["metadata"]["langgraph_checkpoint_ns"] = ns
    return step


def test_interrupt_resume_and_several_runs() -> None:
    interrupted = trajectory(
        agent("LangGraph", node("agent", 1), node("human_review", 2)),
        output=json.dumps({"messages": [], "__interrupt__": [{"value": "approve?"}]}),
    )
    assert graph_runs(parse_trajectory(interrupted)) == [
        ["__start__", "agent", "human_review", "__interrupt__"]
    ]
    resumed = trajectory(
        agent("LangGraph", node("human_review", 2), node("agent", 3)),
        input=json.dumps({"resume": "yes"}),
    )
    assert graph_runs(parse_trajectory(resumed)) == [["human_review", "agent"]]
    failed_with_interrupt = trajectory(
        agent("LangGraph", node("agent", 1),
              tool("ask", metadata={"langgraph_node": "tools", "langgraph_step": "2"},
                   output="", error=(-1, "GraphInterrupt((Interrupt(value='ok?'),))"))),
    )
    assert graph_runs(parse_trajectory(failed_with_interrupt)) == [
        ["__start__", "agent", "tools", "__interrupt__"]
    ]
    # the step counter starting over: a second invocation in the same trace
    twice = trajectory(
        agent("LangGraph", node("agent", 1), node("tools", 2), node("agent", 1), node("tools", 2))
    )
    assert graph_runs(parse_trajectory(twice)) == [
        ["__start__", "agent", "tools"], ["__start__", "agent", "tools"]
    ]


def test_subgraph_nodes_are_prefixed_with_their_parent_node() -> None:
    by_namespace = trajectory(
        agent("LangGraph", node("supervisor", 1, ns="supervisor:1"),
              node("agent", 1, ns="researcher:2|agent:3"),
              node("tools", 2, ns="researcher:2|tools:4"),
              node("supervisor", 3, ns="supervisor:5")),
    )
    assert graph_runs(parse_trajectory(by_namespace)) == [
        ["__start__", "supervisor", "researcher:agent", "researcher:tools", "supervisor"]
    ]
    by_entry = trajectory(
        agent("LangGraph", node("supervisor", 1), {"id": "sub", "type": "agent", "name": "r"},
              node("supervisor", 3)),
        agent("researcher", node("agent", 1), id="sub"),
    )
    assert graph_runs(parse_trajectory(by_entry)) == [
        ["__start__", "supervisor", "researcher:agent", "supervisor"]
    ]


def test_modes_and_scores() -> None:
    doc = trajectory(agent("LangGraph", node("agent", 1), node("tools", 2), node("agent", 3)))
    exact = {"graph_runs": [["__start__", "agent", "tools", "agent"]]}
    assert evaluate("graph_trajectory_match", doc, exact).score == 1.0
    shorter = {"graph_runs": [["__start__", "agent"]]}
    strict = evaluate("graph_trajectory_match", doc, shorter)
    assert not strict.passed and strict.score == pytest.approx(2 / 4)
    assert "unexpected tools, agent" in strict.explain()
    superset = evaluate("graph_trajectory_match", doc, shorter, {"mode": "superset"})
    assert superset.passed and superset.score == 1.0
    missing = {"graph_runs": [["__start__", "agent", "summarize"]]}
    lacking = evaluate("graph_trajectory_match", doc, missing, {"mode": "superset"})
    assert not lacking.passed and lacking.score == pytest.approx(2 / 3)
    assert "missing summarize" in lacking.explain()
    two_runs = {"graph_runs": [["__start__", "agent"], ["__start__", "agent"]]}
    assert not evaluate("graph_trajectory_match", doc, two_runs, {"mode": "superset"}).passed
    with pytest.raises(ConfigError, match="'mode'"):
        GraphTrajectoryMatchConfig.from_dict({"mode": "unordered"})
    with pytest.raises(ValueError, match="graph_runs"):
        evaluate("graph_trajectory_match", doc, {})


_runs = st.lists(
    # two steps at least: a run is told from the next by its step counter going back
    st.lists(st.sampled_from(["agent", "tools", "review"]), min_size=2, max_size=4),
    min_size=1, max_size=3,
)


def _doc(runs: list[list[str]]) -> dict[str, Any]:
    # each run restarts the step counter, so each is its own invocation
    steps = [node(name, i + 1, ns=f"{name}:{r}.{i}") for r, run in enumerate(runs)
             for i, name in enumerate(run)]
    return trajectory(agent("LangGraph", *steps))


@pytest.mark.slow  # a Hypothesis fuzzer
@settings(max_examples=100, deadline=None)
@given(actual=_runs, expected=_runs)
def test_strict_verdict_agrees_with_agentevals(actual: list[list[str]],
                                               expected: list[list[str]]) -> None:
    reference = [["__start__", *run] for run in expected]
    doc = _doc(actual)
    ours = evaluate("graph_trajectory_match", doc, {"graph_runs": reference}).passed
    theirs = graph_trajectory_strict_match(
        outputs={"inputs": None, "results": [], "steps": graph_runs(parse_trajectory(doc))},
        reference_outputs={"inputs": None, "results": [], "steps": reference},
    )["score"]
    assert ours is theirs
