"""Request bodies of the other OTLP signals: log records → rows of `log_records`, and metrics,
which are counted and dropped. Runs in the ingest worker processes, after the body has been
decompressed (service/ingest/decode.py's `decompress`, bounded as for traces).

Validation is per record, as for spans: a record is rejected (OTLP `partial_success`, naming
it) when its trace or span id has the wrong length (a record without a trace has neither),
when a time is beyond what a PostgreSQL bigint holds, or when its project name is invalid.
The rest is stored.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import ClassVar

import orjson
from google.protobuf.message import DecodeError
from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest
from opentelemetry.proto.collector.metrics.v1.metrics_service_pb2 import (
    ExportMetricsServiceRequest,
)
from opentelemetry.proto.logs.v1.logs_pb2 import LogRecord

from trajhub.service.errors import BadRequest
from trajhub.service.ingest.decode import (
    MAX_TIME_NS,
    Rejections,
    _string_attribute,
    each_scope,
    parse_export,
)
from trajhub.service.ingest.otlp_json_logs import parse_logs_request
from trajhub.storage.compression import compress
from trajhub.storage.log_writer import LogWrite
from trajhub.storage.pgtext import pg_text

#: the ingest worker's job kinds of these signals (service/ingest/worker.py has the traces')
KIND_LOGS_PROTOBUF = "logs-protobuf"
KIND_LOGS_JSON = "logs-json"
KIND_METRICS_PROTOBUF = "metrics-protobuf"
KIND_METRICS_JSON = "metrics-json"
LOG_KINDS = frozenset((KIND_LOGS_PROTOBUF, KIND_LOGS_JSON))
METRIC_KINDS = frozenset((KIND_METRICS_PROTOBUF, KIND_METRICS_JSON))

_ZERO_TRACE = bytes(16)
_ZERO_SPAN = bytes(8)
#: the kinds of metric data, each with its `data_points`
_METRIC_DATA = ("gauge", "sum", "histogram", "exponential_histogram", "summary")
_METRIC_DATA_JSON = ("gauge", "sum", "histogram", "exponentialHistogram",
                     "exponential_histogram", "summary")


@dataclass
class LogBatch(Rejections):
    """What one request stores: the rows, the resource envelopes they reference, and the
    records rejected."""

    noun: ClassVar[str] = "log record(s)"
    rows: list[LogWrite] = field(default_factory=list)
    resources: dict[int, bytes] = field(default_factory=dict)


def parse_logs(body: bytes, json: bool, rejected: list[str] | None = None
               ) -> ExportLogsServiceRequest:
    """Decode an OTLP logs body (protobuf, or OTLP/JSON when `json`)."""
    return parse_export(body, json, ExportLogsServiceRequest, parse_logs_request, rejected)


def _id(value: bytes, length: int, zero: bytes, what: str) -> tuple[str, str]:
    """(the id as hex, "" for none; why it is invalid, or "")."""
    if not value or value == zero:
        return "", ""
    if len(value) != length:
        return "", f"invalid {what} (need {length} bytes or none, got {value.hex()})"
    return value.hex(), ""


def _record_problem(record: LogRecord) -> str:
    for what, value in (("time_unix_nano", record.time_unix_nano),
                        ("observed_time_unix_nano", record.observed_time_unix_nano)):
        if value > MAX_TIME_NS:
            return f"{what} {value} is beyond the largest storable time (2^63-1 ns, year 2262)"
    return ""


def _event_name(record: LogRecord) -> str:
    return pg_text(record.event_name or _string_attribute(record.attributes, "event.name"))


def log_batch(request: ExportLogsServiceRequest, project: str | None,
              rejected: Iterable[str] = ()) -> LogBatch:
    """Validate every record and convert the valid ones to rows; the project is decided as a
    span's is (service/ingest/decode.py's `otlp_batch`)."""
    batch = LogBatch()
    for reason in rejected:
        batch.reject(reason)
    for scope, records in each_scope(request.resource_logs, project, batch.resources,
                                     lambda rl: rl.scope_logs, lambda sl: sl.log_records):
        for record in records:
            trace_id, trace_problem = _id(record.trace_id, 16, _ZERO_TRACE, "trace_id")
            span_id, span_problem = _id(record.span_id, 8, _ZERO_SPAN, "span_id")
            problem = (scope.project_problem or trace_problem or span_problem
                       or _record_problem(record))
            if problem:
                batch.reject(f"log record {_event_name(record)[:80]!r}: {problem}")
                continue
            raw = record.SerializeToString()
            scope.kept = True
            batch.rows.append(LogWrite(
                project=scope.project,
                trace_id=trace_id,
                span_id=span_id,
                time_ns=record.time_unix_nano or record.observed_time_unix_nano,
                observed_ns=record.observed_time_unix_nano,
                severity_number=record.severity_number,
                severity_text=pg_text(record.severity_text),
                event_name=_event_name(record),
                resource_id=scope.resource_id,
                digest=hashlib.blake2b(raw, digest_size=16).digest(),
                body=compress(raw),
            ))
    return batch


def decode_logs(body: bytes, json: bool, project: str | None) -> LogBatch:
    rejected: list[str] = []
    return log_batch(parse_logs(body, json, rejected), project, rejected)


def metric_points(body: bytes, json: bool) -> int:
    """How many data points an OTLP metrics body holds; BadRequest when it is not one."""
    if json:
        try:
            obj = orjson.loads(body)
        except orjson.JSONDecodeError as exc:
            raise BadRequest(f"body is not valid JSON: {exc}") from None
        if not isinstance(obj, dict):
            raise BadRequest("the body must be a JSON object (an ExportMetricsServiceRequest)")
        return _json_points(obj)
    try:
        request = ExportMetricsServiceRequest.FromString(body)
    except DecodeError as exc:
        raise BadRequest(
            f"body is not a valid ExportMetricsServiceRequest protobuf: {exc}") from None
    points = 0
    for rm in request.resource_metrics:
        for sm in rm.scope_metrics:
            for metric in sm.metrics:
                data = metric.WhichOneof("data")
                if data in _METRIC_DATA:
                    points += len(getattr(metric, data).data_points)
    return points


def _items(obj: object, *keys: str) -> list[object]:
    """The list under the first of `keys` present in `obj`, if `obj` is an object."""
    if isinstance(obj, dict):
        for key in keys:
            value = obj.get(key)
            if isinstance(value, list):
                return value
    return []


def _json_points(obj: dict[str, object]) -> int:
    """The data points of OTLP/JSON metrics, counted leniently: they are dropped, so a shape
    this does not know is counted as none rather than refused."""
    points = 0
    for rm in _items(obj, "resourceMetrics", "resource_metrics"):
        for sm in _items(rm, "scopeMetrics", "scope_metrics"):
            for metric in _items(sm, "metrics"):
                if isinstance(metric, dict):
                    for kind in _METRIC_DATA_JSON:
                        points += len(_items(metric.get(kind), "dataPoints", "data_points"))
    return points
