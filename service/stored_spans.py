"""Stored span rows back into the models: `normalizers.model.Span` for the normalizers, OTLP
messages for `?format=otlp`, and the JSON views of the REST API."""

from __future__ import annotations

import base64
from collections.abc import Iterable, Mapping
from datetime import UTC, datetime
from typing import Any

import orjson
from google.protobuf import json_format
from google.protobuf.message import DecodeError, Message
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue
from opentelemetry.proto.trace.v1.trace_pb2 import ResourceSpans, Status
from opentelemetry.proto.trace.v1.trace_pb2 import Span as OtlpSpan

from trajhub.normalizers import cozeloop_wire
from trajhub.normalizers.model import AttributeValue, Span
from trajhub.normalizers.sources import attributes, span_from_cozeloop, span_from_otlp
from trajhub.service.ingest.decode import FORMAT_COZELOOP, FORMAT_OTLP, Batch
from trajhub.storage.compression import UnknownDictionary, decompress
from trajhub.storage.database import RowMapping

_KIND_NAMES = ["unspecified", "internal", "server", "client", "producer", "consumer"]
_STATUS_NAMES = ["unset", "ok", "error"]


def _envelope(envelopes: Mapping[int, bytes], resource_id: int | None) -> ResourceSpans:
    if resource_id is None or resource_id not in envelopes:
        return ResourceSpans()
    try:
        return ResourceSpans.FromString(envelopes[resource_id])
    except DecodeError:  # see otlp_span
        return ResourceSpans()


def body(row: RowMapping) -> bytes:
    """A stored span's bytes exactly as received (ingest stores them compressed:
    storage/compression.py)."""
    return decompress(row["body"])


def otlp_span(row: RowMapping) -> OtlpSpan:
    """A stored OTLP span. Ingest only stores bytes that parse again (it holds OTLP/JSON to the
    parser's recursion limit); a row stored before that rule, whose bytes do not parse, or whose
    frame names a compression dictionary the database does not hold, comes back as the span its
    columns describe, with `trajhub.unreadable_body` set, rather than failing the whole read."""
    try:
        return OtlpSpan.FromString(body(row))
    except (DecodeError, UnknownDictionary) as exc:
        parent = row["parent_span_id"]
        span = OtlpSpan(trace_id=bytes.fromhex(row["trace_id"]),
                        span_id=bytes.fromhex(row["span_id"]),
                        parent_span_id=bytes.fromhex(parent) if parent else b"",
                        name=row["name"], kind=row["kind"],
                        start_time_unix_nano=row["start_ns"], end_time_unix_nano=row["end_ns"])
        span.status.code = row["status_code"]
        span.attributes.add(key="trajhub.unreadable_body").value.string_value = str(exc)
        return span


def to_model(rows: Iterable[RowMapping], envelopes: Mapping[int, bytes],
             parsed: Mapping[tuple[str, str, str], OtlpSpan] | None = None) -> list[Span]:
    """Rows (with format, body, resource_id) → the normalizers' span model. `parsed`: OTLP
    spans the caller has already decoded, by (project, trace_id, span_id); their bodies are
    not parsed again."""
    spans: list[Span] = []
    resource_cache: dict[int | None, tuple[dict[str, AttributeValue], str, str]] = {}
    for row in rows:
        if row["format"] == FORMAT_COZELOOP:
            spans.append(span_from_cozeloop(orjson.loads(body(row))))
            continue
        rid = row["resource_id"]
        if rid not in resource_cache:
            env = _envelope(envelopes, rid)
            scope = env.scope_spans[0].scope if env.scope_spans else None
            resource_cache[rid] = (attributes(env.resource.attributes),
                                   scope.name if scope else "", scope.version if scope else "")
        resource, scope_name, scope_version = resource_cache[rid]
        otlp = parsed.get((row["project"], row["trace_id"], row["span_id"])) if parsed else None
        spans.append(span_from_otlp(otlp if otlp is not None else otlp_span(row), resource,
                                    scope_name, scope_version))
    return spans


