"""trajectory_match: the agentevals modes and argument matchers exactly as docs/evaluators.md
§a3 states them, the graded score as trajectory_match's docstring defines it, and the three
levels."""

from __future__ import annotations

from typing import Any

import pytest

from tests.test_evaluators_support import agent, model, tool, trajectory, validate
from trajhub.evaluators import (
    ConfigError,
    Expectations,
    ExpectedStep,
    TrajectoryMatchConfig,
    evaluate,
)
from trajhub.evaluators.result import EvaluatorOutput
from trajhub.evaluators.trajectory_match import TrajectoryMatchReason, trajectory_match


def run(*calls: tuple[str, dict[str, Any]]) -> dict[str, Any]:
    """Sequential calls: each in its own model turn."""
    steps: list[dict[str, Any]] = []
    for name, args in calls:
        steps += [model(), tool(name, args)]
    return trajectory(agent("assistant", *steps, model("final")))


def ref(*calls: tuple[str, dict[str, Any] | None]) -> Expectations:
    return Expectations(trajectory=tuple(ExpectedStep("tool", n, a) for n, a in calls))


def match(doc: dict[str, Any], expected: Expectations, **options: Any) -> EvaluatorOutput:
    return trajectory_match(doc, expected, TrajectoryMatchConfig.from_dict(options))


def why(result: EvaluatorOutput) -> TrajectoryMatchReason:
    assert isinstance(result.reason, TrajectoryMatchReason)
    return result.reason


W = ("get_weather", {"city": "Paris"})
A = ("add", {"a": 2, "b": 3})
D = ("divide", {"a": 1, "b": 0})


# strict: same number of steps, same step at each position; any order within one message


def test_strict_pass_and_fail() -> None:
    doc = run(W, A)
    validate(doc)
    assert match(doc, ref(W, A), mode="strict").passed
    swapped = match(doc, ref(A, W), mode="strict")
    assert not swapped.passed
    assert swapped.score == 0.0  # no position holds the expected step
    extra = match(run(W, A, D), ref(W, A), mode="strict")
    assert not extra.passed
    assert extra.score == pytest.approx(2 / 3)  # matched / max(expected, actual)


def test_strict_allows_any_order_within_one_message() -> None:
    # one model turn issuing both calls (parallel tool calls: one assistant message)
    parallel = trajectory(agent("assistant", model(), tool(*A), tool(*W), model("final")))
    assert match(parallel, ref(W, A), mode="strict").passed
    # but not across messages
    assert not match(run(A, W), ref(W, A), mode="strict").passed


def test_strict_does_not_compare_message_content() -> None:
    doc = trajectory(agent("assistant", model("whatever text"), tool(*W), model("other text")))
    assert match(doc, ref(W), mode="strict").passed


# unordered: multiset equality by name plus args; roles ignored


def test_unordered_pass_and_fail() -> None:
    assert match(run(A, W), ref(W, A), mode="unordered").passed
    missing = match(run(W), ref(W, A), mode="unordered")
    assert not missing.passed
    assert [s.name for s in why(missing).missing] == ["add"]
    extra = match(run(W, A, D), ref(W, A), mode="unordered")
    assert not extra.passed
    assert [s.name for s in why(extra).extra] == ["divide"]
    # a multiset: the same call twice is not the same as once
    assert not match(run(W, W), ref(W), mode="unordered").passed


# superset: every reference call has a distinct matching output call; extras allowed


def test_superset_pass_and_fail() -> None:
    assert match(run(D, W, A), ref(W, A), mode="superset").passed
    assert not match(run(W), ref(W, A), mode="superset").passed
    # distinct: one output call cannot stand for two reference calls
    twice = match(run(W), ref(W, W), mode="superset")
    assert not twice.passed
    assert twice.score == 0.5  # matched / expected


# subset: every output call is in the reference; nothing beyond it


def test_subset_pass_and_fail() -> None:
    fewer = match(run(W), ref(W, A), mode="subset")
    assert fewer.passed
    assert why(fewer).missing_allowed
    beyond = match(run(W, D), ref(W, A), mode="subset")
    assert not beyond.passed
    assert beyond.score == 0.5  # matched / actual
    assert [s.name for s in why(beyond).extra] == ["divide"]


# in_order: expected steps as an ordered subsequence, extras allowed


