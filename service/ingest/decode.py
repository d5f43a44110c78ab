"""Request bodies → rows for the `spans` table.

Runs in the ingest worker processes: decompression (bounded, so a gzip bomb cannot exhaust
memory), decoding, per-span validation and the conversion of each span to one row.

Validation is per span, the same for every transport: a span is rejected (OTLP
`partial_success`, or the Coze Loop answer's `msg`), naming the field, when its ids are not
hex of the right length or all zero, when a number is out of its range (times must be below
2^63 ns, the year 2262, which is what a PostgreSQL bigint holds), when its project name is
invalid, or when a value nests deeper than a protobuf parser accepts. The rest is stored.
"""

from __future__ import annotations

import hashlib
import re
import zlib
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar, TypeVar

import orjson
from google.protobuf.message import DecodeError, Message
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.common.v1.common_pb2 import KeyValue
from opentelemetry.proto.trace.v1.trace_pb2 import ResourceSpans, Span

from trajhub.normalizers import cozeloop_wire
from trajhub.service.errors import BadRequest, PayloadTooLarge, UnsupportedMediaType
from trajhub.service.ingest.otlp_json import parse_request
from trajhub.service.projects import DEFAULT_PROJECT, InvalidProject, validate_project
from trajhub.storage.compression import compress_body
from trajhub.storage.pgtext import pg_text
from trajhub.storage.span_writer import SpanWrite

#: what a stored span's `body` holds: a serialized OTLP Span, or Coze Loop's native JSON, as
#: received and compressed (storage/compression.py)
FORMAT_OTLP = 1
FORMAT_COZELOOP = 2

#: the largest time a span can have: PostgreSQL's bigint (year 2262 in Unix nanoseconds)
MAX_TIME_NS = 2**63 - 1
_INT64 = (-(2**63), 2**63 - 1)
_INT32 = (-(2**31), 2**31 - 1)
#: OTLP SpanKind and Status.code values
_SPAN_KINDS = range(0, 6)
_STATUS_CODES = range(0, 3)
#: Attribute values longer than this stay only in the span body, not in the filterable copy.
_FILTERABLE_MAX_CHARS = 256
#: How many rejected-item reasons one response names.
_MAX_REASONS = 5
#: an OTLP export request message (traces or logs)
Export = TypeVar("Export", bound=Message)
#: a record of one signal in a request: a span, a log record
Record = TypeVar("Record")

_ZERO_TRACE = bytes(16)
_ZERO_SPAN = bytes(8)
_HEX = re.compile(r"[0-9a-fA-F]+")
#: how deep a native span's JSON may nest: its OTLP rendering turns each object level into
#: three message levels (KeyValueList, KeyValue, AnyValue), and must stay within the protobuf
#: limit (MAX_MESSAGE_DEPTH)
MAX_NATIVE_DEPTH = 30


def decompress(body: bytes, encoding: str, limit: int) -> bytes:
    """Undo Content-Encoding; PayloadTooLarge once the output passes `limit` bytes."""
    encoding = encoding.strip().lower()
    if encoding in ("", "identity", "none"):
        if len(body) > limit:
            raise PayloadTooLarge(f"request body of {len(body)} bytes exceeds the limit of {limit}")
        return body
    if encoding == "gzip":
        wbits = 16 + zlib.MAX_WBITS
    elif encoding == "deflate":
        wbits = zlib.MAX_WBITS  # zlib-wrapped, as HTTP's "deflate" is; raw deflate is retried
    else:
        raise UnsupportedMediaType(
            f"unsupported Content-Encoding {encoding!r}: use gzip, deflate or none")
    try:
        return _bounded_inflate(body, wbits, limit)
    except zlib.error:
        if encoding == "deflate":
            try:
                return _bounded_inflate(body, -zlib.MAX_WBITS, limit)
            except zlib.error:
                pass
        raise BadRequest(f"body is not valid {encoding} data") from None


