"""The trace summary (a row of `GET /api/v1/traces`, of the `traces` table, and of
`trajhub traces list`), declared once (`trajhub.records`). The derivation service fills it from
a trace's stored spans (service/derivation.py, `trace_row`)."""

from __future__ import annotations

from datetime import datetime

from trajhub.records import Cli, Field, Record
from trajhub.records.trajectories import TRACE_ID

TRACE_SUMMARY = Record("TraceSummary", "A trace as the trace list shows it.", (
    Field("trace_id", str, written_by="key", example=TRACE_ID, cli=Cli("TRACE ID")),
    Field("root_span_id", str, "the root span (the earliest one without a parent)",
          example="00f067aa0ba902b7"),
    Field("root_span_name", str, "the root span's name", column="root_name",
          example="LangGraph", cli=Cli("ROOT SPAN", "clip", order=6)),
    Field("service_name", str, "the root span's resource `service.name`",
          example="weather-agent", cli=Cli("SERVICE", order=5)),
    Field("start_time", str, "RFC 3339: when the earliest span started", column="start_ns",
          stored_type=int, convert="time", example="2026-11-22T10:00:00Z",
          cli=Cli("START", "when", order=1)),
    Field("end_time", str, "RFC 3339: when the latest span ended", column="end_ns",
          stored_type=int, convert="time", example="2026-11-22T10:00:02.103000Z"),
    Field("start_time_unix_nano", str, "the start as Unix nanoseconds (decimal text)",
          column="start_ns", stored_type=int, convert="ns_text", example="1795341600000000000",
          deprecated="start_time"),
    Field("duration_ms", int, "from the earliest span's start to the latest span's end, in "
          "whole milliseconds", column=None, select="(end_ns - start_ns) / 1000000",
          written_by="", example=2103, cli=Cli("DURATION", "duration", right=True, order=2)),
    Field("span_count", int, "spans stored", example=12, cli=Cli("SPANS", right=True, order=3)),
    Field("error_count", int, "spans whose status is error", example=0,
          cli=Cli("ERRORS", right=True, order=4)),
    Field("last_received_at", datetime, "when its latest span arrived (retention)",
          served=False),
    #: hashes of the spans' attribute pairs and names (storage/attribute_keys.py)
    Field("attribute_keys", list[int] | None, served=False),
))
