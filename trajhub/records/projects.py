"""A project as `GET /api/v1/projects` lists it (the client's `Project`), declared once
(`trajhub.records`): an aggregate of its rows of the `traces` table, computed when read
(storage/trace_reads.py, `projects`)."""

from __future__ import annotations

from typing import Annotated

from pydantic import Field

from trajhub.records import Record, Stored, computed
from trajhub.records.pages import deprecated_alias

_FIRST_SPAN = computed("min(start_ns)", "time")
_LAST_SPAN = computed("max(end_ns)", "time")


# no docstring: the model's description in /openapi.json would change
class ProjectEntry(Record):
    name: Annotated[str, Stored(column=None, written_by="key", select="project")]
    trace_count: Annotated[int, computed("count(*)")] = 0
    span_count: Annotated[int, computed("coalesce(sum(span_count), 0)")] = 0
    first_span_time: Annotated[str | None, _FIRST_SPAN] = Field(
        default=None, description="RFC 3339: when the earliest span started")
    last_span_time: Annotated[str | None, _LAST_SPAN] = Field(
        default=None, description="RFC 3339: when the latest span ended")
    first_span_at: Annotated[str | None, _FIRST_SPAN] = deprecated_alias(
        "first_span_time", "RFC 3339: when the earliest span started", None, renamed=True)
    last_span_at: Annotated[str | None, _LAST_SPAN] = deprecated_alias(
        "last_span_time", "RFC 3339: when the latest span ended", None, renamed=True)