def _bounded_inflate(body: bytes, wbits: int, limit: int) -> bytes:
    inflater = zlib.decompressobj(wbits)
    out = inflater.decompress(body, limit + 1)
    if len(out) > limit or inflater.unconsumed_tail:
        raise PayloadTooLarge(f"decompressed request body exceeds the limit of {limit} bytes")
    out += inflater.flush()
    if not inflater.eof:
        raise BadRequest("compressed body is truncated")
    if len(out) > limit:
        raise PayloadTooLarge(f"decompressed request body exceeds the limit of {limit} bytes")
    return out


@dataclass
class Rejections:
    """The items of one request that were rejected: how many, and the first few distinct
    reasons, which the partial-success answer names."""

    #: what the items are, as the answer names them
    noun: ClassVar[str] = "span(s)"
    rejected: int = 0
    reasons: list[str] = field(default_factory=list)

    def reject(self, reason: str) -> None:
        self.rejected += 1
        if len(self.reasons) < _MAX_REASONS and reason not in self.reasons:
            self.reasons.append(reason)

    @property
    def error_message(self) -> str:
        if not self.rejected:
            return ""
        return f"rejected {self.rejected} {self.noun}: " + "; ".join(self.reasons)


@dataclass
class Batch(Rejections):
    """What one request stores: rows keyed by (project, trace_id, span_id), the resource
    envelopes they reference, and the spans rejected."""

    rows: dict[tuple[str, str, str], SpanWrite] = field(default_factory=dict)
    resources: dict[int, bytes] = field(default_factory=dict)
    #: the decoded OTLP span of each OTLP row, so deriving from this request parses nothing again
    parsed: dict[tuple[str, str, str], Span] = field(default_factory=dict)

    def add(self, row: SpanWrite, parsed: Span | None = None) -> None:
        key = (row.project, row.trace_id, row.span_id)
        kept = self.rows.get(key)
        # a span sent twice in one request: keep the version that ended last
        if kept is None or row.end_ns > kept.end_ns:
            self.rows[key] = row
            if parsed is not None:
                self.parsed[key] = parsed


def _filterable_key(key: str) -> bool:
    return "\x00" not in key


