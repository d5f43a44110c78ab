"""Request bodies → rows for the `spans` table.

Runs in the ingest worker processes: decompression (bounded, so a gzip bomb cannot exhaust
memory), decoding, per-span validation and the conversion of each span to one row.
"""

from __future__ import annotations

import hashlib
import zlib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import orjson
from google.protobuf.message import DecodeError
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.common.v1.common_pb2 import KeyValue
from opentelemetry.proto.trace.v1.trace_pb2 import ResourceSpans

from trajhub.service.errors import BadRequest, PayloadTooLarge, UnsupportedMediaType
from trajhub.service.ingest.otlp_json import parse_request

#: what a stored span's `body` holds: a serialized OTLP Span, or Coze Loop's native JSON
FORMAT_OTLP = 1
FORMAT_COZELOOP = 2

DEFAULT_PROJECT = "default"
#: Attribute values longer than this stay only in the span body, not in the filterable copy.
_FILTERABLE_MAX_CHARS = 256
#: How many rejected-span reasons one response names.
_MAX_REASONS = 5

_ZERO_TRACE = bytes(16)
_ZERO_SPAN = bytes(8)


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
class Batch:
    """What one request stores: rows keyed by (project, trace_id, span_id), the resource
    envelopes they reference, and the spans rejected."""

    rows: dict[tuple[str, str, str], tuple[Any, ...]] = field(default_factory=dict)
    resources: dict[int, bytes] = field(default_factory=dict)
    rejected: int = 0
    reasons: list[str] = field(default_factory=list)

    def add(self, row: tuple[Any, ...]) -> None:
        key = (row[0], row[1], row[2])
        kept = self.rows.get(key)
        # a span sent twice in one request: keep the version that ended last
        if kept is None or row[7] > kept[7]:
            self.rows[key] = row

    def reject(self, reason: str) -> None:
        self.rejected += 1
        if len(self.reasons) < _MAX_REASONS and reason not in self.reasons:
            self.reasons.append(reason)

    @property
    def error_message(self) -> str:
        if not self.rejected:
            return ""
        return f"rejected {self.rejected} span(s): " + "; ".join(self.reasons)


def _text(value: str) -> str:
    # PostgreSQL text cannot hold NUL; the lossless copy is the body.
    return value.replace("\x00", "\ufffd") if "\x00" in value else value


