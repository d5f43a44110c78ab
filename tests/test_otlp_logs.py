"""The OTLP logs and metrics signals against a real server: the OpenTelemetry SDK's own log and
metric exporters over OTLP/HTTP and gRPC, and hand-made bodies for what the SDK never sends
(a record sent twice, a bad id, an oversized body, OTLP/JSON, a foreign API key)."""

from __future__ import annotations

import gzip
import os
import re
from collections.abc import Iterator

import grpc
import httpx
import orjson
import pytest
from google.rpc import status_pb2
from opentelemetry.exporter.otlp.proto.common._log_encoder import encode_logs
from opentelemetry.exporter.otlp.proto.grpc._log_exporter import (
    OTLPLogExporter as GrpcLogExporter,
)
from opentelemetry.exporter.otlp.proto.grpc.metric_exporter import (
    OTLPMetricExporter as GrpcMetricExporter,
)
from opentelemetry.exporter.otlp.proto.http._log_exporter import (
    OTLPLogExporter as HttpLogExporter,
)
from opentelemetry.exporter.otlp.proto.http.metric_exporter import (
    OTLPMetricExporter as HttpMetricExporter,
)
from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import (
    ExportLogsServiceRequest,
    ExportLogsServiceResponse,
)
from opentelemetry.proto.collector.metrics.v1.metrics_service_pb2 import (
    ExportMetricsServiceResponse,
)
from opentelemetry.proto.logs.v1.logs_pb2 import LogRecord
from opentelemetry.sdk._logs import LoggerProvider
from opentelemetry.sdk._logs.export import (
    BatchLogRecordProcessor,
    InMemoryLogRecordExporter,
    LogRecordExporter,
    SimpleLogRecordProcessor,
)
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader, MetricExportResult
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider

from tests.conftest import Secured
from tests.harness import ServerProcess, TestDatabase, fetch_rows
from tests.otlp_builders import PB, kv, new_span_id, new_trace_id
from trajhub.storage import compression

# ---------------------------------------------------------------------------- builders

def log_record(trace_id: bytes = b"", span_id: bytes = b"", name: str = "gen_ai.user.message",
               content: str = "hello", time_ns: int = 1_700_000_000_000_000_000) -> LogRecord:
    record = LogRecord(time_unix_nano=time_ns, observed_time_unix_nano=time_ns + 1,
                       severity_number=9, severity_text="INFO", trace_id=trace_id,
                       span_id=span_id, event_name=name)
    record.body.kvlist_value.values.append(kv("content", content))
    record.attributes.append(kv("gen_ai.system", "openai"))
    return record


def logs_request(records: list[LogRecord], service: str = "logs-test"
                 ) -> ExportLogsServiceRequest:
    req = ExportLogsServiceRequest()
    rl = req.resource_logs.add()
    rl.resource.attributes.append(kv("service.name", service))
    sl = rl.scope_logs.add()
    sl.scope.name = "tests"
    sl.log_records.extend(records)
    return req


def stored_records(database: TestDatabase, project: str) -> list[dict[str, object]]:
    """The project's stored log records, each with its body decoded."""
    rows = fetch_rows(database.url, "SELECT * FROM log_records WHERE project = $1 "
                      "ORDER BY time_ns, event_name", project)
    return [{**dict(r), "record": LogRecord.FromString(compression.decompress(r["body"]))}
            for r in rows]


def dropped_points(server: ServerProcess) -> float:
    text = httpx.get(f"{server.http}/metrics").text
    found = re.search(r"^trajhub_metric_points_dropped_total (\S+)$", text, re.M)
    return float(found.group(1)) if found else 0.0


# ---------------------------------------------------------------------------- the SDK

class _Both(LogRecordExporter):
    """The exporter under test, and a copy of every record it was given."""

    def __init__(self, exporter: LogRecordExporter) -> None:
        self.exporter = exporter
        self.memory = InMemoryLogRecordExporter()
        self.results: list[object] = []

    def export(self, batch):  # type: ignore[no-untyped-def]
        self.memory.export(batch)
        result = self.exporter.export(batch)
        self.results.append(result)
        return result

    def shutdown(self) -> None:
        self.exporter.shutdown()

    def force_flush(self, timeout_millis: int = 30_000) -> bool:
        return True


