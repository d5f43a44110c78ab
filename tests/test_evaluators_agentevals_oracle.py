"""trajectory_match against the real agentevals, scoring trajhub's own export.

The same case is scored twice: by trajhub's evaluator, with the expectation pre-filled from the
reference run (`expectations_from_trajectory`, turns included), and by agentevals'
`create_trajectory_match_evaluator` on `to_agentevals_messages` of both runs. The verdicts must
agree, over fixed cases and over generated trajectories.

The generated runs stay within what both sides score the same way by design (README, "Differences
from agentevals and Mastra"): exact and ignore argument matchers (subset/superset pair first-fit
in agentevals and best-fit here), every model turn but the last calls tools (agentevals also
counts plain assistant messages, trajhub's expected trajectory lists no model steps), and every
call has a result (a tool message is only emitted for one).
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from agentevals.trajectory.match import create_trajectory_match_evaluator
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.test_evaluators_support import agent, model, tool, trajectory
from trajhub.evaluators import (
    TrajectoryMatchConfig,
    evaluate,
    expectations_from_trajectory,
    to_agentevals_messages,
)

MODES = ("strict", "unordered", "subset", "superset")
#: One call: (tool name, args, result). A turn: the calls one model step issued together.
Call = tuple[str, dict[str, Any], str]
Turns = list[list[Call]]


def run(turns: Turns) -> dict[str, Any]:
    steps: list[dict[str, Any]] = []
    for calls in turns:
        steps.append(model())
        steps += [tool(name, args, output=result) for name, args, result in calls]
    return trajectory(agent("assistant", *steps, model("final answer")))


def verdicts(actual: dict[str, Any], reference: dict[str, Any], mode: str,
             args_match: str = "exact") -> tuple[bool, bool]:
    ours = evaluate(
        "trajectory_match", actual, expectations_from_trajectory(reference),
        TrajectoryMatchConfig(mode=mode, args_match=args_match),
    ).passed
    oracle = create_trajectory_match_evaluator(
        trajectory_match_mode=mode,  # type: ignore[arg-type]
        tool_args_match_mode=args_match,  # type: ignore[arg-type]
    )
    theirs = oracle(outputs=to_agentevals_messages(actual),
                    reference_outputs=to_agentevals_messages(reference))["score"]
    assert isinstance(theirs, bool)
    return ours, theirs


W: Call = ("get_weather", {"city": "Paris"}, "sunny")
W2: Call = ("get_weather", {"city": "Rome"}, "rain")
A: Call = ("add", {"a": 2, "b": 3}, "5")
S: Call = ("search", {"q": "museums"}, "Louvre")

FIXED: list[tuple[str, Turns, Turns]] = [
    ("same run", [[W], [A]], [[W], [A]]),
    ("parallel vs one by one", [[W, A]], [[W], [A]]),
    ("one by one vs parallel", [[W], [A]], [[W, A]]),
    ("parallel in another order", [[A, W]], [[W, A]]),
    ("swapped turns", [[A], [W]], [[W], [A]]),
    ("extra call", [[W], [A], [S]], [[W], [A]]),
    ("missing call", [[W]], [[W], [A]]),
    ("other args", [[W2], [A]], [[W], [A]]),
    ("repeated call", [[W], [W]], [[W]]),
    ("same calls, other grouping", [[W, A], [S]], [[W], [A, S]]),
    ("no calls on either side", [], []),
    ("calls vs none", [[W]], []),
]


@pytest.mark.parametrize("args_match", ["exact", "ignore"])
@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize(("case", "actual", "reference"), FIXED, ids=[c[0] for c in FIXED])
def test_fixed_cases_agree(case: str, actual: Turns, reference: Turns, mode: str,
                           args_match: str) -> None:
    ours, theirs = verdicts(run(actual), run(reference), mode, args_match)
    assert ours == theirs, f"{case}: trajhub {ours}, agentevals {theirs}"


def test_calls_without_results_agree_when_both_runs_lack_them() -> None:
    # no tool message on either side; the structure agentevals compares is still the same
    silent = [[("notify", {"to": "ops"}, ""), A]]
    for mode in MODES:
        assert verdicts(run(silent), run(silent), mode) == (True, True)
        ours, theirs = verdicts(run([[A]]), run(silent), mode)
        assert ours == theirs


_calls = st.tuples(
    st.sampled_from(["get_weather", "add", "search"]),
    st.fixed_dictionaries({"x": st.integers(0, 1)}),
    st.sampled_from(["ok", "done"]),
)
_turns = st.lists(st.lists(_calls, min_size=1, max_size=3), max_size=4)


@pytest.mark.slow  # a Hypothesis fuzzer
@settings(max_examples=150, deadline=None)
@given(actual=_turns, reference=_turns, mode=st.sampled_from(MODES),
       args_match=st.sampled_from(["exact", "ignore"]))
def test_generated_trajectories_agree(actual: Turns, reference: Turns, mode: str,
                                      args_match: str) -> None:
    ours, theirs = verdicts(run(actual), run(reference), mode, args_match)
    assert ours == theirs


@pytest.mark.slow  # a Hypothesis fuzzer
@settings(max_examples=60, deadline=None)
@given(reference=_turns, mode=st.sampled_from(MODES))
def test_a_run_meets_its_own_prefilled_expectation_in_both(reference: Turns, mode: str) -> None:
    assert verdicts(run(reference), run(reference), mode) == (True, True)


# The deliberate differences the README lists, shown against agentevals itself.


def oracle(actual: Turns, reference: Turns, mode: str, args_match: str,
           overrides: dict[str, Any] | None = None) -> bool:
    evaluator = create_trajectory_match_evaluator(
        trajectory_match_mode=mode,  # type: ignore[arg-type]
        tool_args_match_mode=args_match,  # type: ignore[arg-type]
        tool_args_match_overrides=overrides,
    )
    score = evaluator(outputs=to_agentevals_messages(run(actual)),
                      reference_outputs=to_agentevals_messages(run(reference)))["score"]
    assert isinstance(score, bool)
    return score


def ours(actual: Turns, reference: Turns, mode: str, args_match: str,
         overrides: dict[str, Any] | None = None) -> bool:
    config = TrajectoryMatchConfig(mode=mode, args_match=args_match,
                                   args_match_overrides=overrides or {})
    return evaluate("trajectory_match", run(actual), expectations_from_trajectory(run(reference)),
                    config).passed


def test_difference_best_pairing_rather_than_first_match() -> None:
    # actual ⊇ expected per call: {a,b} could serve either expected call, {a} only the first
    actual = [[("add", {"a": 1, "b": 2}, "3")], [("add", {"a": 1}, "1")]]
    reference = [[("add", {"a": 1}, "1")], [("add", {"a": 1, "b": 2}, "3")]]
    assert oracle(actual, reference, "superset", "superset") is False  # first fit took {a,b}
    assert ours(actual, reference, "superset", "superset") is True


def test_difference_matcher_direction_in_unordered_mode() -> None:
    actual = [[("add", {"a": 1}, "1")]]
    reference = [[("add", {"a": 1, "b": 2}, "3")]]
    # subset: the actual args are a subset of the expected ones; agentevals also tries the
    # reverse in unordered mode, which fails
    assert oracle(actual, reference, "unordered", "subset") is False
    assert ours(actual, reference, "unordered", "subset") is True


def test_difference_missing_key_versus_null() -> None:
    actual = [[("convert", {"value": 3}, "3")]]
    reference = [[("convert", {"value": 3, "unit": None}, "3")]]
    overrides: dict[str, Any] = {"convert": ["value", "unit"]}
    assert oracle(actual, reference, "strict", "exact", overrides) is True  # absent == None
    assert ours(actual, reference, "strict", "exact", overrides) is False


# The same scripted run, captured through every instrumentation


def _react_exports() -> dict[str, list[dict[str, Any]]]:
    from tests.normalize_support import capture_sets, load_traces
    from trajhub.normalizers import derive

    exports = {}
    for capture, files in sorted(capture_sets().items()):
        if "/react." in capture and capture.endswith("/http"):
            spans = max(load_traces(files).values(), key=len)
            exports[capture] = to_agentevals_messages(json.loads(derive(spans).to_json()))
    return exports


def test_every_instrumentation_exports_the_scripted_run_alike() -> None:
    # tests/fake_agent.py's react script: the user's question; a model turn calling get_weather
    # and add together; their two results; a turn calling divide(1, 0); its error; the answer
    exports = _react_exports()
    assert {c.split("/")[0] for c in exports} >= {
        "openinference", "traceloop", "langsmith", "cozeloop_python", "cozeloop_js"}
    for capture, messages in exports.items():
        assert [m["role"] for m in messages] == [
            "user", "assistant", "tool", "tool", "assistant", "tool", "assistant"], capture
        turns = [sorted(c["function"]["name"] for c in m["tool_calls"])
                 for m in messages if m.get("tool_calls")]
        assert turns == [["add", "get_weather"], ["divide"]], capture
    # and agentevals itself finds them strictly equal, whichever is the reference (arguments
    # ignored: OpenInference records get_weather's input as the bare "Paris")
    strict = create_trajectory_match_evaluator(trajectory_match_mode="strict",
                                               tool_args_match_mode="ignore")
    first, *others = exports.values()
    for messages in others:
        assert strict(outputs=messages, reference_outputs=first)["score"] is True
