"""OTLP/JSON → `ExportLogsServiceRequest`, with the same lenient readers as the traces'
(service/ingest/otlp_json.py): lowerCamelCase or snake_case keys, 64-bit ints as strings or
numbers, enums as ints or names, hex ids (an invalid one kept empty-but-wrong, so the record is
rejected, not the request), values nested no deeper than a protobuf parser accepts. With
`rejected`, a record with an invalid value is left out and named there; the rest is kept.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest
from opentelemetry.proto.logs.v1.logs_pb2 import LogRecord, SeverityNumber

from trajhub.service.errors import BadRequest
from trajhub.service.ingest.otlp_json import (
    _UINT32,
    _UINT64,
    Envelopes,
    _any_value,
    _dropped,
    _enum,
    _get,
    _key_values,
    _list,
    read_envelopes,
)
from trajhub.service.ingest.otlp_json import _int as _read_int

_SEVERITY = dict(SeverityNumber.items())
_LOGS = Envelopes(("resourceLogs", "resource_logs"), ("scopeLogs", "scope_logs"),
                  ("logRecords", "log_records"), "logRecord")
# request 1 → ResourceLogs 2 → ScopeLogs 3 → LogRecord 4: its body (an AnyValue) is level 5,
# an attribute's value level 6, as a span's
_BODY_DEPTH = 5
_RECORD_VALUE_DEPTH = 6
#: an id that is not hex: kept as a one-byte id, so the record is rejected for its length
_BAD_ID = b"\x00"


def _id(value: Any) -> bytes:
    if value is None or value == "":
        return b""
    try:
        return bytes.fromhex(value) if isinstance(value, str) else _BAD_ID
    except ValueError:
        return _BAD_ID


def _record(obj: Mapping[str, Any], out: LogRecord) -> None:
    out.time_unix_nano = _int(obj, "timeUnixNano", "time_unix_nano", _UINT64)
    out.observed_time_unix_nano = _int(obj, "observedTimeUnixNano",
                                       "observed_time_unix_nano", _UINT64)
    out.severity_number = _enum(_get(obj, "severityNumber", "severity_number"),  # type: ignore[assignment]
                                _SEVERITY, "severityNumber")
    out.severity_text = str(_get(obj, "severityText", "severity_text") or "")
    body = obj.get("body")
    if body is not None:
        out.body.SetInParent()
        _any_value(body, out.body, _BODY_DEPTH)
    _key_values(_list(obj, "attributes", "attributes"), out.attributes, _RECORD_VALUE_DEPTH)
    out.dropped_attributes_count = _dropped(obj, "droppedAttributesCount",
                                            "dropped_attributes_count")
    out.flags = _int(obj, "flags", "flags", _UINT32)
    out.trace_id = _id(_get(obj, "traceId", "trace_id"))
    out.span_id = _id(_get(obj, "spanId", "span_id"))
    out.event_name = str(_get(obj, "eventName", "event_name") or "")


def _int(obj: Mapping[str, Any], camel: str, snake: str, bounds: tuple[int, int]) -> int:
    return _read_int(_get(obj, camel, snake), camel, bounds)


def _label(raw: Any) -> str:
    name = _get(raw, "eventName", "event_name") if isinstance(raw, Mapping) else None
    return f"log record {str(name or '')[:80]!r}"


def parse_logs_request(obj: Any, rejected: list[str] | None = None
                       ) -> ExportLogsServiceRequest:
    """Build the request message from parsed OTLP/JSON; BadRequest names what is wrong."""
    request = ExportLogsServiceRequest()
    if not isinstance(obj, Mapping):
        raise BadRequest("the body must be a JSON object (an ExportLogsServiceRequest)")
    read_envelopes(obj, request, _LOGS, _record, _label, rejected)
    return request
