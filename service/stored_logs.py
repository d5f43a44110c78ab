"""Stored log records back into what reads them: the normalizers' `LogEvent`s (derivation
attaches them to their spans, normalizers/log_events.py), the REST view (`LogRecordView`), and
an OTLP logs request of the records as received (`GET /api/v1/traces/{id}?format=otlp_logs`).

A stored body is the serialized LogRecord, compressed (storage/compression.py), as a span's is.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping
from typing import Any

from google.protobuf.message import DecodeError
from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest
from opentelemetry.proto.logs.v1.logs_pb2 import LogRecord, ResourceLogs

from trajhub.normalizers.log_events import LogEvent, log_event
from trajhub.normalizers.sources import any_value, attributes
from trajhub.service.stored_spans import iso_time, jsonable, otlp_json
from trajhub.storage.compression import UnknownDictionary, decompress
from trajhub.storage.log_reads import LogRow

log = logging.getLogger("trajhub.derivation")


def record(body: bytes) -> LogRecord | None:
    """A stored record's LogRecord; None when its bytes do not read back (a frame naming a
    compression dictionary the database does not hold)."""
    try:
        return LogRecord.FromString(decompress(body))
    except (DecodeError, UnknownDictionary):
        return None


def log_events(bodies: Iterable[bytes]) -> list[LogEvent]:
    """The records (stored bodies) as the normalizers read them; one that does not read back
    is left out (its trace is derived without it)."""
    events = []
    for body in bodies:
        parsed = record(body)
        if parsed is None:
            log.warning("a stored log record does not read back; derived without it")
            continue
        events.append(log_event(parsed))
    return events


def _envelope(envelopes: Mapping[int, bytes], resource_id: int) -> ResourceLogs:
    """The record's resource and scope: the stored envelope is a ResourceSpans, whose field
    numbers a ResourceLogs shares (service/ingest/decode.py, `scope_envelope`)."""
    try:
        return ResourceLogs.FromString(envelopes.get(resource_id, b""))
    except DecodeError:
        return ResourceLogs()


def log_view(row: LogRow, envelopes: Mapping[int, bytes]) -> dict[str, Any]:
    """A `LogRecordView` (trajhub/records/logs.py) of a stored record."""
    parsed = record(row.body) or LogRecord()
    env = _envelope(envelopes, row.resource_id)
    scope = env.scope_logs[0].scope if env.scope_logs else None
    return {
        "trace_id": row.trace_id, "span_id": row.span_id, "time": iso_time(row.time_ns),
        "observed_time": iso_time(row.observed_ns) if row.observed_ns else "",
        "received_time": row.received_at.isoformat().replace("+00:00", "Z"),
        "severity_number": row.severity_number, "severity_text": row.severity_text,
        "event_name": row.event_name,
        "body": jsonable(any_value(parsed.body)) if parsed.HasField("body") else None,
        "attributes": jsonable(attributes(parsed.attributes)),
        "resource": jsonable(attributes(env.resource.attributes)),
        "scope": {"name": scope.name if scope else "", "version": scope.version if scope else ""},
        "orphaned": row.orphaned,
    }


def otlp_logs_request(rows: Iterable[LogRow], envelopes: Mapping[int, bytes]
                      ) -> ExportLogsServiceRequest:
    """The stored records as one export request, grouped by their resource and scope: posted
    to `/v1/logs`, it stores the same records (the same bytes)."""
    request = ExportLogsServiceRequest()
    groups: dict[int, ResourceLogs] = {}
    for row in rows:
        parsed = record(row.body)
        if parsed is None:
            continue
        rl = groups.get(row.resource_id)
        if rl is None:
            rl = groups[row.resource_id] = request.resource_logs.add()
            rl.CopyFrom(_envelope(envelopes, row.resource_id))
            if not rl.scope_logs:
                rl.scope_logs.add()
        rl.scope_logs[0].log_records.append(parsed)
    return request


def otlp_logs_json(request: ExportLogsServiceRequest) -> dict[str, Any]:
    """OTLP/JSON: lowerCamelCase, enums as integers, ids as hex (docs/otlp.md A2)."""
    return otlp_json(request, "Logs", "logRecords")