def test_in_order_pass_and_fail() -> None:
    assert match(run(W, D, A), ref(W, A), mode="in_order").passed
    wrong = match(run(A, W), ref(W, A), mode="in_order")
    assert not wrong.passed
    assert wrong.score == 0.5  # longest in-order match / expected
    assert len(why(wrong).out_of_order) == 1
    assert not why(wrong).missing


# argument matchers: exact, ignore, subset (out ⊆ ref), superset (out ⊇ ref)


def test_args_exact_and_ignore() -> None:
    doc = run(("get_weather", {"city": "paris"}))
    assert not match(doc, ref(W), args_match="exact").passed
    result = match(doc, ref(W), args_match="ignore")
    assert result.passed


def test_args_subset_and_superset() -> None:
    fuller = ("get_weather", {"city": "Paris", "unit": "C"})
    # output args {city} ⊆ reference args {city, unit}
    assert match(run(W), ref(fuller), args_match="subset").passed
    assert not match(run(fuller), ref(W), args_match="subset").passed
    # output args {city, unit} ⊇ reference args {city}
    assert match(run(fuller), ref(W), args_match="superset").passed
    assert not match(run(W), ref(fuller), args_match="superset").passed


def test_args_mismatch_is_reported() -> None:
    result = match(run(("get_weather", {"city": "Rome"})), ref(W))
    assert [s.name for s in why(result).args_mismatch] == ["get_weather"]
    assert "called with other args" in result.explain()


def test_per_tool_overrides() -> None:
    doc = run(("get_weather", {"city": "Paris", "day": "mon"}), ("add", {"a": 2, "b": 4}))
    expected = ref(W, A)
    assert not match(doc, expected).passed
    # a mode per tool; `add` keeps the exact default and its args differ
    assert not match(doc, expected, args_match_overrides={"get_weather": "superset"}).passed
    overrides: dict[str, Any] = {"get_weather": "superset", "add": ["a"]}
    # a list of key paths: only `a` is compared
    assert match(doc, expected, args_match_overrides=overrides).passed
    # a callable (out_args, ref_args) -> bool
    overrides = {"get_weather": "ignore", "add": lambda out, ref: out["a"] == ref["a"]}
    assert match(doc, expected, args_match_overrides=overrides).passed


def test_nested_key_paths() -> None:
    doc = run(("search", {"q": {"text": "paris", "lang": "fr"}, "page": 2}))
    expected = ref(("search", {"q": {"text": "paris", "lang": "en"}, "page": 1}))
    assert match(doc, expected, args_match_overrides={"search": ["q.text"]}).passed
    assert not match(doc, expected, args_match_overrides={"search": ["q.lang"]}).passed


def test_per_step_matcher_and_unspecified_args() -> None:
    doc = run(("get_weather", {"city": "Paris", "day": "mon"}), A)
    expected = Expectations(
        trajectory=(
            ExpectedStep("tool", "get_weather", {"city": "Paris"}, args_match="superset"),
            ExpectedStep("tool", "add"),  # args not specified: any args match
        )
    )
    assert match(doc, expected).passed


def test_repeated_steps_listed_and_optionally_penalised() -> None:
    doc = run(W, W, A)
    allowed = match(doc, ref(W, A), mode="superset")
    assert allowed.passed
    assert [(r.name, r.count) for r in why(allowed).repeated] == [("get_weather", 2)]
    strict = match(doc, ref(W, A), mode="superset", allow_repeated=False)
    assert not strict.passed
    assert strict.score == pytest.approx(0.9)  # Mastra: 0.1 per repeated step


# levels


def test_agent_level() -> None:
    doc = trajectory(
        agent("supervisor", model(), {"id": "sub1", "type": "agent", "name": "researcher"}),
        agent("researcher", model(), tool(*W), id="sub1"),
    )
    validate(doc)
    expected = Expectations(
        trajectory=(ExpectedStep("agent", "supervisor"), ExpectedStep("agent", "researcher"))
    )
    assert match(doc, expected, level="agent").passed
    reversed_ = Expectations(trajectory=tuple(reversed(expected.trajectory or ())))
    assert not match(doc, reversed_, level="agent").passed
    assert match(doc, reversed_, level="agent", mode="unordered").passed


def test_graph_level_from_langgraph_node_metadata() -> None:
    doc = trajectory(
        agent(
            "LangGraph",
            model(node="agent"),
            tool("get_weather", metadata={"langgraph_node": "tools"}),
            model(node="agent"),
        )
    )
    nodes = ("agent", "tools", "agent")
    expected = Expectations(trajectory=tuple(ExpectedStep("graph", n) for n in nodes))
    assert match(doc, expected, level="graph").passed
    short = Expectations(trajectory=(ExpectedStep("graph", "agent"),))
    assert not match(doc, short, level="graph").passed
    assert match(doc, short, level="graph", mode="superset").passed


