"""Coze Loop's native wire rules, written once for every reader of an `UploadSpan`.

cozeloop-go and cozeloop-python send times in microseconds, mark a root with parent_id "0"
(some versions send ""), and split attributes into typed tag groups. The ingest decoder, the
normalizers and the OTLP rendering of stored native spans all read spans through these.
"""

from __future__ import annotations

#: the tag groups, system tags first: a user tag of the same key wins when they are merged
TAG_GROUPS = (
    "system_tags_string",
    "system_tags_long",
    "system_tags_double",
    "tags_string",
    "tags_long",
    "tags_double",
    "tags_bool",
)

#: the parent_id a root span carries
ROOT_PARENT_ID = "0"

NS_PER_MICROSECOND = 1000


def parent_span_id(parent_id: str) -> str:
    """The wire parent_id as a span id: lowercase hex, "" for a root."""
    return "" if parent_id in ("", ROOT_PARENT_ID) else parent_id.lower()


def span_times_ns(started_at_micros: int, duration_micros: int) -> tuple[int, int]:
    """(start, end) in Unix nanoseconds; a negative duration counts as 0."""
    start_ns = started_at_micros * NS_PER_MICROSECOND
    return start_ns, start_ns + max(0, duration_micros) * NS_PER_MICROSECOND
