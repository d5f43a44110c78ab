"""How the records' moments are stored and read (docs/glossary.md, "Times"): a served
`<what>_time` is RFC 3339 text, stored either as Unix nanoseconds (a bigint `_ns` column) or
as a timestamptz (an older table's `_at` column, which a deprecated `_at` alias reads too).
Declared once here, so that every record reads a stored moment the same way."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Annotated

from trajhub.records import Example, Stored


def rfc3339(ns: int) -> str:
    """Unix nanoseconds as RFC 3339 UTC text, to the microsecond (as the API serves them)."""
    return datetime.fromtimestamp(ns / 1e9, tz=UTC).isoformat().replace("+00:00", "Z")


def written_ns(column: str) -> Stored:
    """A moment the database writes as Unix nanoseconds (`column`), served as RFC 3339."""
    return Stored(column=column, written_by="database", convert="time", stored_type=int)


def written_when(column: str) -> Stored:
    """A moment the database writes as a timestamptz (`column`), served as RFC 3339: the
    `_time` field and its deprecated `_at` alias both read it."""
    return Stored(column=column, written_by="database", convert="timestamp",
                  stored_type=datetime)


#: when a row was created, as the rows with a `created_ns` column store it
CreatedTime = Annotated[str, written_ns("created_ns")]
#: when a served record was created, and last changed (an `updated_ns` column), with the
#: moment the API's examples show
Created = Annotated[CreatedTime, Example("2026-11-22T10:00:00Z")]
Updated = Annotated[str, written_ns("updated_ns"), Example("2026-11-22T10:00:00Z")]
#: when a set or an item was created or last changed (timestamptz columns)
CreatedAt = Annotated[str, written_when("created_at")]
UpdatedAt = Annotated[str, written_when("updated_at")]

__all__ = ["Created", "CreatedAt", "CreatedTime", "Updated", "UpdatedAt", "rfc3339", "written_ns",
           "written_when"]
