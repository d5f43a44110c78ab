"""The one reader of stored trajectory documents (normalizers.document): its tolerance rules as
its module doc states them, its execution order, and that every projection reads the same values
from the same document."""

from __future__ import annotations

import math
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.normalize_support import capture_sets, load_traces
from trajhub.evaluators.pricing import Prices, price_table, run_cost
from trajhub.evaluators.trajectory_view import parse_trajectory
from trajhub.normalizers import derive, trajectory_to_dict
from trajhub.normalizers.document import execution_order, parse_document, run_order
from trajhub.normalizers.item_fields import item_fields
from trajhub.normalizers.playback import run_duration_ms, step_events
from trajhub.normalizers.trajectory import StepError


def _doc(step: dict[str, Any], **root: Any) -> dict[str, Any]:
    return {"id": "t1", "root_step": {"name": "run", **root},
            "agent_steps": [{"id": "a1", "name": "agent", "steps": [step]}]}


def _only_step(doc: dict[str, Any]) -> Any:
    return parse_document(doc).agent_steps[0].steps[0]


@pytest.mark.parametrize("document", [None, 3, "text", [], {"root_step": 5},
                                      {"agent_steps": "no"}, {"agent_steps": [None, 1, "x"]}])
def test_a_document_that_is_not_one_reads_as_an_empty_trajectory(document: Any) -> None:
    trajectory = parse_document(document)
    assert trajectory.id == ""
    assert trajectory.root_step.name == ""
    assert trajectory.agent_steps == []


def test_agent_steps_inside_root_step_are_read_when_the_top_level_has_none() -> None:
    doc = {"id": "t", "root_step": {"agent_steps": [{"id": "a", "name": "inner", "steps": []}]}}
    assert [a.name for a in parse_document(doc).agent_steps] == ["inner"]


# (stored value of basic_info.started_at, what started_at_ms gives)
TIME_CASES: list[tuple[Any, int | None]] = [
    ("1700000000123", 1700000000123),
    (1700000000123, 1700000000123),
    ("12.0", 12),
    (12.0, 12),
    ("12.7", 12),  # the whole part: a fraction of a millisecond is excess precision
    (12.7, 12),
    ("", None),
    (None, None),
    ("soon", None),
    (True, None),  # bool is not a number
    (math.nan, None),
    (math.inf, None),
    ([12], None),
]


@pytest.mark.parametrize(("stored", "expected"), TIME_CASES)
def test_times_read_as_whole_milliseconds_or_unknown(stored: Any, expected: int | None) -> None:
    step = _only_step(_doc({"type": "tool", "basic_info": {"started_at": stored,
                                                           "duration": stored}}))
    assert step.started_at_ms == expected
    assert step.duration_ms == expected
    # kept as the schema's whole-millisecond text, "" when unknown
    assert step.basic_info.started_at == ("" if expected is None else str(expected))


# (stored model_info.input_tokens, what the reader gives: unknown is 0)
TOKEN_CASES: list[tuple[Any, int]] = [
    (5, 5), ("5", 5), ("5.0", 5), (5.9, 5), ("many", 0), (None, 0), (False, 0), (math.nan, 0),
]


@pytest.mark.parametrize(("stored", "expected"), TOKEN_CASES)
def test_token_counts_read_as_whole_numbers_and_unknown_is_zero(stored: Any,
                                                                expected: int) -> None:
    step = _only_step(_doc({"type": "model", "model_info": {
        "input_tokens": stored, "output_tokens": stored, "reasoning_tokens": stored,
        "input_read_cached_tokens": stored, "input_creation_cached_tokens": stored}}))
    info = step.model_info
    assert info is not None
    assert (info.input_tokens, info.output_tokens, info.reasoning_tokens,
            info.input_read_cached_tokens, info.input_creation_cached_tokens) == (expected,) * 5


def test_a_step_without_model_info_has_none() -> None:
    assert _only_step(_doc({"type": "model", "model_info": "n/a"})).model_info is None


@pytest.mark.parametrize(("error", "expected"), [
    ({"code": 3, "msg": "boom"}, StepError(3, "boom")),
    ({"code": "3", "msg": "boom"}, StepError(3, "boom")),
    ({"code": "E_TIMEOUT", "msg": "boom"}, StepError(-1, "boom")),  # not a number: unknown
    ({"msg": "boom"}, StepError(-1, "boom")),
    ({"code": 3}, StepError(3, "")),
    ({}, StepError(-1, "")),
    ("failed", None),  # not an object: no error recorded
    (None, None),
])
def test_errors_read_with_unknown_code_minus_one(error: Any,
                                                 expected: StepError | None) -> None:
    step = _only_step(_doc({"type": "tool", "basic_info": {"error": error}}))
    assert step.error == expected
    assert step.failed is (expected is not None)


def test_strings_and_metadata_values_read_as_text() -> None:
    step = _only_step(_doc({"type": "Tool", "id": 7, "name": None, "input": {"q": 1},
                            "metadata": {"retry": True, "n": 2, "model_name": "m",
                                         "tool_call_id": "call_1", "none": None}}))
    assert step.type == "tool"  # types read in lower case
    assert (step.id, step.name, step.input) == ("7", "", '{"q": 1}')
    assert step.metadata == {"retry": "true", "n": "2", "model_name": "m",
                             "tool_call_id": "call_1", "none": ""}
    assert (step.model, step.tool_call_id) == ("m", "call_1")


