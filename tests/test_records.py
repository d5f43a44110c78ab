"""One definition per record: a field or filter added to a declaration in
trajhub.records appears in /openapi.json, the client's model, the CLI, the SQL column lists
and the SQL conditions, with no other change; each record is one static class every layer uses
as it is; and the time vocabulary's deprecated aliases are marked so."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import textwrap
from types import SimpleNamespace
from typing import Annotated, Any

import pytest
from pydantic import Field

from tests.harness import ServerProcess, TestDatabase
from trajhub.records import Cli, Condition, Record, Stored, StoredOnly, write_values
from trajhub.records.scores import Score, ScoreConfig
from trajhub.records.traces import TraceSummary
from trajhub.records.trajectories import TrajectoryQuery, TrajectorySummary

# Runs in a fresh interpreter: the declarations are replaced by subclasses with one more field
# and one more filter before anything reads them, as if the declaration module said so.
_WITH_A_NEW_FIELD = textwrap.dedent('''
    import json
    from typing import Annotated
    from pydantic import Field
    from trajhub.records import Cli, Condition, Example, Stored
    import trajhub.records.trajectories as declared

    class TrajectorySummary(declared.TrajectorySummary):
        """A trajectory as the trajectory list shows it."""
        retry_count: Annotated[int, Stored(written_by="summary"), Cli("RETRIES", right=True),
                               Example(2)] = Field(0, description="model calls that were retried")

    class TrajectoryQuery(declared.TrajectoryQuery):
        min_retries: Annotated[int | None, Condition("retry_count >= {}")] = Field(
            None, description="retried at least this many model calls")

    declared.TrajectorySummary = TrajectorySummary
    declared.TrajectoryQuery = TrajectoryQuery

    from trajhub.service.app import create_app
    from trajhub.service.config import Settings
    from trajhub.service.runtime import Runtime
    from trajhub.service.client.models import TrajectorySummary as Client
    from trajhub.storage import derivation_store, rows, trajectory_reads

    openapi = create_app(Runtime(Settings(), None, None)).openapi()
    where = trajectory_reads.select("p", trajectory_reads.TrajectoryFilter(
        values={"min_retries": 3})).where
    print(json.dumps({
        "schema": openapi["components"]["schemas"]["TrajectorySummary"],
        "page_example": openapi["components"]["schemas"]["TrajectoryPage"]["examples"][0],
        "trace_schema": openapi["components"]["schemas"]["TraceSummary"],
        "parameters": [p["name"] for p in
                       openapi["paths"]["/api/v1/trajectories"]["get"]["parameters"]],
        "client_fields": list(Client.model_fields),
        "client_value": Client.from_json({"trace_id": "t", "retry_count": 4}).retry_count,
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
    # required, though the client's model gives it a default (an older server lacks it)
    assert "retry_count" in schema["required"]
    assert "default" not in schema["properties"]["retry_count"]
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

    class Filters(TrajectoryQuery):
        min_retries: Annotated[int | None, Condition("x >= {}")] = Field(
            None, description="retried at least this many model calls")

    parser = argparse.ArgumentParser()
    add_filter_flags(parser, Filters)
    args = parser.parse_args(["--min-retries", "3", "--has-error", "false", "-q", "sun"])
    assert (args.min_retries, args.has_error, args.q) == (3, False, "sun")

    class Traces(TraceSummary):
        retry_count: Annotated[int, Cli("RETRIES", right=True, order=9)] = 0
        hidden_count: int = 0

    item = Traces(trace_id="t1", start_time="2026-01-02T03:04:05Z", duration_ms=1500,
                  span_count=3, error_count=0, service_name="svc", root_span_name="root",
                  retry_count=9, hidden_count=7)
    lines = record_table(Traces, [item]).splitlines()
    assert lines[0].split() == ["TRACE", "ID", "START", "DURATION", "SPANS", "ERRORS",
                                "SERVICE", "ROOT", "SPAN", "RETRIES"]
    assert lines[1].split() == ["t1", "2026-01-02", "03:04:05", "1.50s", "3", "0", "svc",
                                "root", "9"]


class _Written(Record):
    stored_only = (StoredOnly("usage", str, Stored(default="{}")),)

    trace_id: Annotated[str, Stored(written_by="key")]
    start_time: Annotated[str, Stored(column="start_ns", stored_type=int, convert="time",
                                      written_by="summary")] = ""
    tools: Annotated[list[str], Stored(written_by="summary", source="tool_names")] = Field(
        default_factory=list)
    service: str | None = None
    status: Annotated[str, Stored(written_by="database")] = ""


def test_written_columns_come_from_the_normalizers_summary_by_the_declared_name() -> None:
    summary = SimpleNamespace(start_ns=5, tool_names=["a"])
    assert write_values(_Written, summary, {"service": "svc"}) == {
        "start_ns": 5, "tools": ["a"], "service": "svc", "usage": "{}"}
    # nothing derived (a failed derivation): the declared defaults
    assert write_values(_Written, None, {}) == {
        "start_ns": 0, "tools": (), "service": None, "usage": "{}"}
    with pytest.raises(KeyError):
        write_values(_Written, None, {"status": "final"})
    # the plan is made once per class
    assert _Written.write_plan() is _Written.write_plan()


def test_a_record_refuses_a_column_declared_twice() -> None:
    class Twice(TrajectorySummary):
        stored_only = (StoredOnly("duration_ms", int),)

    with pytest.raises(ValueError, match="twice"):
        Twice.declared()


#: a moment under another name than `<what>_time`: Unix times, `_at` stamps, dates, bounds
_MOMENT_LIKE = re.compile(r"(_at|_ns|_nano|_nanos|_date|_ts|_until|_since|_epoch|_unix|_micros"
                          r"|timestamp)$|_at_")
#: a length in another unit than whole milliseconds
_LENGTH_LIKE = re.compile(r"(_seconds|_secs|_sec|_s|_us|_micros|_minutes|_hours|_days)$")
#: lengths a person chooses rather than measures, in the unit one thinks of them in (a review
#: lease in seconds, a retention in days): docs/glossary.md, "Times"
_CHOSEN_UNITS = {("NextRequest", "lease_seconds"), ("Retention", "default_days"),
                 # an alert's window is minutes to days, set by hand: whole seconds
                 *((model, "window_seconds") for model in ("AlertCreate", "AlertPatch",
                                                           "AlertRule", "AlertRuleCreated"))}
#: the one `_ms` that is not an integer, and why (docs/glossary.md, "Times"): a span's length,
#: timed to the nanosecond, is fractional (many spans last under a millisecond)
_FRACTIONAL_MS = {("SpanView", "duration_ms"), ("SpanNode", "duration_ms"),
                  ("TrajectoryNode", "duration_ms"),
                  # estimates, a bucket's representative (within 5 %), not measured lengths
                  ("TimeSeriesPoint", "latency_p50_ms"), ("TimeSeriesPoint", "latency_p95_ms"),
                  ("TimeSeriesPoint", "latency_p99_ms")}


def _types(prop: dict[str, Any]) -> set[str]:
    """The JSON types a property may hold besides null."""
    members = prop.get("anyOf", [prop])
    return {m["type"] for m in members if "type" in m} - {"null"}


def _replacement(prop: dict[str, Any]) -> str:
    found = re.search(r"deprecated: use `([a-z_]+)`", prop.get("description", ""))
    return found.group(1) if found else ""


def test_time_fields_follow_one_vocabulary() -> None:
    """Over every model the API sends or takes (every component of /openapi.json): a moment is
    `<what>_time` (or an event's `time`), RFC 3339 text; a length is `<what>_ms`, an integer
    (a span's fractional length excepted); a time under any other name is a deprecated alias
    whose description names its replacement, a field of the same model."""
    from trajhub.service.app import create_app
    from trajhub.service.config import Settings
    from trajhub.service.runtime import Runtime

    schemas = create_app(Runtime(Settings(), None, None)).openapi()["components"]["schemas"]
    wrong: list[str] = []
    checked = 0
    for model, schema in schemas.items():
        props: dict[str, Any] = schema.get("properties", {})
        for name, prop in props.items():
            where = f"{model}.{name}"
            if name == "time" or name.endswith("_time"):
                checked += 1
                if _types(prop) != {"string"} or prop.get("deprecated"):
                    wrong.append(f"{where}: a moment is RFC 3339 text")
            elif prop.get("deprecated") and (_MOMENT_LIKE.search(name)
                                             or _LENGTH_LIKE.search(name)
                                             or name.endswith("_ms")):
                checked += 1
                new = _replacement(prop)
                if not (new == "time" or new.endswith(("_time", "_ms"))) or new not in props:
                    wrong.append(f"{where}: deprecated, but names no time field of {model}")
            elif name.endswith("_ms"):
                checked += 1
                expected = {"number"} if (model, name) in _FRACTIONAL_MS else {"integer"}
                if _types(prop) != expected:
                    wrong.append(f"{where}: a length is whole milliseconds")
            elif _MOMENT_LIKE.search(name) or (_LENGTH_LIKE.search(name)
                                               and (model, name) not in _CHOSEN_UNITS):
                wrong.append(f"{where}: a time outside the vocabulary, and not deprecated")
    assert wrong == [], wrong
    assert checked > 50  # the walk saw the models (a renamed component would not hide them)
    for model, name in _FRACTIONAL_MS:
        assert "fractional" in schemas[model]["properties"][name]["description"]


def test_a_renamed_field_is_read_under_either_name() -> None:
    """A client reads the new name from a server that sends only the old one, and the old
    name still holds the value (a deprecated alias: `deprecated_alias(renamed=True)`)."""
    import warnings

    from trajhub.records.datasets import Dataset
    from trajhub.records.projects import ProjectEntry
    from trajhub.records.spans import SpanEvent

    old_server = Dataset.from_json({"name": "d", "created_at": "2026-01-01T00:00:00Z"})
    new_server = ProjectEntry.from_json({"name": "p", "first_span_time": "2026-01-01T00:00:00Z"})
    assert old_server.created_time == "2026-01-01T00:00:00Z"
    assert old_server.updated_time == "" and new_server.last_span_time is None
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert new_server.first_span_at == "2026-01-01T00:00:00Z"
    assert any(issubclass(w.category, DeprecationWarning) for w in caught)
    event = SpanEvent.model_validate({"name": "e", "time_unix_nano": "1767225600500000000",
                                      "attributes": {}})
    assert event.time == "2026-01-01T00:00:00.500000Z"  # from an older server's nanoseconds
    assert Dataset.select_list() == "name, description, (SELECT count(*) FROM dataset_items " \
        "i WHERE i.dataset_id = d.id) AS item_count, created_at, updated_at"


def test_records_are_static_classes_that_every_layer_uses_as_they_are() -> None:
    """Each record is one class that type checkers see field by field: the API's response
    model and the client's model are that class, and nothing builds a class at run time."""
    import pathlib

    from trajhub.service.api import models as api_models
    from trajhub.service.client import models as client_models

    assert Score.model_fields["name"].annotation is str
    assert Score.model_fields["step_id"].annotation == str | None
    assert client_models.Score is Score
    assert client_models.TrajectorySummary is api_models.TrajectorySummary is TrajectorySummary
    # the client reads an answer from an older server (no newer field) and ignores unknown ones
    old = client_models.TrajectorySummary.from_json({"trace_id": "t", "surprise": 1})
    assert old.step_count == 0 and old.cost.usd is None and old.agent_names == []
    root = pathlib.Path(__file__).resolve().parent.parent
    built = [str(p.relative_to(root))
             for d in ("trajhub", "service", "storage", "normalizers", "evaluators")
             for p in (root / d).rglob("*.py")
             if "create_model(" in p.read_text() or "make_dataclass(" in p.read_text()]
    assert built == []


def test_a_record_serves_every_field_as_required_in_openapi() -> None:
    schema = ScoreConfig.model_json_schema(mode="serialization")
    assert schema["required"] == list(ScoreConfig.model_fields)
    assert all("default" not in p for p in schema["properties"].values())
    assert ScoreConfig.example()["name"] == "correctness"


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
    served = answer(TraceSummary, row)
    assert served["start_time"] == "2026-01-01T00:00:00Z"
    assert served["end_time"] == "2026-01-01T00:00:02.500000Z"
    assert served["start_time_unix_nano"] == "1767225600000000000"
    assert served["root_span_name"] == "n" and served["duration_ms"] == 2500


def test_every_field_filled_by_the_normalizer_is_an_attribute_of_its_summary() -> None:
    """The declaration and the normalizer's summary name the same attributes, both ways."""
    import dataclasses

    from trajhub.normalizers import DerivedSummary

    filled = {f.summary_attribute for f in TrajectorySummary.writes("summary")}
    assert filled == {f.name for f in dataclasses.fields(DerivedSummary)}


def test_every_declared_column_exists_in_the_migrated_database(
        server: ServerProcess, database: TestDatabase) -> None:
    """A declared column without its migration fails here, not in production. (`server` has
    migrated the database.)"""
    from tests.harness import fetch_rows

    for table, record in (("trajectories", TrajectorySummary), ("traces", TraceSummary),
                          ("scores", Score), ("score_configs", ScoreConfig)):
        stored = {f.stored_column for f in record.declared() if f.stored_column is not None}
        columns = {r["column_name"] for r in fetch_rows(
            database.url, "SELECT column_name FROM information_schema.columns "
            "WHERE table_name = $1", table)}
        assert stored - columns == set(), table


def test_the_dataset_evaluation_and_project_records_are_the_clients_and_storages() -> None:
    from trajhub.records.datasets import (
        Dataset,
        FillOutcome,
        ImportOutcome,
        Item,
        ItemWithTrajectory,
    )
    from trajhub.records.evaluations import EvaluatorAggregate, ItemOutcomes
    from trajhub.records.projects import ProjectEntry
    from trajhub.service.api import models as api
    from trajhub.service.client import models as client
    from trajhub.storage.rows import DatasetRow, ItemWithTrajectoryRow, ProjectRow

    assert (client.Dataset, client.FillResult, client.ImportResult, client.Project) == (
        Dataset, FillOutcome, ImportOutcome, ProjectEntry)
    assert client.EvaluatorAggregate is api.EvaluatorAggregate is EvaluatorAggregate
    assert client.ItemOutcomes is api.ItemOutcomes is ItemOutcomes
    assert issubclass(api.FillOutcome, FillOutcome) and issubclass(api.Dataset, Dataset)
    filled = client.FillResult.from_json({"added": 1, "item_ids": ["i1"], "newer": True})
    assert (filled.added, filled.item_ids, filled.not_found) == (1, ["i1"], [])
    assert DatasetRow.columns("d") == (
        "d.name, d.description, (SELECT count(*) FROM dataset_items i WHERE "
        "i.dataset_id = d.id) AS item_count, d.created_at, d.updated_at, d.id AS id")
    assert client.DatasetItem is ItemWithTrajectory and issubclass(api.Item, Item)
    item = client.DatasetItem.from_json({"id": "i1", "dataset": "d", "tags": ["a"]})
    assert (item.id, item.tags, item.expectations, item.trajectory) == ("i1", ["a"], {}, None)
    assert ItemWithTrajectoryRow.columns() == (
        "id, input::text AS input, reference_output::text AS reference_output, "
        "expectations::text AS expectations, metadata::text AS metadata, source_trace_id, tags, "
        "created_at, updated_at, trajectory::text AS trajectory, seq AS seq")
    # the rows declare no column of their own but the storage-only ones: they are the records'
    from trajhub.storage.rows import AggregateRow, EvaluationRow, ItemOutcomesRow, ItemRow
    for row in (DatasetRow, ItemRow, ItemWithTrajectoryRow, EvaluationRow, AggregateRow,
                ItemOutcomesRow):
        assert not hasattr(row, "__dataclass_fields__"), row
    assert ProjectRow.columns() == (
        "project AS name, count(*) AS trace_count, coalesce(sum(span_count), 0) AS span_count, "
        "min(start_ns) AS first_span_time, max(end_ns) AS last_span_time, "
        "min(start_ns) AS first_span_at, max(end_ns) AS last_span_at")


def test_the_evaluation_record_is_the_clients_and_storages() -> None:
    from trajhub.records.evaluations import Evaluation, EvaluationDetail
    from trajhub.service.api import models as api
    from trajhub.service.client import models as client
    from trajhub.storage.rows import AggregateRow, EvaluationRow, ItemOutcomesRow

    assert client.Evaluation is EvaluationDetail and issubclass(api.Evaluation, Evaluation)
    assert issubclass(api.EvaluationDetail, EvaluationDetail)
    run = client.Evaluation.from_json({
        "id": 7, "dataset": "weather", "target": "snapshot", "status": "running",
        "aggregates": [{"evaluator": "e", "total": 2, "passed": 1}],
        "items": {"total": 2, "evaluated": 1}})
    assert run.running and run.aggregates[0].passed == 1 and run.items.evaluated == 1
    listed = client.Evaluation.from_json({"id": 8, "status": "done"})
    assert not listed.running and listed.aggregates == [] and listed.items.total == 0
    assert EvaluationRow.columns() == (
        "id, dataset_name, target, run_name, evaluators::text AS evaluators, status, error, "
        "item_count, done_items, created_at, finished_at")
    # what the API computes (`failed`, `pass_rate`, `total`) is not selected
    assert AggregateRow.columns() == (
        "evaluator, count(*) AS total, count(*) FILTER (WHERE passed) AS passed, "
        "count(*) FILTER (WHERE error IS NOT NULL) AS errors, avg(score) AS mean_score")
    assert ItemOutcomesRow.columns() == (
        "count(*) AS evaluated, count(*) FILTER (WHERE all_passed) AS passed, "
        "count(*) FILTER (WHERE any_error) AS errors")


# a fresh interpreter shows what importing the declarations loads: a subprocess, so not the
# unit tier
@pytest.mark.integration
def test_the_declarations_import_nothing_of_the_server() -> None:
    code = ("import sys, pkgutil, importlib, trajhub.records as r\n"
            "for m in pkgutil.iter_modules(r.__path__): importlib.import_module("
            "'trajhub.records.' + m.name)\n"
            "print(sorted({n.split('.')[0] if not n.startswith('trajhub.') else "
            "'.'.join(n.split('.')[:2]) for n in sys.modules}))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=60, check=True)
    loaded = set(json.loads(done.stdout.replace("'", '"')))
    assert {"fastapi", "asyncpg", "trajhub.service", "trajhub.storage", "httpx"} & loaded == set()
