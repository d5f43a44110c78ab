"""OTLP/JSON → `ExportTraceServiceRequest`, by walking the parsed dicts.

`json_format.ParseDict` is far slower (bench/README.md, "Decoding and storing spans") and reads
ids as base64; OTLP/JSON ids are hex. Lenient as
the Collector is: lowerCamelCase or snake_case keys, 64-bit ints as strings or numbers, enums as
ints or names, unknown fields ignored. An id that is not valid hex is kept as the empty id, so
per-span validation rejects that span instead of the whole request.

Numbers are checked against their protobuf type (a negative `flags`, an `intValue` of 2^64 or a
`kind` of 2^40 cannot be represented), and attribute values may nest only as deep as a protobuf
parser accepts (`MAX_MESSAGE_DEPTH`), so the stored span always parses again. When the caller
collects rejections, a span with such a value is left out and the reason, naming the field, is
reported; the rest of the request is kept.
"""

from __future__ import annotations

import base64
import binascii
import math
import re
from collections.abc import Callable, Mapping
from typing import Any, NamedTuple

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, InstrumentationScope, KeyValue
from opentelemetry.proto.resource.v1.resource_pb2 import Resource
from opentelemetry.proto.trace.v1.trace_pb2 import Span

from trajhub.service.errors import BadRequest

_SPAN_KIND = {name: value for value, name in enumerate(
    ["SPAN_KIND_UNSPECIFIED", "SPAN_KIND_INTERNAL", "SPAN_KIND_SERVER", "SPAN_KIND_CLIENT",
     "SPAN_KIND_PRODUCER", "SPAN_KIND_CONSUMER"])}
_STATUS_CODE = {"STATUS_CODE_UNSET": 0, "STATUS_CODE_OK": 1, "STATUS_CODE_ERROR": 2}

#: upb's default recursion limit: the deepest message nesting a protobuf parser accepts,
#: counted from the ExportTraceServiceRequest (level 1). gRPC and OTLP/HTTP protobuf bodies
#: are held to it by the parser itself; OTLP/JSON is held to it here.
MAX_MESSAGE_DEPTH = 100
# where each kind of attribute list sits: request 1 → ResourceSpans 2 → Resource / ScopeSpans 3
# → Scope / Span 4 → Event / Link 5; the KeyValue is one level below, its AnyValue two.
_RESOURCE_VALUE_DEPTH = 5
_SCOPE_VALUE_DEPTH = 6
_SPAN_VALUE_DEPTH = 6
_EVENT_VALUE_DEPTH = 7

_UINT32 = (0, 2**32 - 1)
_INT32 = (-(2**31), 2**31 - 1)
_UINT64 = (0, 2**64 - 1)
_INT64 = (-(2**63), 2**63 - 1)
_TYPE_NAMES = {_UINT32: "uint32", _INT32: "int32", _UINT64: "uint64", _INT64: "int64"}

_HEX = re.compile(r"(?:[0-9a-fA-F]{2})+")


def _get(obj: Mapping[str, Any], camel: str, snake: str) -> Any:
    value = obj.get(camel)
    return obj.get(snake) if value is None else value


def _list(obj: Mapping[str, Any], camel: str, snake: str) -> list[Any]:
    value = _get(obj, camel, snake)
    if value is None:
        return []
    if not isinstance(value, list):
        raise BadRequest(f"'{camel}' must be an array")
    return value


def _dict(value: Any, what: str) -> Mapping[str, Any]:
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise BadRequest(f"'{what}' must be an object")
    return value


def _int(value: Any, what: str, bounds: tuple[int, int]) -> int:
    """An integer field of the protobuf type `bounds` (e.g. _UINT64)."""
    if value is None or value == "":
        return 0
    if isinstance(value, bool):
        raise BadRequest(f"'{what}' must be an integer")
    if isinstance(value, float) and not value.is_integer():
        raise BadRequest(f"'{what}' must be an integer, got {value!r}")
    try:
        number = int(value)
    except (TypeError, ValueError, OverflowError):
        raise BadRequest(f"'{what}' must be an integer, got {str(value)[:40]!r}") from None
    low, high = bounds
    if not low <= number <= high:
        raise BadRequest(f"'{what}' {number} is out of range for {_TYPE_NAMES[bounds]} "
                         f"({low}..{high})")
    return number


def _enum(value: Any, names: Mapping[str, int], what: str) -> int:
    if isinstance(value, str) and value in names:
        return names[value]
    return _int(value, what, _INT32)


def _hex_id(value: Any) -> bytes:
    """Hex digits → bytes; anything else (0x prefixes, spaces, signs) → the empty id."""
    if not value or not isinstance(value, str) or not _HEX.fullmatch(value):
        return b""
    return bytes.fromhex(value)