def test_entries_and_steps_that_are_not_objects_are_skipped() -> None:
    doc = {"agent_steps": [7, {"id": "a", "name": "x", "steps": ["s", None,
                                                                {"id": "s1", "type": "tool"}]}]}
    trajectory = parse_document(doc)
    assert [a.id for a in trajectory.agent_steps] == ["a"]
    assert [s.id for s in trajectory.agent_steps[0].steps] == ["s1"]


def _captured_documents() -> list[dict[str, Any]]:
    docs = []
    for _, files in sorted(capture_sets().items()):
        for _, spans in sorted(load_traces(files).items()):
            docs.append(trajectory_to_dict(derive(spans).trajectory))
    return docs


def test_reading_a_written_document_gives_back_what_was_written() -> None:
    """The reader is the writer's inverse on every captured run: one model, written and read."""
    docs = _captured_documents()
    assert docs
    for doc in docs:
        assert trajectory_to_dict(parse_document(doc)) == doc


def test_a_nested_activation_runs_right_after_the_step_that_started_it() -> None:
    doc = {"agent_steps": [
        {"id": "root", "name": "supervisor", "steps": [
            {"id": "m1", "type": "model"}, {"id": "sub", "type": "agent", "name": "researcher"},
            {"id": "m2", "type": "model"}]},
        {"id": "lone", "name": "other", "steps": [{"id": "t9", "type": "tool"}]},
        {"id": "sub", "name": "researcher", "steps": [{"id": "t1", "type": "tool"}]},
    ]}
    order = run_order(parse_document(doc))
    assert [a.id for a in order.agents] == ["root", "sub", "lone"]
    assert [(p.step.id, p.agent.id, p.agent_path) for p in order.steps] == [
        ("m1", "root", ("supervisor",)),
        ("sub", "root", ("supervisor",)),
        ("t1", "sub", ("supervisor", "researcher")),
        ("m2", "root", ("supervisor",)),
        ("t9", "lone", ("other",)),
    ]


def test_every_step_is_placed_once_even_in_a_cycle_or_with_shared_ids() -> None:
    doc = {"agent_steps": [
        {"id": "a", "name": "A", "steps": [{"id": "b", "type": "agent"}]},
        {"id": "b", "name": "B", "steps": [{"id": "a", "type": "agent"}]},
        {"id": "b", "name": "B again", "steps": [{"id": "x", "type": "tool"}]},
    ]}
    placed = execution_order(parse_document(doc))
    assert sorted(p.step.id for p in placed) == ["a", "b", "x"]
    # the step with id "b" starts the first activation with that id, so "B again" is started by
    # no step and runs first; A and B start each other and come after it, in stored order
    assert [p.agent.name for p in placed] == ["B again", "A", "B"]


def test_playback_evaluators_cost_and_item_fields_read_the_same_odd_values() -> None:
    """"12.0" was 0 in playback and 12 in the evaluators' view; every projection now reads 12,
    and a float token count keeps its whole part in both."""
    doc = {"id": "t1", "root_step": {"name": "run", "input": "hi", "output": "bye",
                                     "basic_info": {"started_at": "1000", "duration": "12.0"}},
           "agent_steps": [{"id": "a1", "name": "agent", "steps": [
               {"id": "m", "type": "model", "metadata": {"model_name": "gpt-4o"},
                "basic_info": {"started_at": "1000.0", "duration": "12.0"},
                "model_info": {"input_tokens": "1000000.0", "output_tokens": 2.5}}]}]}
    events = step_events(doc)
    view = parse_trajectory(doc)
    assert run_duration_ms(doc) == 12
    assert view.totals.duration_ms == 12
    assert (events[0].started_at_ms, events[0].duration_ms) == (1000, 12)
    assert (view.steps[0].started_at_ms, view.steps[0].duration_ms) == (1000, 12)
    assert events[0].tokens is not None
    assert (events[0].tokens.input, events[0].tokens.output) == (1_000_000, 2)
    assert (view.model_calls[0].input_tokens, view.model_calls[0].output_tokens) == (1_000_000, 2)
    # one million input tokens at 2.5 USD per million, two output tokens at 10 USD per million
    table = price_table({"models": {"gpt-4o": {"input": 2.5, "output": 10.0}}}, "test")
    assert run_cost(Prices(table), events).run.usd == pytest.approx(2.5 + 2 * 10.0 / 1_000_000)
    assert item_fields(doc).metadata["trace_id"] == "t1"


_json = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(
        st.sampled_from(["id", "name", "type", "input", "output", "steps", "agent_steps",
                         "root_step", "basic_info", "model_info", "metrics_info", "metadata",
                         "error", "code", "msg", "started_at", "duration", "input_tokens"]),
        inner, max_size=6),
    max_leaves=30)


@settings(max_examples=200, deadline=None)
@given(_json)
def test_no_stored_value_makes_a_reader_raise(document: Any) -> None:
    trajectory = parse_document(document)
    execution_order(trajectory)
    if isinstance(document, dict):
        step_events(document)
        run_duration_ms(document)
        parse_trajectory(document)
