"""The pure parts of scores: the trajectory list's `score` condition (what it accepts, what it
says when it does not, and that /openapi.json's pattern describes exactly what it accepts), the
step ids a score may name, the CLI's reading of VALUE, and the evaluator verdicts stored as
scores."""

from __future__ import annotations

import re

import pytest

from trajhub.records.query_types import SCORE_CONDITION_PATTERN
from trajhub.records.scores import (
    Score,
    ScoreCondition,
    parse_score_condition,
    score_sort_name,
)
from trajhub.service.api.scores import step_ids
from trajhub.service.cli.common import CliError
from trajhub.service.cli.scores import score_value
from trajhub.service.workers.evaluations import EvaluatorRun, verdict_scores
from trajhub.storage import scores as score_store
from trajhub.storage.evaluations import ResultRow


@pytest.mark.parametrize(("raw", "expected"), [
    ("correctness>=0.5", ScoreCondition("correctness", ">=", "0.5", 0.5, None)),
    ("a.b:c/d-e<=-2", ScoreCondition("a.b:c/d-e", "<=", "-2", -2.0, None)),
    ("verdict=pass", ScoreCondition("verdict", "=", "pass", None, None)),
    ("ok!=true", ScoreCondition("ok", "!=", "true", None, True)),
    ("n=3", ScoreCondition("n", "=", "3", 3.0, None)),
    # the first operator after the name splits: the rest is the value, as written
    ("v==x", ScoreCondition("v", "=", "=x", None, None)),
    ("v=a b", ScoreCondition("v", "=", "a b", None, None)),
])
def test_a_score_condition_reads_name_operator_and_value(raw: str,
                                                         expected: ScoreCondition) -> None:
    assert parse_score_condition(raw) == expected


@pytest.mark.parametrize(("raw", "words"), [
    ("correctness", "<name><op><value>"),
    ("correctness>0.5", "<name><op><value>"),
    ("_x=1", "<name><op><value>"),
    ("x>=", "no value"),
    ("x>=good", "'good' is not one"),
    ("x<=inf", "is not one"),
    ("x>=1e999", "is not one"),
    ("n" * 101 + "=1", "over 100"),
])
def test_a_bad_score_condition_says_what_is_wrong(raw: str, words: str) -> None:
    with pytest.raises(ValueError, match=re.escape(words)):
        parse_score_condition(raw)


@pytest.mark.parametrize("raw", [
    "a>=1", "a>=+1.5e10", "a<=.5", "a>=7.", "a=x", "a!=x y", "a==1", "a" * 100 + "=1",
    "a>=1_0", "a>= 1", "a>=1e999", "a>=x", "a", "a=", "a" * 101 + "=1", "-a=1", "a>1",
])
def test_the_documented_pattern_accepts_only_what_the_parser_accepts(raw: str) -> None:
    # a text /openapi.json's pattern admits must be accepted (schemathesis sends such texts)
    documented = re.fullmatch(SCORE_CONDITION_PATTERN[1:-1], raw) is not None
    try:
        parse_score_condition(raw)
        parsed = True
    except ValueError:
        parsed = False
    assert not documented or parsed, raw
    # and the pattern is no looser than the parser on these cases
    if raw in ("a>=x", "a", "a=", "a>1", "-a=1", "a>=1e999"):
        assert not documented and not parsed


def test_a_score_sort_names_its_score() -> None:
    assert score_sort_name("score:quality") == "quality"
    assert score_sort_name("start_time") is None


def test_the_step_ids_of_a_document_are_the_root_agents_and_their_steps() -> None:
    doc = ('{"id": "t", "root_step": {"id": "r"}, "agent_steps": [{"id": "a", "steps": '
           '[{"id": "m"}, {"id": "x"}]}, {"id": "b", "steps": []}]}')
    assert step_ids(doc) == {"r", "a", "m", "x", "b"}


@pytest.mark.parametrize(("raw", "data_type", "value"), [
    ("0.5", None, 0.5), ("true", None, True), ("false", "boolean", False), ("pass", None, "pass"),
    ("1", "category", "1"), ("3", "number", 3.0), ("true", "category", "true"),
])
def test_the_cli_reads_a_value_as_its_type(raw: str, data_type: str | None,
                                          value: bool | float | str) -> None:
    got = score_value(raw, data_type)
    assert got == value and type(got) is type(value)


def test_the_cli_refuses_a_value_not_of_the_type_asked() -> None:
    with pytest.raises(CliError, match="'abc' is not a number"):
        score_value("abc", "number")
    with pytest.raises(CliError, match="'1' is not a boolean"):
        score_value("1", "boolean")


def test_the_written_columns_come_from_the_declaration() -> None:
    assert score_store.WRITTEN == (
        "trace_id", "step_id", "name", "value_type", "comment", "source", "evaluator",
        "evaluator_config", "evaluation_id", "rule_id", "author", "error", "number_value",
        "category_value")
    served = [f.name for f in Score.served()]
    assert served[:5] == ["trace_id", "id", "step_id", "name", "value"]
    assert "number_value" not in served and "category_value" not in served


def test_an_evaluation_verdict_becomes_an_evaluator_score_and_a_failure_an_error_score(
        ) -> None:
    def result(evaluator: str, score: float | None, error: str | None) -> ResultRow:
        return ResultRow(item_id="i", evaluator=evaluator, seq=1, trace_id="t", score=score,
                         passed=None if score is None else score == 1.0, error=error,
                         reason=None, explanation="why" if score is not None else None)

    runs = [EvaluatorRun("efficiency", {"max_steps": 3}, None),
            EvaluatorRun("trajectory_match", {}, None)]
    rows = verdict_scores(7, "t", [result("efficiency", 0.5, None),
                                   result("trajectory_match", None, "bad reference")], runs)
    assert rows == [
        {"trace_id": "t", "step_id": None, "name": "efficiency", "value_type": "number",
         "number_value": 0.5, "comment": "why", "source": "evaluator",
         "evaluator": "efficiency", "evaluator_config": '{"max_steps":3}',
         "evaluation_id": 7, "error": None},
        {"trace_id": "t", "step_id": None, "name": "trajectory_match", "value_type": None,
         "number_value": None, "comment": None, "source": "evaluator",
         "evaluator": "trajectory_match", "evaluator_config": "{}", "evaluation_id": 7,
         "error": "bad reference"}]


@pytest.mark.parametrize(("data_type", "value", "config", "why"), [
    ("number", 0.5, {"data_type": "number", "min": 0.0, "max": 1.0}, None),
    ("number", 1.5, {"data_type": "number", "min": 0.0, "max": 1.0},
     "1.5 is outside its config's range (0.0 to 1.0)"),
    ("number", -1.0, {"data_type": "number", "min": 0.0, "max": None},
     "-1.0 is outside its config's range (at least 0.0)"),
    ("number", 9.0, {"data_type": "number", "min": None, "max": 5.0},
     "9.0 is outside its config's range (at most 5.0)"),
    ("boolean", True, {"data_type": "number", "min": None, "max": None},
     "its config takes a number, and True is a boolean"),
    ("category", "b", {"data_type": "category", "categories": ["a"]},
     "'b' is not one of its config's categories (a)"),
    ("category", "b", {"data_type": "category", "categories": None}, None),
])
def test_a_value_outside_its_config_says_why(data_type: str, value: object,
                                            config: dict[str, object], why: str | None) -> None:
    from trajhub.records.scores import outside_config

    assert outside_config(data_type, value, config) == why