def _filterable_otlp(attributes: Iterable[KeyValue]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for kv in attributes:
        value = kv.value
        which = value.WhichOneof("value")
        if which == "string_value":
            s = value.string_value
            if len(s) <= _FILTERABLE_MAX_CHARS and "\x00" not in s:
                out[kv.key] = s
        elif which == "int_value":
            out[kv.key] = value.int_value
        elif which == "bool_value":
            out[kv.key] = value.bool_value
        elif which == "double_value":
            d = value.double_value
            if d == d and d not in (float("inf"), float("-inf")):
                out[kv.key] = d
    return out


def _filterable_tags(tag_maps: Iterable[Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for tags in tag_maps:
        if not isinstance(tags, Mapping):
            continue
        for key, value in tags.items():
            if isinstance(value, str):
                if len(value) <= _FILTERABLE_MAX_CHARS and "\x00" not in value:
                    out[str(key)] = value
            elif isinstance(value, (bool, int)) or (
                isinstance(value, float) and value == value and abs(value) != float("inf")
            ):
                out[str(key)] = value
    return out


def _resource_id(envelope: bytes) -> int:
    return int.from_bytes(hashlib.blake2b(envelope, digest_size=8).digest(), "big", signed=True)


def _string_attribute(attributes: Iterable[KeyValue], key: str) -> str:
    for kv in attributes:
        if kv.key == key and kv.value.WhichOneof("value") == "string_value":
            return kv.value.string_value
    return ""


def parse_otlp(body: bytes, content_type: str) -> ExportTraceServiceRequest:
    """Decode an OTLP body: "protobuf" or "json"."""
    if content_type == "json":
        try:
            obj = orjson.loads(body)
        except orjson.JSONDecodeError as exc:
            raise BadRequest(f"body is not valid JSON: {exc}") from None
        return parse_request(obj)
    try:
        return ExportTraceServiceRequest.FromString(body)
    except DecodeError as exc:
        raise BadRequest(f"body is not a valid ExportTraceServiceRequest protobuf: {exc}") from None


def otlp_batch(request: ExportTraceServiceRequest, project: str | None) -> Batch:
    """Validate every span and convert the valid ones to rows.

    `project` comes from a request header; without one, each resource's `trajhub.project`
    attribute decides, else the default project."""
    batch = Batch()
    for rs in request.resource_spans:
        resource_attributes = rs.resource.attributes
        rs_project = (
            project or _string_attribute(resource_attributes, "trajhub.project") or DEFAULT_PROJECT
        )
        service = _text(_string_attribute(resource_attributes, "service.name"))
        for ss in rs.scope_spans:
            if not ss.spans:
                continue
            envelope = ResourceSpans(resource=rs.resource, schema_url=rs.schema_url)
            envelope.scope_spans.add(scope=ss.scope, schema_url=ss.schema_url)
            envelope_bytes = envelope.SerializeToString(deterministic=True)
            resource_id = _resource_id(envelope_bytes)
            batch.resources[resource_id] = envelope_bytes
            for span in ss.spans:
                trace_id, span_id, parent = span.trace_id, span.span_id, span.parent_span_id
                if len(trace_id) != 16 or trace_id == _ZERO_TRACE:
                    batch.reject(f"span {span.name!r}: invalid trace_id "
                                 f"(need 16 non-zero bytes, got {trace_id.hex() or 'empty'})")
                    continue
                if len(span_id) != 8 or span_id == _ZERO_SPAN:
                    batch.reject(f"span {span.name!r}: invalid span_id "
                                 f"(need 8 non-zero bytes, got {span_id.hex() or 'empty'})")
                    continue
                if parent and len(parent) != 8:
                    batch.reject(f"span {span.name!r}: invalid parent_span_id {parent.hex()}")
                    continue
                batch.add((
                    rs_project,
                    trace_id.hex(),
                    span_id.hex(),
                    "" if parent == _ZERO_SPAN else parent.hex(),
                    _text(span.name),
                    span.kind,
                    span.start_time_unix_nano,
                    span.end_time_unix_nano,
                    span.status.code,
                    service,
                    resource_id,
                    FORMAT_OTLP,
                    orjson.dumps(_filterable_otlp(span.attributes)).decode(),
                    span.SerializeToString(),
                ))
    return batch


def _is_hex(value: Any, length: int) -> bool:
    if not isinstance(value, str) or len(value) != length:
        return False
    try:
        return int(value, 16) != 0
    except ValueError:
        return False


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
        label = f"span {name!r}"
        trace_id, span_id = raw.get("trace_id"), raw.get("span_id")
        parent = raw.get("parent_id") or ""
        if not _is_hex(trace_id, 32):
            batch.reject(f"{label}: invalid trace_id {trace_id!r} (need 32 hex digits, not all 0)")
            continue
        if not _is_hex(span_id, 16):
            batch.reject(f"{label}: invalid span_id {span_id!r} (need 16 hex digits, not all 0)")
            continue
        if not isinstance(parent, str) or (parent != "0" and parent and not _is_hex(parent, 16)):
            batch.reject(f"{label}: invalid parent_id {parent!r}")
            continue
        start_us, duration_us = raw.get("started_at_micros"), raw.get("duration_micros", 0)
        status_code = raw.get("status_code", 0)
        if not isinstance(start_us, int) or isinstance(start_us, bool):
            batch.reject(f"{label}: started_at_micros must be an integer")
            continue
        if not isinstance(duration_us, int) or isinstance(duration_us, bool):
            batch.reject(f"{label}: duration_micros must be an integer")
            continue
        if not isinstance(status_code, int) or isinstance(status_code, bool):
            batch.reject(f"{label}: status_code must be an integer")
            continue
        span_project = project or str(raw.get("workspace_id") or "") or DEFAULT_PROJECT
        tags = [raw.get(k) for k in ("system_tags_string", "system_tags_long",
                                     "system_tags_double", "tags_string", "tags_long",
                                     "tags_double", "tags_bool")]
        start_ns = start_us * 1000
        batch.add((
            span_project,
            str(trace_id).lower(),
            str(span_id).lower(),
            "" if parent == "0" else parent.lower(),
            _text(str(name or "")),
            0,
            start_ns,
            start_ns + max(0, duration_us) * 1000,
            2 if status_code != 0 else 0,
            _text(str(raw.get("service_name") or "")),
            None,
            FORMAT_COZELOOP,
            orjson.dumps(_filterable_tags(tags)).decode(),
            orjson.dumps(raw),
        ))
    return batch