def _double(value: Any) -> float:
    if isinstance(value, str):
        special = {"NaN": math.nan, "Infinity": math.inf, "-Infinity": -math.inf}
        if value in special:
            return special[value]
    try:
        return float(value)
    except (TypeError, ValueError):
        raise BadRequest(f"'doubleValue' must be a number, got {value!r}") from None


def _any_value(obj: Any, out: AnyValue, depth: int) -> None:
    """Fill `out`, an AnyValue at message level `depth`."""
    if depth > MAX_MESSAGE_DEPTH:
        raise BadRequest(f"an attribute value nests deeper than the protobuf limit of "
                         f"{MAX_MESSAGE_DEPTH} messages")
    obj = _dict(obj, "value")
    for key, value in obj.items():
        if key in ("stringValue", "string_value"):
            out.string_value = value if isinstance(value, str) else str(value)
        elif key in ("boolValue", "bool_value"):
            out.bool_value = bool(value)
        elif key in ("intValue", "int_value"):
            out.int_value = _int(value, "intValue", _INT64)
        elif key in ("doubleValue", "double_value"):
            out.double_value = _double(value)
        elif key in ("bytesValue", "bytes_value"):
            try:
                out.bytes_value = base64.b64decode(value or "", validate=True)
            except (binascii.Error, TypeError):
                raise BadRequest("'bytesValue' must be base64") from None
        elif key in ("arrayValue", "array_value"):
            array = out.array_value
            array.SetInParent()
            for item in _list(_dict(value, "arrayValue"), "values", "values"):
                _any_value(item, array.values.add(), depth + 2)
        elif key in ("kvlistValue", "kvlist_value"):
            kvlist = out.kvlist_value
            kvlist.SetInParent()
            _key_values(_list(_dict(value, "kvlistValue"), "values", "values"), kvlist.values,
                        depth + 3)
        else:
            continue
        return


def _key_values(items: list[Any], out: Any, depth: int) -> None:
    """Attributes whose AnyValues sit at message level `depth`."""
    for item in items:
        item = _dict(item, "attribute")
        kv: KeyValue = out.add()
        kv.key = str(item.get("key", ""))
        _any_value(item.get("value"), kv.value, depth)


def _scope(obj: Mapping[str, Any], out: InstrumentationScope) -> None:
    out.name = str(obj.get("name") or "")
    out.version = str(obj.get("version") or "")
    _key_values(_list(obj, "attributes", "attributes"), out.attributes, _SCOPE_VALUE_DEPTH)
    out.dropped_attributes_count = _dropped(obj, "droppedAttributesCount",
                                            "dropped_attributes_count")


def _envelope(raw: Mapping[str, Any], key: str, out: Any,
              read: Callable[[Mapping[str, Any], Any], None], rejected: list[str] | None) -> str:
    """Read `raw[key]` (a resource or a scope) into `out` with `read`. Invalid, it raises
    BadRequest, or, when spans are rejected one by one (`rejected`), gives the reason its spans
    are rejected for; "" when it is valid."""
    try:
        if raw.get(key) is not None:
            out.SetInParent()
            read(_dict(raw.get(key), key), out)
    except BadRequest as error:
        if rejected is None:
            raise
        return f"{key}: {error.message}"
    return ""


def _resource(obj: Mapping[str, Any], out: Resource) -> None:
    _key_values(_list(obj, "attributes", "attributes"), out.attributes, _RESOURCE_VALUE_DEPTH)
    out.dropped_attributes_count = _dropped(obj, "droppedAttributesCount",
                                            "dropped_attributes_count")


def _dropped(obj: Mapping[str, Any], camel: str, snake: str) -> int:
    return _int(_get(obj, camel, snake), camel, _UINT32)


