"""Pure pieces of online evaluation rules (docs/rules.md): the judge retry backoff, the rule
filter's parsing (the trajectory list's own parameters and checks), and the declared record's
shapes. No server, no database."""

from __future__ import annotations

import pytest

from trajhub.records.rules import Rule, RuleBackfill
from trajhub.service.api.filters import stored_filter
from trajhub.service.workers.backoff import MAX_BACKOFF_SECONDS, backoff_seconds


def test_the_judge_backoff_doubles_from_one_second_up_to_its_cap() -> None:
    assert [backoff_seconds(n) for n in range(1, 8)] == [1.0, 2.0, 4.0, 8.0, 16.0, 32.0, 64.0]
    assert backoff_seconds(20) == MAX_BACKOFF_SECONDS == 300.0


def test_a_rule_filter_is_stored_typed_and_read_as_the_list_reads_it() -> None:
    stored, f = stored_filter({"agent": "planner", "has_error": "false", "min_tokens": "10",
                               "start": "2026-01-01T00:00:00Z", "score": "quality>=0.5"})
    assert stored == {"agent": "planner", "has_error": False, "min_tokens": 10,
                      "start": "2026-01-01T00:00:00Z", "score": "quality>=0.5"}
    # 2026-01-01T00:00:00Z in Unix ns, computed by hand: 1767225600 s
    assert f.values["start"] == 1_767_225_600 * 10**9
    assert (f.values["score"].name, f.values["score"].op, f.values["score"].number) == (
        "quality", ">=", 0.5)


def test_a_rule_can_select_interrupted_runs() -> None:
    """A rule on the runs LangGraph's interrupt() ended (docs/trajectory-rules.md,
    "Interrupted runs"): the list's `interrupted` filter, stored typed."""
    stored, f = stored_filter({"interrupted": "true", "has_error": "false"})
    assert stored == {"interrupted": True, "has_error": False}
    assert f.values["interrupted"] is True


@pytest.mark.parametrize(("raw", "named"), [
    ({"agnt": "x"}, "agnt"),
    ({"min_tokens": "many"}, "min_tokens"),
    ({"start": "yesterday"}, "start"),
    ({"score": "quality>>1"}, "score"),
    (["agent"], "object"),
])
def test_a_filter_that_does_not_parse_is_a_value_error_naming_it(raw: object,
                                                                  named: str) -> None:
    with pytest.raises(ValueError, match=named):
        stored_filter(raw)


def test_the_rule_records_serve_their_fields_in_order() -> None:
    assert [f.name for f in Rule.served()] == [
        "id", "name", "evaluator", "config", "expectations", "filter", "sample_rate",
        "enabled", "max_judge_calls_per_minute", "review_queue", "fail_below", "created_time",
        "updated_time", "pending_runs"]
    assert Rule.write_columns("service") == (
        "name", "evaluator", "config", "expectations", "filter", "sample_rate", "enabled",
        "max_judge_calls_per_minute", "review_queue", "fail_below")
    assert [f.name for f in RuleBackfill.served()] == [
        "rule_id", "id", "status", "total", "done", "created_time"]
