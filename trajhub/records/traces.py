"""The trace summary (a row of `GET /api/v1/traces`, of the `traces` table, and of
`trajhub traces list`), declared once (`trajhub.records`). The derivation service fills it from
a trace's stored spans (service/derivation.py, `trace_row`)."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated

from pydantic import Field

from trajhub.records import Cli, Example, Record, Stored, StoredOnly, computed
from trajhub.records.pages import deprecated_alias
from trajhub.records.trajectories import TRACE_ID


class TraceSummary(Record):
    """A trace as the trace list shows it."""

    stored_only = (
        StoredOnly("last_received_at", datetime),
        #: hashes of the spans' attribute pairs and names (storage/attribute_keys.py)
        StoredOnly("attribute_keys", list[int] | None),
    )

    trace_id: Annotated[str, Stored(written_by="key"), Cli("TRACE ID"), Example(TRACE_ID)]
    root_span_id: Annotated[str, Example("00f067aa0ba902b7")] = Field(
        default="", description="the root span (the earliest one without a parent)")
    root_span_name: Annotated[
        str,
        Stored(column="root_name"),
        Cli("ROOT SPAN", "clip", order=6),
        Example("LangGraph"),
    ] = Field(default="", description="the root span's name")
    service_name: Annotated[str, Cli("SERVICE", order=5), Example("weather-agent")] = Field(
        default="", description="the root span's resource `service.name`")
    start_time: Annotated[
        str,
        Stored(column="start_ns", convert="time", stored_type=int),
        Cli("START", "when", order=1),
        Example("2026-11-22T10:00:00Z"),
    ] = Field(default="", description="RFC 3339: when the earliest span started")
    end_time: Annotated[
        str,
        Stored(column="end_ns", convert="time", stored_type=int),
        Example("2026-11-22T10:00:02.103000Z"),
    ] = Field(default="", description="RFC 3339: when the latest span ended")
    start_time_unix_nano: Annotated[
        str,
        Stored(column="start_ns", convert="ns_text", stored_type=int),
        Example("1795341600000000000"),
    ] = deprecated_alias("start_time", "the start as Unix nanoseconds (decimal text)", "")
    duration_ms: Annotated[
        int,
        computed("(end_ns - start_ns) / 1000000"),
        Cli("DURATION", "duration", right=True, order=2),
        Example(2103),
    ] = Field(default=0, description="from the earliest span's start to the latest span's end, in "
              "whole milliseconds")
    span_count: Annotated[int, Cli("SPANS", right=True, order=3), Example(12)] = Field(
        default=0, description="spans stored")
    error_count: Annotated[int, Cli("ERRORS", right=True, order=4), Example(0)] = Field(
        default=0, description="spans whose status is error")
