"""The internal span model every normalizer reads.

One trace arrives as OTLP spans, as Coze Loop native spans, or as a mix of both; the adapters in
`normalizers.sources` turn either into `Span`, so no convention module cares how a span travelled.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import field
from typing import TypeAlias

from trajhub.normalizers.immutable import immutable

#: An attribute value with its OTLP type kept: str, bool, int (int64), float (double), bytes,
#: arrays (list) and key-value lists (dict). None stands for an empty AnyValue.
AttributeValue: TypeAlias = (
    str | bool | int | float | bytes | list["AttributeValue"] | dict[str, "AttributeValue"] | None
)
Attributes = Mapping[str, AttributeValue]

#: OTel status codes (opentelemetry.proto.trace.v1.Status.StatusCode).
STATUS_UNSET = 0
STATUS_OK = 1
STATUS_ERROR = 2


@immutable
class Event:
    name: str
    time_ns: int
    attributes: Attributes = field(default_factory=dict)


@immutable
class CozeLoopFields:
    """What a Coze Loop native span carries beyond the OTel model, exactly as sent."""

    span_type: str = ""
    status_code: int = 0
    input: str = ""
    output: str = ""
    log_id: str = ""
    workspace_id: str = ""
    service_name: str = ""
    object_storage: str = ""
    tags_string: Mapping[str, str] = field(default_factory=dict)
    tags_long: Mapping[str, int] = field(default_factory=dict)
    tags_double: Mapping[str, float] = field(default_factory=dict)
    tags_bool: Mapping[str, bool] = field(default_factory=dict)
    system_tags_string: Mapping[str, str] = field(default_factory=dict)
    system_tags_long: Mapping[str, int] = field(default_factory=dict)
    system_tags_double: Mapping[str, float] = field(default_factory=dict)


@immutable
class Span:
    """One span of one trace.

    Ids are lowercase hex; `parent_span_id` is "" for a span without a parent. Times are Unix
    nanoseconds. For a Coze Loop native span, `attributes` is the union of its tag maps (system
    tags first, then user tags), `status_code` is STATUS_ERROR when its native status_code is not
    0, and `cozeloop` holds the native fields as sent.
    """

    trace_id: str
    span_id: str
    name: str
    start_ns: int
    end_ns: int
    parent_span_id: str = ""
    kind: int = 0
    status_code: int = STATUS_UNSET
    status_message: str = ""
    attributes: Attributes = field(default_factory=dict)
    events: tuple[Event, ...] = ()
    resource: Attributes = field(default_factory=dict)
    scope_name: str = ""
    scope_version: str = ""
    cozeloop: CozeLoopFields | None = None

    @property
    def duration_ns(self) -> int:
        return max(0, self.end_ns - self.start_ns)


@immutable
class KeptTree:
    """The spans a trajectory keeps, as a tree: each kept span by id, its nearest kept
    ancestor's id ("" for the root), and the root's id."""

    spans: Mapping[str, Span]
    parent_of: Mapping[str, str]
    root_id: str