def _filterable_otlp(attributes: Iterable[KeyValue]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for kv in attributes:
        key = kv.key
        if not _filterable_key(key):
            continue
        value = kv.value
        # strings are most attributes: a non-empty one is read without the oneof lookup (an
        # empty string_value may also be another type, or no value: WhichOneof tells)
        s = value.string_value
        if s:
            if len(s) <= _FILTERABLE_MAX_CHARS and "\x00" not in s:
                out[key] = s
            continue
        which = value.WhichOneof("value")
        if which == "string_value":
            out[key] = s
        elif which == "int_value":
            out[key] = value.int_value
        elif which == "bool_value":
            out[key] = value.bool_value
        elif which == "double_value":
            d = value.double_value
            if d == d and d not in (float("inf"), float("-inf")):
                out[key] = d
    return out


def _filterable_tags(tag_maps: Iterable[Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for tags in tag_maps:
        if not isinstance(tags, Mapping):
            continue
        for key, value in tags.items():
            if not _filterable_key(str(key)):
                continue
            if isinstance(value, str):
                if len(value) <= _FILTERABLE_MAX_CHARS and "\x00" not in value:
                    out[str(key)] = value
            elif isinstance(value, (bool, int)) or (
                isinstance(value, float) and value == value and abs(value) != float("inf")
            ):
                out[str(key)] = value
    return out


def resource_project(given: str | None, attributes: Iterable[Any]) -> tuple[str, str]:
    """The project a resource's records are stored under (the request's, else the resource's
    `trajhub.project`, else the default) and why it is invalid ("" when it is valid)."""
    project = given or _string_attribute(attributes, "trajhub.project") or DEFAULT_PROJECT
    try:
        validate_project(project)
    except InvalidProject as error:
        return project, f"trajhub.project: {error}"
    return project, ""


def scope_envelope(resource: Any, scope: Any) -> tuple[bytes, int]:
    """The stored envelope of one instrumentation scope's records: its resource and scope
    without the records, as a ResourceSpans (a ResourceLogs has the same field numbers, so
    both signals' envelopes are the same bytes and stored once), and its id."""
    envelope = ResourceSpans(resource=resource.resource, schema_url=resource.schema_url)
    envelope.scope_spans.add(scope=scope.scope, schema_url=scope.schema_url)
    envelope_bytes = envelope.SerializeToString(deterministic=True)
    return envelope_bytes, _resource_id(envelope_bytes)


@dataclass(slots=True)
class Scope:
    """One instrumentation scope of a request, as its records are decoded: the resource it came
    with (a ResourceSpans or ResourceLogs), the project its records are stored under and why
    that is invalid ("" when it is valid), and its envelope's id. Set `kept` when one of its
    records is kept: only then is the envelope stored."""

    resource: Any
    project: str
    project_problem: str
    resource_id: int
    kept: bool = False


def each_scope(resources: Iterable[Any], project: str | None, envelopes: dict[int, bytes],
               scopes: Callable[[Any], Iterable[Any]],
               records: Callable[[Any], Sequence[Record]]
               ) -> Iterator[tuple[Scope, Sequence[Record]]]:
    """Every instrumentation scope with records of one signal's request, with its records
    (`scopes` of a resource, `records` of a scope); `project` as in `resource_project`. Each
    scope's envelope goes into `envelopes` once the caller has marked the scope `kept`."""
    for resource in resources:
        scope_project, project_problem = resource_project(project, resource.resource.attributes)
        for scope in scopes(resource):
            items = records(scope)
            if not items:
                continue
            envelope_bytes, resource_id = scope_envelope(resource, scope)
            decoded = Scope(resource, scope_project, project_problem, resource_id)
            yield decoded, items
            if decoded.kept:
                envelopes[resource_id] = envelope_bytes


def _resource_id(envelope: bytes) -> int:
    return int.from_bytes(hashlib.blake2b(envelope, digest_size=8).digest(), "big", signed=True)


def _string_attribute(attributes: Iterable[KeyValue], key: str) -> str:
    for kv in attributes:
        if kv.key == key and kv.value.WhichOneof("value") == "string_value":
            return kv.value.string_value
    return ""


def parse_export(body: bytes, json: bool, message: type[Export],
                 from_json: Callable[[Any, list[str] | None], Export],
                 rejected: list[str] | None = None) -> Export:
    """Decode one signal's export request: OTLP/JSON (read by `from_json`) when `json`, else
    protobuf; BadRequest names what is wrong."""
    if json:
        try:
            obj = orjson.loads(body)
        except orjson.JSONDecodeError as exc:
            raise BadRequest(f"body is not valid JSON: {exc}") from None
        return from_json(obj, rejected)
    try:
        return message.FromString(body)
    except DecodeError as exc:
        raise BadRequest(
            f"body is not a valid {message.DESCRIPTOR.name} protobuf: {exc}") from None


def parse_otlp(body: bytes, content_type: str, rejected: list[str] | None = None
               ) -> ExportTraceServiceRequest:
    """Decode an OTLP body: "protobuf" or "json". With `rejected`, OTLP/JSON spans with an
    invalid value are left out and named there (see `parse_request`)."""
    return parse_export(body, content_type == "json", ExportTraceServiceRequest, parse_request,
                        rejected)


def _otlp_span_problem(span: Span) -> str:
    """Why this span cannot be stored, or ""."""
    trace_id, span_id, parent = span.trace_id, span.span_id, span.parent_span_id
    if len(trace_id) != 16 or trace_id == _ZERO_TRACE:
        return f"invalid trace_id (need 16 non-zero bytes, got {trace_id.hex() or 'empty'})"
    if len(span_id) != 8 or span_id == _ZERO_SPAN:
        return f"invalid span_id (need 8 non-zero bytes, got {span_id.hex() or 'empty'})"
    if parent and len(parent) != 8:
        return f"invalid parent_span_id {parent.hex()}"
    for what, value in (("start_time_unix_nano", span.start_time_unix_nano),
                        ("end_time_unix_nano", span.end_time_unix_nano)):
        if value > MAX_TIME_NS:
            return f"{what} {value} is beyond the largest storable time (2^63-1 ns, year 2262)"
    for event in span.events:
        if event.time_unix_nano > MAX_TIME_NS:
            return (f"events.time_unix_nano {event.time_unix_nano} is beyond the largest "
                    f"storable time (2^63-1 ns, year 2262)")
    if span.kind not in _SPAN_KINDS:
        return f"kind {span.kind} is not a SpanKind (0-5)"
    if span.status.code not in _STATUS_CODES:
        return f"status.code {span.status.code} is not a status code (0-2)"
    return ""


def otlp_batch(request: ExportTraceServiceRequest, project: str | None,
               rejected: Iterable[str] = ()) -> Batch:
    """Validate every span and convert the valid ones to rows.

    `project` comes from a request header; without one, each resource's `trajhub.project`
    attribute decides, else the default project. `rejected` are the spans the decoder already
    left out."""
    batch = Batch()
    for reason in rejected:
        batch.reject(reason)
    for scope, spans in each_scope(request.resource_spans, project, batch.resources,
                                   lambda rs: rs.scope_spans, lambda ss: ss.spans):
        service = pg_text(_string_attribute(scope.resource.resource.attributes, "service.name"))
        for span in spans:
            problem = scope.project_problem or _otlp_span_problem(span)
            if problem:
                batch.reject(f"span {span.name[:80]!r}: {problem}")
                continue
            parent = span.parent_span_id
            scope.kept = True
            batch.add(SpanWrite(
                project=scope.project,
                trace_id=span.trace_id.hex(),
                span_id=span.span_id.hex(),
                parent_span_id="" if parent == _ZERO_SPAN else parent.hex(),
                name=pg_text(span.name),
                kind=span.kind,
                start_ns=span.start_time_unix_nano,
                end_ns=span.end_time_unix_nano,
                status_code=span.status.code,
                service_name=service,
                resource_id=scope.resource_id,
                format=FORMAT_OTLP,
                attributes=orjson.dumps(_filterable_otlp(span.attributes)).decode(),
                body=compress_body(span.SerializeToString()),
            ), span)
    return batch


def _is_hex(value: Any, length: int) -> bool:
    """Exactly `length` hex digits, not all zero (no 0x, sign, spaces or underscores)."""
    return (isinstance(value, str) and len(value) == length and _HEX.fullmatch(value) is not None
            and int(value, 16) != 0)


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _json_problem(raw: Mapping[str, Any]) -> str:
    """The first value in a native span that trajhub cannot carry: an integer outside int64
    (OTLP's intValue) or nesting deeper than MAX_NATIVE_DEPTH. "" when there is none."""
    stack: list[tuple[tuple[Any, ...], Any]] = [((k,), v) for k, v in raw.items()
                                                if isinstance(v, (int, dict, list))]
    while stack:
        path, value = stack.pop()
        if len(path) > MAX_NATIVE_DEPTH:
            return f"{_json_path(path)} nests deeper than {MAX_NATIVE_DEPTH} levels"
        if isinstance(value, dict):
            stack.extend(((*path, k), v) for k, v in value.items()
                         if isinstance(v, (int, dict, list)))
        elif isinstance(value, list):
            stack.extend(((*path, i), v) for i, v in enumerate(value)
                         if isinstance(v, (int, dict, list)))
        elif not isinstance(value, bool) and not _INT64[0] <= value <= _INT64[1]:
            return f"{_json_path(path)} {value} is out of range for int64"
    return ""


def _json_path(path: tuple[Any, ...]) -> str:
    return "".join(f"[{p}]" if isinstance(p, int) else (f".{p}" if i else str(p))
                   for i, p in enumerate(path))


def _cozeloop_problem(raw: Mapping[str, Any]) -> str:
    """Why this native span cannot be stored, or ""."""
    trace_id, span_id = raw.get("trace_id"), raw.get("span_id")
    parent = raw.get("parent_id") or ""
    if not _is_hex(trace_id, 32):
        return f"invalid trace_id {trace_id!r} (need 32 hex digits, not all 0)"
    if not _is_hex(span_id, 16):
        return f"invalid span_id {span_id!r} (need 16 hex digits, not all 0)"
    if not isinstance(parent, str) or (
            parent not in ("", cozeloop_wire.ROOT_PARENT_ID) and not _is_hex(parent, 16)):
        return f"invalid parent_id {parent!r} (need 16 hex digits, or \"0\" for a root)"
    start_us: Any = raw.get("started_at_micros")
    duration_us: Any = raw.get("duration_micros", 0)
    status_code: Any = raw.get("status_code", 0)
    for what, value in (("started_at_micros", start_us), ("duration_micros", duration_us),
                        ("status_code", status_code)):
        if not _is_int(value):
            return f"{what} must be an integer"
    if start_us < 0:
        return f"started_at_micros {start_us} is negative"
    if duration_us < 0:
        return f"duration_micros {duration_us} is negative"
    if cozeloop_wire.span_times_ns(start_us, duration_us)[1] > MAX_TIME_NS:
        return ("started_at_micros + duration_micros is beyond the largest storable time "
                "(2^63-1 ns, year 2262)")
    if not _INT32[0] <= status_code <= _INT32[1]:
        return f"status_code {status_code} is out of range for int32"
    return _json_problem(raw)


def cozeloop_batch(body: bytes, project: str | None) -> Batch:
    """Coze Loop native `{"spans": [UploadSpan, …]}` → rows; the body of each row is the span's
    own JSON, as sent."""
    try:
        obj = orjson.loads(body)
    except orjson.JSONDecodeError as exc:
        raise BadRequest(f"body is not valid JSON: {exc}") from None
    if not isinstance(obj, dict) or not isinstance(obj.get("spans"), list):
        raise BadRequest('body must be a JSON object with a "spans" array')
    batch = Batch()
    for raw in obj["spans"]:
        if not isinstance(raw, dict):
            batch.reject("a span is not a JSON object")
            continue
        name = raw.get("span_name")
        label = f"span {str(name)[:80]!r}"
        span_project = project or str(raw.get("workspace_id") or "") or DEFAULT_PROJECT
        problem = _cozeloop_problem(raw)
        if not problem:
            try:
                validate_project(span_project)
            except InvalidProject as error:
                problem = f"workspace_id: {error}"
        if problem:
            batch.reject(f"{label}: {problem}")
            continue
        start_ns, end_ns = cozeloop_wire.span_times_ns(raw["started_at_micros"],
                                                       raw.get("duration_micros", 0))
        batch.add(SpanWrite(
            project=span_project,
            trace_id=raw["trace_id"].lower(),
            span_id=raw["span_id"].lower(),
            parent_span_id=cozeloop_wire.parent_span_id(raw.get("parent_id") or ""),
            name=pg_text(str(name or "")),
            kind=0,
            start_ns=start_ns,
            end_ns=end_ns,
            status_code=2 if raw.get("status_code", 0) != 0 else 0,
            service_name=pg_text(str(raw.get("service_name") or "")),
            resource_id=None,
            format=FORMAT_COZELOOP,
            attributes=orjson.dumps(_filterable_tags(
                raw.get(group) for group in cozeloop_wire.TAG_GROUPS)).decode(),
            body=compress_body(orjson.dumps(raw)),
        ))
    return batch
