"""One definition per record: a field or filter added to a declaration in
trajhub.records appears in /openapi.json, the client's model, the CLI, the SQL column lists
and the SQL conditions, with no other change; and the time vocabulary's deprecated aliases are
marked so."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from types import SimpleNamespace
from typing import Any

import pytest

from tests.harness import ServerProcess, TestDatabase
from trajhub.records import Cli, Field, Param, Record, write_values
from trajhub.records.scores import SCORE, SCORE_CONFIG
from trajhub.records.sessions import SESSION_SUMMARY, SESSION_TURN
from trajhub.records.traces import TRACE_SUMMARY
from trajhub.records.trajectories import TRAJECTORY_FILTER, TRAJECTORY_SUMMARY

# Runs in a fresh interpreter: the declaration is replaced by a copy with one more field and
# one more filter before anything reads it, exactly as if the declaration module said so.
_WITH_A_NEW_FIELD = textwrap.dedent('''
    import json, sys
    from trajhub.records import Cli, Field, Param
    import trajhub.records.trajectories as declared

    declared.TRAJECTORY_SUMMARY = declared.TRAJECTORY_SUMMARY.with_field(
        Field("retry_count", int, "model calls that were retried", written_by="summary",
              example=2, cli=Cli("RETRIES", right=True)), after="step_count")
    declared.TRAJECTORY_FILTER = declared.TRAJECTORY_FILTER.with_param(
        Param("min_retries", int, "retried at least this many model calls",
              "retry_count >= {}"))

    from trajhub.service.app import create_app
    from trajhub.service.config import Settings
    from trajhub.service.runtime import Runtime
    from trajhub.service.client.models import TrajectorySummary
    from trajhub.storage import derivation_store, rows, trajectory_reads
    import dataclasses

    openapi = create_app(Runtime(Settings(), None, None)).openapi()
    where = trajectory_reads.select("p", trajectory_reads.TrajectoryFilter(
        values={"min_retries": 3})).where
    print(json.dumps({
        "schema": openapi["components"]["schemas"]["TrajectorySummary"],
        "page_example": openapi["components"]["schemas"]["TrajectoryPage"]["examples"][0],
        "trace_schema": openapi["components"]["schemas"]["TraceSummary"],
        "parameters": [p["name"] for p in
                       openapi["paths"]["/api/v1/trajectories"]["get"]["parameters"]],
        "client_fields": [f.name for f in dataclasses.fields(TrajectorySummary)],
        "client_value": TrajectorySummary.from_json(
            {"trace_id": "t", "retry_count": 4}).retry_count,
        "written_columns": list(derivation_store.TRAJECTORY_COLUMNS),
        "select_list": rows.TrajectorySummaryRow.columns(sort="start_ns"),
        "where": where,
    }))
''')


@pytest.fixture(scope="module")
def with_a_new_field() -> dict[str, Any]:
    done = subprocess.run([sys.executable, "-c", _WITH_A_NEW_FIELD], capture_output=True,
                          text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    out: dict[str, Any] = json.loads(done.stdout)
    return out


# a fresh interpreter holds the changed declaration: a subprocess, so not the unit tier
@pytest.mark.integration
def test_a_declared_field_appears_in_openapi_with_its_type_and_description(
        with_a_new_field: dict[str, Any]) -> None:
    schema = with_a_new_field["schema"]
    assert schema["properties"]["retry_count"]["type"] == "integer"
    assert schema["properties"]["retry_count"]["description"] == "model calls that were retried"
    assert "retry_count" in schema["required"]
    # where it was declared: after step_count
    names = list(schema["properties"])
    assert names[names.index("step_count") + 1] == "retry_count"
    assert with_a_new_field["page_example"]["items"][0]["retry_count"] == 2


# a fresh interpreter holds the changed declaration: a subprocess, so not the unit tier
@pytest.mark.integration
def test_a_declared_field_appears_in_the_client_model(with_a_new_field: dict[str, Any]) -> None:
    assert "retry_count" in with_a_new_field["client_fields"]
    assert with_a_new_field["client_value"] == 4


# a fresh interpreter holds the changed declaration: a subprocess, so not the unit tier
@pytest.mark.integration
def test_a_declared_field_appears_in_the_sql_written_and_read(
        with_a_new_field: dict[str, Any]) -> None:
    assert "retry_count" in with_a_new_field["written_columns"]
    assert "retry_count" in with_a_new_field["select_list"].split(", ")


# a fresh interpreter holds the changed declaration: a subprocess, so not the unit tier
@pytest.mark.integration
def test_a_declared_filter_appears_as_a_query_parameter_and_an_sql_condition(
        with_a_new_field: dict[str, Any]) -> None:
    assert "min_retries" in with_a_new_field["parameters"]
    assert "retry_count >= $2" in with_a_new_field["where"]


def test_the_cli_has_a_flag_and_a_column_for_what_is_declared() -> None:
    import argparse

    from trajhub.service.cli.reads import add_filter_flags, record_table

    parser = argparse.ArgumentParser()
    add_filter_flags(parser, TRAJECTORY_FILTER.with_param(
        Param("min_retries", int, "retried at least this many model calls", "x >= {}")))
    args = parser.parse_args(["--min-retries", "3", "--has-error", "false", "-q", "sun"])
    assert (args.min_retries, args.has_error, args.q) == (3, False, "sun")

    record = TRACE_SUMMARY.with_field(
        Field("retry_count", int, cli=Cli("RETRIES", right=True, order=9))).with_field(
        Field("hidden_count", int))
    item = SimpleNamespace(trace_id="t1", start_time="2026-01-02T03:04:05Z", duration_ms=1500,
                           span_count=3, error_count=0, service_name="svc",
                           root_span_name="root", retry_count=9, hidden_count=7)
    lines = record_table(record, [item]).splitlines()
    assert lines[0].split() == ["TRACE", "ID", "START", "DURATION", "SPANS", "ERRORS",
                                "SERVICE", "ROOT", "SPAN", "RETRIES"]
    assert lines[1].split() == ["t1", "2026-01-02", "03:04:05", "1.50s", "3", "0", "svc",
                                "root", "9"]


def test_written_columns_come_from_the_normalizers_summary_by_the_declared_name() -> None:
    record = Record("R", "", (
        Field("trace_id", str, written_by="key"),
        Field("start_time", str, column="start_ns", stored_type=int, convert="time",
              written_by="summary"),
        Field("tools", list[str], written_by="summary", source="tool_names"),
        Field("service", str | None),
        Field("usage", str, served=False, default="{}"),
        Field("status", str, written_by="database"),
    ))
    summary = SimpleNamespace(start_ns=5, tool_names=["a"])
    assert write_values(record, summary, {"service": "svc"}) == {
        "start_ns": 5, "tools": ["a"], "service": "svc", "usage": "{}"}
    # nothing derived (a failed derivation): the declared defaults
    assert write_values(record, None, {}) == {
        "start_ns": 0, "tools": (), "service": None, "usage": "{}"}
    with pytest.raises(KeyError):
        write_values(record, None, {"status": "final"})


def test_a_record_refuses_a_field_declared_twice() -> None:
    with pytest.raises(ValueError, match="twice"):
        TRAJECTORY_SUMMARY.with_field(Field("duration_ms", int))


def test_time_fields_follow_one_vocabulary() -> None:
    """Moments are `<what>_time` (RFC 3339 text), lengths `<what>_ms` (integers); any other
    time field is a deprecated alias of one of those."""
    for record in (TRAJECTORY_SUMMARY, TRACE_SUMMARY, SESSION_SUMMARY, SESSION_TURN):
        for f in record.served:
            if f.name.endswith("_time"):
                assert f.type is str and f.convert == "time", (record.name, f.name)
            elif f.name.endswith("_ms"):
                assert f.type is int, (record.name, f.name)
            elif any(part in f.name for part in ("_ns", "nano", "_at")):
                assert f.deprecated.endswith("_time"), (record.name, f.name)


# a fresh interpreter holds the changed declaration: a subprocess, so not the unit tier
@pytest.mark.integration
def test_the_deprecated_alias_is_marked_in_openapi_and_still_served(
        with_a_new_field: dict[str, Any]) -> None:
    from trajhub.service.api.records import answer

    schema = with_a_new_field["trace_schema"]
    assert schema["properties"]["start_time_unix_nano"]["deprecated"] is True
    assert "start_time_unix_nano" in schema["required"]
    assert "deprecated" not in schema["properties"]["start_time"]
    row = {"trace_id": "t", "root_span_id": "r", "root_name": "n", "service_name": "s",
           "start_ns": 1_767_225_600_000_000_000, "end_ns": 1_767_225_602_500_000_000,
           "duration_ms": 2500, "span_count": 2, "error_count": 0}
    served = answer(TRACE_SUMMARY, row)
    assert served["start_time"] == "2026-01-01T00:00:00Z"
    assert served["end_time"] == "2026-01-01T00:00:02.500000Z"
    assert served["start_time_unix_nano"] == "1767225600000000000"
    assert served["root_span_name"] == "n" and served["duration_ms"] == 2500


def test_every_field_filled_by_the_normalizer_is_an_attribute_of_its_summary() -> None:
    """The declaration and the normalizer's summary name the same attributes, both ways."""
    import dataclasses

    from trajhub.normalizers import DerivedSummary

    filled = {f.summary_attribute for f in TRAJECTORY_SUMMARY.writes("summary")}
    assert filled == {f.name for f in dataclasses.fields(DerivedSummary)}


def test_every_declared_column_exists_in_the_migrated_database(
        server: ServerProcess, database: TestDatabase) -> None:
    """A declared column without its migration fails here, not in production. (`server` has
    migrated the database.)"""
    from tests.harness import fetch_rows

    for table, record in (("trajectories", TRAJECTORY_SUMMARY), ("traces", TRACE_SUMMARY),
                          ("scores", SCORE), ("score_configs", SCORE_CONFIG)):
        stored = {f.stored_column for f in record.fields if f.stored_column is not None}
        columns = {r["column_name"] for r in fetch_rows(
            database.url, "SELECT column_name FROM information_schema.columns "
            "WHERE table_name = $1", table)}
        assert stored - columns == set(), table