def test_tool_order_fallback_and_missing_reference() -> None:
    expected = Expectations(tool_order=("get_weather", "add"))
    assert match(run(W, A), expected).passed
    with pytest.raises(ValueError, match="no expected trajectory"):
        match(run(W), Expectations())


def test_config_validation_names_the_option() -> None:
    with pytest.raises(ConfigError, match="'mode'"):
        TrajectoryMatchConfig(mode="fuzzy")
    with pytest.raises(ConfigError, match="'trajectory_match_mode'"):
        TrajectoryMatchConfig.from_dict({"trajectory_match_mode": "strict"})
    with pytest.raises(ConfigError, match=r"args_match_overrides\.add"):
        TrajectoryMatchConfig.from_dict({"args_match_overrides": {"add": "fuzzy"}})


def test_empty_override_list_is_refused() -> None:
    # agentevals falls back to the default matcher for []; "compare no keys" would instead pass
    # any args. Neither is what an empty list says, so it is an error naming the option.
    with pytest.raises(ConfigError, match=r"args_match_overrides\.add.*empty list"):
        TrajectoryMatchConfig.from_dict({"args_match_overrides": {"add": []}})
    with pytest.raises(ConfigError, match=r"'args_match'.*empty list"):
        TrajectoryMatchConfig.from_dict({"args_match": []})


def test_json_forms_name_every_matcher_the_python_api_takes() -> None:
    doc = run(("search", {"q": {"text": "paris", "lang": "fr"}, "page": 2}))
    expected = ref(("search", {"q": {"text": "paris", "lang": "en"}, "page": 1}))
    # default matcher as key paths (JSON list), the same as a per-tool override
    assert evaluate("trajectory_match", doc, expected, {"args_match": ["q.text"]}).passed
    assert not evaluate("trajectory_match", doc, expected, {"args_match": ["page"]}).passed
    # a step's own matcher may be key paths too, in JSON
    stored = {"trajectory": [{"type": "tool", "name": "search",
                              "args": {"q": {"text": "paris"}}, "args_match": ["q.text"]}]}
    assert evaluate("trajectory_match", doc, stored).passed
    stored["trajectory"][0]["args_match"] = ["q.lang"]
    assert not evaluate("trajectory_match", doc, stored).passed


# turns: strict mode tells "x and y in one turn" from "x, then y"


def parallel(*calls: tuple[str, dict[str, Any]]) -> dict[str, Any]:
    """All calls issued together in one model turn."""
    return trajectory(agent("assistant", model(), *(tool(n, a) for n, a in calls), model("ok")))


def turns(*groups: tuple[tuple[str, dict[str, Any]], ...]) -> Expectations:
    return Expectations(
        trajectory=tuple(
            ExpectedStep("tool", name, args, turn=t)
            for t, group in enumerate(groups)
            for name, args in group
        )
    )


def test_strict_compares_turn_structure_when_the_expectation_has_turns() -> None:
    together = turns((W, A))
    one_by_one = turns((W,), (A,))
    assert match(parallel(W, A), together).passed
    assert match(parallel(A, W), together).passed  # any order within a turn
    assert match(run(W, A), one_by_one).passed
    split = match(run(W, A), together)
    assert not split.passed
    assert "turns differ: expected calls per turn [2], actual [1, 1]" in split.explain()
    assert why(split).expected_turns == (2,) and why(split).actual_turns == (1, 1)
    assert not match(parallel(W, A), one_by_one).passed
    # without turns the expectation is a flat list and both shapes meet it
    assert match(parallel(W, A), ref(W, A)).passed
    assert match(run(W, A), ref(W, A)).passed
    # other modes do not look at turns
    assert match(run(W, A), together, mode="unordered").passed


def test_registry_and_explain() -> None:
    result = evaluate(
        "trajectory_match",
        run(A, W),
        {"trajectory": [{"type": "tool", "name": "get_weather", "args": {"city": "Paris"}}]},
        {"mode": "in_order"},
    )
    assert result.passed
    assert "in_order match at tool level: 1 of 1 expected, 2 actual" in result.explain()
    assert result.to_dict()["reason"]["extra"][0]["name"] == "add"