def _span(obj: Mapping[str, Any], out: Span) -> None:
    out.trace_id = _hex_id(_get(obj, "traceId", "trace_id"))
    out.span_id = _hex_id(_get(obj, "spanId", "span_id"))
    out.parent_span_id = _hex_id(_get(obj, "parentSpanId", "parent_span_id"))
    out.trace_state = str(_get(obj, "traceState", "trace_state") or "")
    out.flags = _int(obj.get("flags"), "flags", _UINT32)
    out.name = str(obj.get("name") or "")
    out.kind = _enum(obj.get("kind"), _SPAN_KIND, "kind")  # type: ignore[assignment]
    out.start_time_unix_nano = _int(
        _get(obj, "startTimeUnixNano", "start_time_unix_nano"), "startTimeUnixNano", _UINT64)
    out.end_time_unix_nano = _int(
        _get(obj, "endTimeUnixNano", "end_time_unix_nano"), "endTimeUnixNano", _UINT64)
    _key_values(_list(obj, "attributes", "attributes"), out.attributes, _SPAN_VALUE_DEPTH)
    out.dropped_attributes_count = _dropped(obj, "droppedAttributesCount",
                                            "dropped_attributes_count")
    for raw in _list(obj, "events", "events"):
        raw = _dict(raw, "event")
        event = out.events.add()
        event.time_unix_nano = _int(_get(raw, "timeUnixNano", "time_unix_nano"),
                                    "events.timeUnixNano", _UINT64)
        event.name = str(raw.get("name") or "")
        _key_values(_list(raw, "attributes", "attributes"), event.attributes,
                    _EVENT_VALUE_DEPTH)
        event.dropped_attributes_count = _dropped(raw, "droppedAttributesCount",
                                                  "dropped_attributes_count")
    out.dropped_events_count = _dropped(obj, "droppedEventsCount", "dropped_events_count")
    for raw in _list(obj, "links", "links"):
        raw = _dict(raw, "link")
        link = out.links.add()
        link.trace_id = _hex_id(_get(raw, "traceId", "trace_id"))
        link.span_id = _hex_id(_get(raw, "spanId", "span_id"))
        link.trace_state = str(_get(raw, "traceState", "trace_state") or "")
        link.flags = _int(raw.get("flags"), "links.flags", _UINT32)
        _key_values(_list(raw, "attributes", "attributes"), link.attributes, _EVENT_VALUE_DEPTH)
        link.dropped_attributes_count = _dropped(raw, "droppedAttributesCount",
                                                 "dropped_attributes_count")
    out.dropped_links_count = _dropped(obj, "droppedLinksCount", "dropped_links_count")
    if obj.get("status") is not None:
        status = _dict(obj.get("status"), "status")
        out.status.SetInParent()
        out.status.message = str(status.get("message") or "")
        out.status.code = _enum(status.get("code"), _STATUS_CODE, "status.code")  # type: ignore[assignment]


class Envelopes(NamedTuple):
    """One signal's nesting, each level as (lowerCamelCase key, snake_case key = the protobuf
    field): resources → scopes → items."""

    resources: tuple[str, str]
    scopes: tuple[str, str]
    items: tuple[str, str]
    #: what one item is called in a message about its shape
    item: str


SPANS = Envelopes(("resourceSpans", "resource_spans"), ("scopeSpans", "scope_spans"),
                  ("spans", "spans"), "span")


def read_envelopes(obj: Mapping[str, Any], request: Any, envelopes: Envelopes,
                   read_item: Callable[[Mapping[str, Any], Any], None],
                   label: Callable[[Any], str], rejected: list[str] | None) -> None:
    """Fill `request`, an export request message, from OTLP/JSON's resources → scopes → items.
    With `rejected`, an item with an invalid value (or every item of an invalid resource or
    scope) is left out and one reason per item is appended instead; only a malformed request
    structure raises."""
    for raw_r in _list(obj, *envelopes.resources):
        raw_r = _dict(raw_r, envelopes.resources[0])
        resource = getattr(request, envelopes.resources[1]).add()
        envelope_error = _envelope(raw_r, "resource", resource.resource, _resource, rejected)
        resource.schema_url = str(_get(raw_r, "schemaUrl", "schema_url") or "")
        for raw_s in _list(raw_r, *envelopes.scopes):
            raw_s = _dict(raw_s, envelopes.scopes[0])
            scope = getattr(resource, envelopes.scopes[1]).add()
            scope_error = envelope_error or _envelope(raw_s, "scope", scope.scope, _scope,
                                                      rejected)
            scope.schema_url = str(_get(raw_s, "schemaUrl", "schema_url") or "")
            items = getattr(scope, envelopes.items[1])
            for raw in _list(raw_s, *envelopes.items):
                if scope_error:
                    assert rejected is not None
                    rejected.append(f"{label(raw)}: {scope_error}")
                    continue
                item = items.add()
                try:
                    read_item(_dict(raw, envelopes.item), item)
                except BadRequest as error:
                    if rejected is None:
                        raise
                    del items[-1]
                    rejected.append(f"{label(raw)}: {error.message}")


def _label(raw: Any) -> str:
    name = raw.get("name") if isinstance(raw, Mapping) else None
    return f"span {str(name or '')[:80]!r}"


def parse_request(obj: Any, rejected: list[str] | None = None) -> ExportTraceServiceRequest:
    """Build the request message from parsed OTLP/JSON; BadRequest names what is wrong.

    With `rejected`, a span (or every span of a resource or scope) with an invalid value is
    left out and one reason per span is appended instead; only a malformed request structure
    raises."""
    request = ExportTraceServiceRequest()
    # a nested null reads as an absent field, but the body itself must be an object: `null`
    # is not an ExportTraceServiceRequest (its schema in /openapi.json says object)
    if not isinstance(obj, Mapping):
        raise BadRequest("the body must be a JSON object (an ExportTraceServiceRequest)")
    read_envelopes(obj, request, SPANS, _span, _label, rejected)
    return request