@pytest.fixture(params=["http", "grpc"])
def sdk_exporter(request: pytest.FixtureRequest, server: ServerProcess, project: str
                 ) -> Iterator[tuple[str, LogRecordExporter]]:
    if request.param == "http":
        yield "http", HttpLogExporter(endpoint=f"{server.http}/v1/logs",
                                      headers={"trajhub-project": project})
    else:
        yield "grpc", GrpcLogExporter(endpoint=server.grpc, insecure=True,
                                      headers={"trajhub-project": project})


def test_sdk_log_exporter_events_are_stored_as_sent(
        sdk_exporter: tuple[str, LogRecordExporter], database: TestDatabase,
        project: str) -> None:
    transport, exporter = sdk_exporter
    both = _Both(exporter)
    resource = Resource.create({"service.name": "logs-sdk"})
    loggers = LoggerProvider(resource=resource)
    processor = (SimpleLogRecordProcessor(both) if transport == "http"
                 else BatchLogRecordProcessor(both))
    loggers.add_log_record_processor(processor)
    logger = loggers.get_logger("tests.genai")
    tracer = TracerProvider(resource=resource).get_tracer("tests")
    with tracer.start_as_current_span("chat gpt-4o") as current:
        logger.emit(event_name="gen_ai.user.message", body={"content": "What is 2+2?"},
                    attributes={"gen_ai.system": "openai"})
        logger.emit(event_name="gen_ai.choice",
                    body={"index": 0, "message": {"content": "4"}})
    context = current.get_span_context()
    # no event name: the `event.name` attribute names it (older instrumentations)
    logger.emit(body="a log outside any span", attributes={"event.name": "legacy.event"})
    loggers.force_flush()
    loggers.shutdown()

    assert both.results and all(r.name == "SUCCESS" for r in both.results)  # type: ignore[attr-defined]
    sent = encode_logs(both.memory.get_finished_logs())
    sent_records = [r for rl in sent.resource_logs for sl in rl.scope_logs
                    for r in sl.log_records]
    stored = stored_records(database, project)
    assert len(stored) == len(sent_records) == 3
    by_name = {row["event_name"]: row for row in stored}
    assert set(by_name) == {"gen_ai.user.message", "gen_ai.choice", "legacy.event"}
    for name in ("gen_ai.user.message", "gen_ai.choice"):
        assert by_name[name]["trace_id"] == f"{context.trace_id:032x}"
        assert by_name[name]["span_id"] == f"{context.span_id:016x}"
    assert by_name["legacy.event"]["trace_id"] == by_name["legacy.event"]["span_id"] == ""
    # the stored bytes are the records as sent
    assert sorted(r.SerializeToString() for r in sent_records) == sorted(
        row["record"].SerializeToString() for row in stored)  # type: ignore[attr-defined]


@pytest.mark.parametrize("transport", ["http", "grpc"])
def test_sdk_metric_exporter_succeeds_and_the_points_are_counted(
        server: ServerProcess, project: str, transport: str) -> None:
    reader = InMemoryMetricReader()
    meters = MeterProvider(metric_readers=[reader])
    meter = meters.get_meter("tests")
    meter.create_counter("requests").add(3, {"route": "/a"})
    meter.create_counter("requests2").add(1, {"route": "/b"})
    meter.create_histogram("latency").record(0.25)
    data = reader.get_metrics_data()
    assert data is not None
    exporter = (HttpMetricExporter(endpoint=f"{server.http}/v1/metrics",
                                   headers={"trajhub-project": project})
                if transport == "http" else
                GrpcMetricExporter(endpoint=server.grpc, insecure=True,
                                   headers={"trajhub-project": project}))
    before = dropped_points(server)
    assert exporter.export(data) == MetricExportResult.SUCCESS
    exporter.shutdown()
    meters.shutdown()
    assert dropped_points(server) == before + 3


# ---------------------------------------------------------------------------- by hand

