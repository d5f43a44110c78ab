"""/openapi.json for the OTLP/HTTP logs and metrics routes: documented as `/v1/traces` is
(service/api/models.py's OTLP_RESPONSES), with their own request and response messages."""

from __future__ import annotations

from typing import Any

from trajhub.service.api.models import OTLP_RESPONSES, _otlp_error
from trajhub.service.ingest.bodies import JSON, PROTOBUF


def signal_body(message: str, project_query: dict[str, Any]) -> dict[str, Any]:
    """The request body (and `project` parameter) of an export of `message`."""
    return {
        "parameters": [project_query],
        "requestBody": {
            "required": True,
            "description": f"An OTLP {message}. gzip or deflate Content-Encoding.",
            "content": {
                PROTOBUF: {"schema": {"type": "string", "format": "binary"}},
                JSON: {"schema": {"type": "object", "description": "OTLP/JSON (hex ids)"}},
            },
        },
    }


def _ok(description: str, message: str, partial: dict[str, Any] | None,
        example: dict[str, Any]) -> dict[str, Any]:
    properties = {} if partial is None else {"partialSuccess": {
        "type": "object", "properties": partial,
        "description": "present only when records were rejected (named in `errorMessage`)"}}
    return {"description": description, "content": {
        JSON: {"schema": {"type": "object", "properties": properties,
                          "description": f"opentelemetry.proto.collector.{message} in "
                                         "OTLP/JSON", "examples": [example]}},
        PROTOBUF: {"schema": {"type": "string", "format": "binary",
                              "description": f"opentelemetry.proto.collector.{message}"}},
    }}


LOGS_200 = _ok("stored; rejected log records are counted in `partialSuccess`",
               "logs.v1.ExportLogsServiceResponse", {
                   "rejectedLogRecords": {
                       "anyOf": [{"type": "string"}, {"type": "integer"}],
                       "description": "log records rejected (a string in OTLP/JSON: int64)"},
                   "errorMessage": {"type": "string"}},
               {"partialSuccess": {"rejectedLogRecords": "1", "errorMessage": (
                   "rejected 1 log record(s): log record 'gen_ai.choice': invalid trace_id "
                   "(need 16 bytes or none, got 0102030405)")}})
METRICS_200 = _ok("received; the data points are counted and dropped",
                  "metrics.v1.ExportMetricsServiceResponse", None, {})


def signal_responses(ok: dict[str, Any]) -> dict[int | str, dict[str, Any]]:
    """`/v1/traces`'s responses with this route's 200 and its own 400."""
    return {**OTLP_RESPONSES, 200: ok,
            400: _otlp_error("an undecodable body, or every record in it invalid (code 3)")}
