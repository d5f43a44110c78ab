"""Adapters from the two wire models to `normalizers.model.Span`.

OTLP spans arrive as protobuf messages (the OTLP/JSON decoder builds the same messages); Coze
Loop native spans arrive as the `UploadSpan` JSON objects of `POST /v1/loop/traces/ingest`.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from typing import Any

from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue
from opentelemetry.proto.trace.v1.trace_pb2 import ResourceSpans
from opentelemetry.proto.trace.v1.trace_pb2 import Span as OtlpSpan

from trajhub.normalizers import cozeloop_wire
from trajhub.normalizers.coerce import to_int, to_str
from trajhub.normalizers.model import (
    STATUS_ERROR,
    STATUS_UNSET,
    Attributes,
    AttributeValue,
    CozeLoopFields,
    Event,
    Span,
)


def any_value(value: AnyValue) -> AttributeValue:
    """An OTLP AnyValue as a Python value of the matching type."""
    which = value.WhichOneof("value")
    if which == "string_value":
        return value.string_value
    if which == "int_value":
        return value.int_value
    if which == "bool_value":
        return value.bool_value
    if which == "double_value":
        return value.double_value
    if which == "bytes_value":
        return value.bytes_value
    if which == "array_value":
        return [any_value(v) for v in value.array_value.values]
    if which == "kvlist_value":
        return attributes(value.kvlist_value.values)
    return None


def attributes(pairs: Iterable[KeyValue]) -> dict[str, AttributeValue]:
    """Key-value pairs as a dict; a repeated key keeps its last value."""
    out: dict[str, AttributeValue] = {}
    for kv in pairs:
        value = kv.value
        # strings are most attributes: a non-empty one is read without the general dispatch
        # (an empty string_value may also be another type, or no value: any_value tells)
        out[kv.key] = value.string_value or any_value(value)
    return out


def span_from_otlp(
    span: OtlpSpan,
    resource: Attributes,
    scope_name: str = "",
    scope_version: str = "",
) -> Span:
    return Span(
        trace_id=span.trace_id.hex(),
        span_id=span.span_id.hex(),
        parent_span_id=span.parent_span_id.hex(),
        name=span.name,
        kind=span.kind,
        start_ns=span.start_time_unix_nano,
        end_ns=span.end_time_unix_nano,
        status_code=span.status.code,
        status_message=span.status.message,
        attributes=attributes(span.attributes),
        events=tuple(
            Event(name=e.name, time_ns=e.time_unix_nano, attributes=attributes(e.attributes))
            for e in span.events
        ),
        resource=resource,
        scope_name=scope_name,
        scope_version=scope_version,
    )


def spans_from_resource_spans(batches: Iterable[ResourceSpans]) -> Iterator[Span]:
    for rs in batches:
        resource = attributes(rs.resource.attributes)
        for ss in rs.scope_spans:
            for span in ss.spans:
                yield span_from_otlp(span, resource, ss.scope.name, ss.scope.version)


def _tag_map(raw: Mapping[str, Any], key: str) -> dict[str, Any]:
    value = raw.get(key)
    return dict(value) if isinstance(value, Mapping) else {}


def _int(value: Any) -> int:
    # ingest stores a native span only when these are integers (service/ingest/decode.py)
    return to_int(value) or 0


def span_from_cozeloop(raw: Mapping[str, Any]) -> Span:
    """A Coze Loop native `UploadSpan` (cozeloop-go / cozeloop-python) as a Span.

    Times are microseconds on the wire; a root has parent_id "0" (or "")."""
    native = CozeLoopFields(
        span_type=to_str(raw.get("span_type")),
        status_code=_int(raw.get("status_code")),
        input=to_str(raw.get("input")),
        output=to_str(raw.get("output")),
        log_id=to_str(raw.get("log_id")),
        workspace_id=to_str(raw.get("workspace_id")),
        service_name=to_str(raw.get("service_name")),
        object_storage=to_str(raw.get("object_storage")),
        **{group: _tag_map(raw, group) for group in cozeloop_wire.TAG_GROUPS},
    )
    merged: dict[str, AttributeValue] = {}
    for group in cozeloop_wire.TAG_GROUPS:
        merged.update(getattr(native, group))
    start_ns, end_ns = cozeloop_wire.span_times_ns(_int(raw.get("started_at_micros")),
                                                   _int(raw.get("duration_micros")))
    error = to_str(native.tags_string.get("error"))
    return Span(
        trace_id=to_str(raw.get("trace_id")).lower(),
        span_id=to_str(raw.get("span_id")).lower(),
        parent_span_id=cozeloop_wire.parent_span_id(to_str(raw.get("parent_id"))),
        name=to_str(raw.get("span_name")),
        start_ns=start_ns,
        end_ns=end_ns,
        status_code=STATUS_ERROR if native.status_code != 0 else STATUS_UNSET,
        status_message=error if native.status_code != 0 else "",
        attributes=merged,
        resource={"service.name": native.service_name} if native.service_name else {},
        cozeloop=native,
    )