def test_a_body_sent_twice_stores_each_record_once(server: ServerProcess, database: TestDatabase,
                                                   project: str) -> None:
    tid, sid = new_trace_id(), new_span_id()
    body = logs_request([log_record(tid, sid, content="a"), log_record(tid, sid, content="b"),
                         log_record(content="no trace")]).SerializeToString()
    for _ in range(2):
        r = httpx.post(f"{server.http}/v1/logs", content=body,
                       headers={**PB, "trajhub-project": project}, timeout=30)
        assert r.status_code == 200, r.text
        assert r.headers["content-type"] == "application/x-protobuf"
        assert not ExportLogsServiceResponse.FromString(r.content).HasField("partial_success")
    stored = stored_records(database, project)
    assert len(stored) == 3
    assert sorted(str(row["trace_id"]) for row in stored) == ["", tid.hex(), tid.hex()]
    # the resource and scope are stored once, where a span's are
    resource_ids = {row["resource_id"] for row in stored}
    assert len(resource_ids) == 1
    envelope = fetch_rows(database.url, "SELECT body FROM resources WHERE id = $1",
                          resource_ids.pop())
    assert len(envelope) == 1


def test_a_bad_record_is_rejected_and_the_good_ones_stored(server: ServerProcess,
                                                           database: TestDatabase,
                                                           project: str) -> None:
    tid, sid = new_trace_id(), new_span_id()
    body = logs_request([log_record(tid, sid, content="good"),
                         log_record(os.urandom(5), sid, name="bad.one"),
                         log_record(tid, sid, name="later", content="good too")])
    r = httpx.post(f"{server.http}/v1/logs", content=body.SerializeToString(),
                   headers={**PB, "trajhub-project": project}, timeout=30)
    assert r.status_code == 200, r.text
    partial = ExportLogsServiceResponse.FromString(r.content).partial_success
    assert partial.rejected_log_records == 1
    assert "bad.one" in partial.error_message and "trace_id" in partial.error_message
    assert len(stored_records(database, project)) == 2
    # over gRPC, the same answer
    with grpc.insecure_channel(server.grpc) as channel:
        export = channel.unary_unary("/opentelemetry.proto.collector.logs.v1.LogsService/Export",
                                     request_serializer=None, response_deserializer=None)
        answer = ExportLogsServiceResponse.FromString(export(
            body.SerializeToString(), metadata=[("trajhub-project", project)], timeout=30))
    assert answer.partial_success.rejected_log_records == 1
    # every record bad: 400
    r = httpx.post(f"{server.http}/v1/logs", timeout=30,
                   content=logs_request([log_record(b"\x01" * 5)]).SerializeToString(),
                   headers={**PB, "trajhub-project": project})
    assert r.status_code == 400
    assert "every log record was invalid" in status_pb2.Status.FromString(r.content).message


def test_json_and_gzip(server: ServerProcess, database: TestDatabase, project: str) -> None:
    tid, sid = new_trace_id().hex(), new_span_id().hex()
    doc = {"resourceLogs": [{"resource": {"attributes": [
        {"key": "service.name", "value": {"stringValue": "json"}}]},
        "scopeLogs": [{"scope": {"name": "tests"}, "logRecords": [
            {"timeUnixNano": "1700000000000000000", "observedTimeUnixNano": 1700000000000000001,
             "severityNumber": "SEVERITY_NUMBER_INFO", "traceId": tid, "spanId": sid,
             "eventName": "gen_ai.client.inference.operation.details",
             "body": {"kvlistValue": {"values": [
                 {"key": "content", "value": {"stringValue": "hi"}}]}}},
            {"timeUnixNano": "1700000000000000002", "traceId": "abcde",
             "eventName": "bad.json"}]}]}]}
    r = httpx.post(f"{server.http}/v1/logs", content=gzip.compress(orjson.dumps(doc)),
                   headers={"content-type": "application/json", "content-encoding": "gzip",
                            "trajhub-project": project}, timeout=30)
    assert r.status_code == 200, r.text
    assert r.headers["content-type"] == "application/json"
    assert r.json()["partialSuccess"]["rejectedLogRecords"] == "1"
    assert "bad.json" in r.json()["partialSuccess"]["errorMessage"]
    [row] = stored_records(database, project)
    assert (row["trace_id"], row["span_id"]) == (tid, sid)
    assert row["event_name"] == "gen_ai.client.inference.operation.details"
    assert row["severity_number"] == 9
    record = row["record"]
    assert isinstance(record, LogRecord)
    assert record.body.kvlist_value.values[0].value.string_value == "hi"
    # metrics in OTLP/JSON: an empty answer
    r = httpx.post(f"{server.http}/v1/metrics", timeout=30, headers={
        "content-type": "application/json"}, content=orjson.dumps({"resourceMetrics": [
            {"scopeMetrics": [{"metrics": [{"name": "m", "gauge": {"dataPoints": [
                {"asDouble": 1.0}, {"asDouble": 2.0}]}}]}]}]}))
    assert r.status_code == 200 and r.json() == {}


