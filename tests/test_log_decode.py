"""Decoding the logs and metrics signals (service/ingest/log_decode.py, otlp_json_logs.py),
without a server: what a record becomes as a row, which records are rejected and why, and how
metric data points are counted."""

from __future__ import annotations

import orjson
import pytest
from opentelemetry.proto.collector.metrics.v1.metrics_service_pb2 import (
    ExportMetricsServiceRequest,
)
from opentelemetry.proto.logs.v1.logs_pb2 import LogRecord
from opentelemetry.proto.trace.v1.trace_pb2 import ResourceSpans

from tests.otlp_builders import kv, new_span_id, new_trace_id
from tests.test_otlp_logs import log_record, logs_request
from trajhub.service.errors import BadRequest
from trajhub.service.ingest.decode import _resource_id
from trajhub.service.ingest.log_decode import decode_logs, metric_points
from trajhub.storage import compression


def test_a_record_becomes_a_row_with_its_bytes() -> None:
    tid, sid = new_trace_id(), new_span_id()
    record = log_record(tid, sid, name="gen_ai.choice")
    batch = decode_logs(logs_request([record]).SerializeToString(), False, "p")
    [row] = batch.rows
    assert (row.project, row.trace_id, row.span_id) == ("p", tid.hex(), sid.hex())
    assert (row.time_ns, row.observed_ns) == (record.time_unix_nano,
                                              record.observed_time_unix_nano)
    assert (row.severity_number, row.severity_text, row.event_name) == (9, "INFO",
                                                                         "gen_ai.choice")
    assert LogRecord.FromString(compression.decompress(row.body)) == record
    assert batch.rejected == 0 and batch.error_message == ""


def test_the_envelope_is_the_one_a_span_of_the_same_resource_and_scope_has() -> None:
    req = logs_request([log_record()])
    batch = decode_logs(req.SerializeToString(), False, None)
    spans = ResourceSpans(resource=req.resource_logs[0].resource)
    spans.scope_spans.add(scope=req.resource_logs[0].scope_logs[0].scope)
    envelope = spans.SerializeToString(deterministic=True)
    assert batch.resources == {_resource_id(envelope): envelope}
    assert batch.rows[0].resource_id == _resource_id(envelope)
    assert batch.rows[0].project == "default"


def test_without_a_time_the_observed_time_and_without_an_event_name_the_attribute() -> None:
    record = LogRecord(observed_time_unix_nano=5)
    record.attributes.append(kv("event.name", "gen_ai.user.message"))
    [row] = decode_logs(logs_request([record]).SerializeToString(), False, "p").rows
    assert (row.time_ns, row.event_name, row.trace_id, row.span_id) == (
        5, "gen_ai.user.message", "", "")


@pytest.mark.parametrize(("change", "reason"), [
    ({"trace_id": b"\x01" * 5}, "invalid trace_id"),
    ({"span_id": b"\x01" * 9}, "invalid span_id"),
    ({"time_unix_nano": 2**63}, "time_unix_nano"),
    ({"observed_time_unix_nano": 2**64 - 1}, "observed_time_unix_nano"),
])
def test_a_bad_record_is_rejected_by_name(change: dict[str, object], reason: str) -> None:
    bad = log_record(new_trace_id(), new_span_id(), name="the.bad.one")
    for field, value in change.items():
        setattr(bad, field, value)
    batch = decode_logs(logs_request([log_record(), bad]).SerializeToString(), False, "p")
    assert len(batch.rows) == 1 and batch.rejected == 1
    assert "the.bad.one" in batch.error_message and reason in batch.error_message


def test_an_all_zero_id_is_no_id() -> None:
    [row] = decode_logs(logs_request([log_record(bytes(16), bytes(8))]).SerializeToString(),
                        False, "p").rows
    assert (row.trace_id, row.span_id) == ("", "")


def test_an_invalid_project_from_the_resource_rejects_its_records() -> None:
    req = logs_request([log_record()])
    req.resource_logs[0].resource.attributes.append(kv("trajhub.project", "no spaces allowed"))
    batch = decode_logs(req.SerializeToString(), False, None)
    assert not batch.rows and batch.rejected == 1 and "trajhub.project" in batch.error_message


def test_json_records_with_a_bad_value_are_left_out_and_named() -> None:
    doc = {"resource_logs": [{"scope_logs": [{"log_records": [
        {"time_unix_nano": 7, "event_name": "good", "severity_number": 17,
         "trace_id": "AB" * 16, "body": {"stringValue": "x"}},
        {"eventName": "bad.flags", "flags": -1},
        {"eventName": "bad.id", "spanId": "0x12"},
    ]}]}]}
    batch = decode_logs(orjson.dumps(doc), True, "p")
    [row] = batch.rows
    assert (row.event_name, row.severity_number, row.trace_id) == ("good", 17, "ab" * 16)
    assert batch.rejected == 2
    assert "bad.flags" in batch.error_message and "bad.id" in batch.error_message
    with pytest.raises(BadRequest):
        decode_logs(b"[]", True, "p")
    with pytest.raises(BadRequest):
        decode_logs(b"\xff\xff", False, "p")


def test_metric_points_are_counted_in_both_encodings() -> None:
    req = ExportMetricsServiceRequest()
    metrics = req.resource_metrics.add().scope_metrics.add().metrics
    metrics.add(name="g").gauge.data_points.add(as_double=1)
    s = metrics.add(name="s").sum
    s.data_points.add(as_int=1)
    s.data_points.add(as_int=2)
    metrics.add(name="h").histogram.data_points.add(count=1)
    assert metric_points(req.SerializeToString(), False) == 4
    assert metric_points(b"", False) == 0
    doc = {"resourceMetrics": [{"scopeMetrics": [{"metrics": [
        {"name": "a", "sum": {"dataPoints": [{}, {}]}},
        {"name": "b", "exponentialHistogram": {"dataPoints": [{}]}},
        {"name": "c", "summary": "not an object"}]}]}]}
    assert metric_points(orjson.dumps(doc), True) == 3
    with pytest.raises(BadRequest):
        metric_points(b"not json", True)