def batch_spans(batch: Batch) -> list[Span]:
    """The spans a decoded request would store, as the normalizers will read them back: the
    ingest decode and validation path without the write (`POST /api/v1/normalize`)."""
    return to_model([row._asdict() for row in batch.rows.values()], batch.resources,
                    batch.parsed)


# ---------------------------------------------------------------------------- OTLP rendering

def set_any_value(out: AnyValue, value: Any) -> None:
    """Fill an OTLP AnyValue from a Python value of the matching type."""
    if isinstance(value, bool):
        out.bool_value = value
    elif isinstance(value, int):
        out.int_value = value
    elif isinstance(value, float):
        out.double_value = value
    elif isinstance(value, bytes):
        out.bytes_value = value
    elif isinstance(value, list):
        out.array_value.SetInParent()
        for item in value:
            set_any_value(out.array_value.values.add(), item)
    elif isinstance(value, dict):
        out.kvlist_value.SetInParent()
        for k, v in value.items():
            kv: KeyValue = out.kvlist_value.values.add(key=str(k))
            set_any_value(kv.value, v)
    elif value is not None:
        out.string_value = str(value)


def _tag_group(raw: Mapping[str, Any], group: str) -> Mapping[str, Any]:
    """A tag group as stored; one that is not a JSON object (as sent) counts as empty, as the
    normalizers read it."""
    tags = raw.get(group)
    return tags if isinstance(tags, Mapping) else {}


def cozeloop_as_otlp(raw: Mapping[str, Any]) -> OtlpSpan:
    """A native Coze Loop span as an OTLP span: its fields and tags become `cozeloop.*` and
    plain attributes (the native JSON itself stays available with `?format=cozeloop`)."""
    parent = cozeloop_wire.parent_span_id(str(raw.get("parent_id") or ""))
    start_ns, end_ns = cozeloop_wire.span_times_ns(int(raw.get("started_at_micros") or 0),
                                                   int(raw.get("duration_micros") or 0))
    span = OtlpSpan(
        trace_id=bytes.fromhex(str(raw["trace_id"])),
        span_id=bytes.fromhex(str(raw["span_id"])),
        parent_span_id=bytes.fromhex(parent),
        name=str(raw.get("span_name") or ""),
        start_time_unix_nano=start_ns,
        end_time_unix_nano=end_ns,
    )
    status_code = int(raw.get("status_code") or 0)
    if status_code:
        span.status.code = Status.STATUS_CODE_ERROR
        span.status.message = str(_tag_group(raw, "tags_string").get("error") or "")
    fields = {"cozeloop.span_type": raw.get("span_type"), "cozeloop.input": raw.get("input"),
              "cozeloop.output": raw.get("output"), "cozeloop.status_code": status_code,
              "cozeloop.log_id": raw.get("log_id"), "cozeloop.workspace_id":
              raw.get("workspace_id"), "cozeloop.object_storage": raw.get("object_storage")}
    for key, value in fields.items():
        if value not in (None, ""):
            set_any_value(span.attributes.add(key=key).value, value)
    for group in cozeloop_wire.TAG_GROUPS:
        for key, value in _tag_group(raw, group).items():
            set_any_value(span.attributes.add(key=key).value, value)
    return span