def test_oversized_bodies_are_refused(tmp_path, database: TestDatabase) -> None:  # type: ignore[no-untyped-def]
    limited = ServerProcess.start(database.url, tmp_path,
                                  extra_env={"TRAJHUB_MAX_REQUEST_BYTES": str(1024 * 1024)})
    try:
        big = logs_request([log_record(content="x" * (2 * 1024 * 1024))]).SerializeToString()
        for path in ("/v1/logs", "/v1/metrics"):
            r = httpx.post(f"{limited.http}{path}", content=big, headers=PB, timeout=30)
            assert r.status_code == 413, (path, r.status_code)
        bomb = gzip.compress(b"\x00" * (8 * 1024 * 1024))
        r = httpx.post(f"{limited.http}/v1/logs", content=bomb, timeout=30,
                       headers={**PB, "content-encoding": "gzip"})
        assert r.status_code == 413
        with grpc.insecure_channel(limited.grpc, options=[
                ("grpc.max_send_message_length", 64 * 1024 * 1024)]) as channel:
            for service in ("logs.v1.LogsService", "metrics.v1.MetricsService"):
                export = channel.unary_unary(
                    f"/opentelemetry.proto.collector.{service}/Export",
                    request_serializer=None, response_deserializer=None)
                with pytest.raises(grpc.RpcError) as error:
                    export(big, timeout=30)
                assert error.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
    finally:
        assert limited.stop() == 0


def test_keys_apply_as_for_traces(secured: Secured) -> None:
    base = secured.server.http
    other = "other-" + os.urandom(4).hex()
    r = httpx.post(f"{base}/api/v1/keys", params={"project": other},
                   headers={"authorization": f"Bearer {secured.bootstrap}"},
                   json={"scope": "ingest", "name": "logs test"}, timeout=30)
    assert r.status_code == 201, r.text
    foreign = {"authorization": f"Bearer {r.json()['key']}"}
    body = logs_request([log_record(new_trace_id(), new_span_id())]).SerializeToString()
    for path in ("/v1/logs", "/v1/metrics"):
        r = httpx.post(f"{base}{path}", content=body, timeout=30,
                       headers={**PB, **foreign, "trajhub-project": secured.project})
        assert r.status_code == 403, (path, r.status_code)
        r = httpx.post(f"{base}{path}", content=body, headers=PB, timeout=30)
        assert r.status_code == 401, (path, r.status_code)
    # its own project: stored
    r = httpx.post(f"{base}/v1/logs", content=body, headers={**PB, **foreign}, timeout=30)
    assert r.status_code == 200, r.text
    with grpc.insecure_channel(secured.server.grpc) as channel:
        export = channel.unary_unary("/opentelemetry.proto.collector.logs.v1.LogsService/Export",
                                     request_serializer=None, response_deserializer=None)
        with pytest.raises(grpc.RpcError) as error:
            export(body, metadata=[*foreign.items(), ("trajhub-project", secured.project)],
                   timeout=30)
        assert error.value.code() == grpc.StatusCode.PERMISSION_DENIED
        metrics = channel.unary_unary(
            "/opentelemetry.proto.collector.metrics.v1.MetricsService/Export",
            request_serializer=None, response_deserializer=None)
        assert ExportMetricsServiceResponse.FromString(metrics(
            b"", metadata=list(foreign.items()), timeout=30)) == ExportMetricsServiceResponse()
