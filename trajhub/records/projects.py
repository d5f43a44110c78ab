"""A project as `GET /api/v1/projects` lists it (the client's `Project`), declared once
(`trajhub.records`): an aggregate of its rows of the `traces` table, computed when read
(storage/trace_reads.py, `projects`)."""

from __future__ import annotations

from typing import Annotated

from pydantic import Field

from trajhub.records import Record, Stored, computed


# no docstring: the model's description in /openapi.json would change
class ProjectEntry(Record):
    name: Annotated[str, Stored(column=None, written_by="key", select="project")]
    trace_count: Annotated[int, computed("count(*)")] = 0
    span_count: Annotated[int, computed("coalesce(sum(span_count), 0)")] = 0
    first_span_at: Annotated[str | None, computed("min(start_ns)", "time")] = Field(
        default=None, description="RFC 3339: when the earliest span started")
    last_span_at: Annotated[str | None, computed("max(end_ns)", "time")] = Field(
        default=None, description="RFC 3339: when the latest span ended")