def to_otlp_request(rows: Iterable[Mapping[str, Any]], envelopes: Mapping[int, bytes]
                    ) -> ExportTraceServiceRequest:
    """The stored spans as one export request, grouped by their resource and scope."""
    request = ExportTraceServiceRequest()
    groups: dict[int | None, ResourceSpans] = {}
    for row in rows:
        rid = row["resource_id"] if row["format"] == FORMAT_OTLP else None
        rs = groups.get(rid)
        if rs is None:
            rs = groups[rid] = request.resource_spans.add()
            rs.CopyFrom(_envelope(envelopes, rid))
            if not rs.scope_spans:
                rs.scope_spans.add()
            if row["format"] == FORMAT_COZELOOP and row["service_name"]:
                rs.resource.attributes.add(key="service.name").value.string_value = (
                    row["service_name"])
        if row["format"] == FORMAT_COZELOOP:
            rs.scope_spans[0].spans.append(cozeloop_as_otlp(orjson.loads(body(row))))
        else:
            rs.scope_spans[0].spans.append(otlp_span(row))
    return request


def _b64_to_hex(value: str) -> str:
    return base64.b64decode(value).hex()


def _hex_ids(item: dict[str, Any], keys: tuple[str, ...]) -> None:
    for key in keys:
        if key in item:
            item[key] = _b64_to_hex(item[key])


def otlp_json(request: Message, signal: str = "Spans", item_key: str = "spans"
              ) -> dict[str, Any]:
    """OTLP/JSON of an export request (`signal` "Spans", or "Logs" with `item_key`
    "logRecords"): lowerCamelCase, enums as integers, ids as hex (docs/otlp.md A2)."""
    doc: dict[str, Any] = json_format.MessageToDict(request, use_integers_for_enums=True)
    # protobuf's JSON leaves an empty list out; the answer's model requires the key (a trace
    # with spans and no log records exports no records)
    doc.setdefault(f"resource{signal}", [])
    for resource in doc[f"resource{signal}"]:
        for scope in resource.get(f"scope{signal}", []):
            for item in scope.get(item_key, []):
                _hex_ids(item, ("traceId", "spanId", "parentSpanId"))
                for link in item.get("links", []):
                    _hex_ids(link, ("traceId", "spanId"))
    return doc


# ---------------------------------------------------------------------------- REST views

def jsonable(value: AttributeValue) -> Any:
    if isinstance(value, bytes):
        return base64.b64encode(value).decode()
    if isinstance(value, float) and (value != value or value in (float("inf"), float("-inf"))):
        return str(value)
    if isinstance(value, list):
        return [jsonable(v) for v in value]
    if isinstance(value, dict):
        return {k: jsonable(v) for k, v in value.items()}
    return value


def iso_time(ns: int) -> str:
    return datetime.fromtimestamp(ns / 1e9, tz=UTC).isoformat().replace("+00:00", "Z")


def span_view(span: Span) -> dict[str, Any]:
    view: dict[str, Any] = {
        "trace_id": span.trace_id,
        "span_id": span.span_id,
        "parent_span_id": span.parent_span_id,
        "name": span.name,
        "kind": _KIND_NAMES[span.kind] if 0 <= span.kind < len(_KIND_NAMES) else span.kind,
        "start_time": iso_time(span.start_ns),
        "end_time": iso_time(span.end_ns),
        "start_time_unix_nano": str(span.start_ns),
        "end_time_unix_nano": str(span.end_ns),
        "duration_ms": span.duration_ns / 1e6,
        "status": {"code": _STATUS_NAMES[span.status_code] if 0 <= span.status_code < 3
                   else span.status_code, "message": span.status_message},
        "attributes": jsonable(dict(span.attributes)),
        "events": [{"name": e.name, "time": iso_time(e.time_ns), "time_unix_nano": str(e.time_ns),
                    "attributes": jsonable(dict(e.attributes))} for e in span.events],
        "resource": jsonable(dict(span.resource)),
        "scope": {"name": span.scope_name, "version": span.scope_version},
        "format": "cozeloop" if span.cozeloop is not None else "otlp",
    }
    if span.cozeloop is not None:
        c = span.cozeloop
        view["cozeloop"] = {"span_type": c.span_type, "status_code": c.status_code,
                            "input": c.input, "output": c.output, "log_id": c.log_id,
                            "workspace_id": c.workspace_id, "object_storage": c.object_storage}
    return view


