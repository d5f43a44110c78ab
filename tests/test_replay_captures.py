"""Every captured real-client request, replayed exactly, is accepted with the right response
for its protocol, and stored losslessly: `?format=otlp` (or `?format=cozeloop` for native
spans) gives back exactly the spans that were sent.

OTLP/JSON on both sides — the captured request and the `?format=otlp` answer — is read with
protobuf's own `json_format`, not trajhub's parser, so the comparison does not depend on the
code under test."""

from __future__ import annotations

import base64
from typing import Any

import httpx
import orjson
import pytest
from google.protobuf import json_format
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)
from opentelemetry.proto.trace.v1.trace_pb2 import ResourceSpans

from tests.captures import Capture, all_captures, replay
from tests.harness import ServerProcess, get_json

CAPTURES = all_captures()

_ID_KEYS = ("traceId", "spanId", "parentSpanId", "trace_id", "span_id", "parent_span_id")


def _hex_ids_to_base64(item: dict[str, Any]) -> None:
    for key in _ID_KEYS:
        if isinstance(item.get(key), str):
            item[key] = base64.b64encode(bytes.fromhex(item[key])).decode()


def oracle_parse(doc: dict[str, Any]) -> ExportTraceServiceRequest:
    """OTLP/JSON read by protobuf's json_format. OTLP/JSON writes ids as hex where proto3 JSON
    writes bytes as base64 (the one documented difference), so ids are converted first."""
    for rs in doc.get("resourceSpans", doc.get("resource_spans", [])):
        for ss in rs.get("scopeSpans", rs.get("scope_spans", [])):
            for span in ss.get("spans", []):
                _hex_ids_to_base64(span)
                for link in span.get("links", []):
                    _hex_ids_to_base64(link)
    return json_format.ParseDict(doc, ExportTraceServiceRequest())


def sent_request(capture: Capture) -> ExportTraceServiceRequest:
    if capture.headers.get("content-type", "").startswith("application/json"):
        return oracle_parse(orjson.loads(capture.decoded_body))
    return ExportTraceServiceRequest.FromString(capture.decoded_body)


def spans_by_id(request: ExportTraceServiceRequest) -> dict[str, tuple[bytes, bytes]]:
    """span id → (the span's bytes, its resource+scope envelope's bytes)."""
    out = {}
    for rs in request.resource_spans:
        for ss in rs.scope_spans:
            envelope = ResourceSpans(resource=rs.resource, schema_url=rs.schema_url)
            envelope.scope_spans.add(scope=ss.scope, schema_url=ss.schema_url)
            env = envelope.SerializeToString(deterministic=True)
            for span in ss.spans:
                out[span.span_id.hex()] = (span.SerializeToString(deterministic=True), env)
    return out


@pytest.mark.parametrize("capture", CAPTURES, ids=str)
def test_replayed_capture_is_accepted_and_stored_losslessly(
        capture: Capture, server: ServerProcess, project: str) -> None:
    response = replay(capture, server.http, server.grpc, project)
    if isinstance(response, ExportTraceServiceResponse):  # gRPC
        assert not response.HasField("partial_success")
    elif capture.url_path == "/v1/loop/traces/ingest":
        assert response.status_code == 200
        assert response.json() == {"code": 0, "msg": ""}
    else:
        assert response.status_code == 200, response.text
        sent_type = capture.headers["content-type"].split(";")[0]
        assert response.headers["content-type"] == sent_type
        if sent_type == "application/json":
            assert response.json() == {}
        else:
            assert not ExportTraceServiceResponse.FromString(response.content).HasField(
                "partial_success")

    with httpx.Client() as client:
        if capture.url_path == "/v1/loop/traces/ingest":
            sent = orjson.loads(capture.decoded_body)["spans"]
            for trace_id in {s["trace_id"] for s in sent}:
                got = get_json(client, f"{server.http}/api/v1/traces/{trace_id}",
                               project=project, format="cozeloop")["spans"]
                expected = [s for s in sent if s["trace_id"] == trace_id]
                key = lambda s: s["span_id"]  # noqa: E731
                assert sorted(got, key=key) == sorted(expected, key=key)
            return
        sent_spans = spans_by_id(sent_request(capture))
        trace_ids = {s.trace_id.hex() for rs in sent_request(capture).resource_spans
                     for ss in rs.scope_spans for s in ss.spans}
        returned: dict[str, tuple[bytes, bytes]] = {}
        for trace_id in trace_ids:
            doc = get_json(client, f"{server.http}/api/v1/traces/{trace_id}", project=project,
                           format="otlp")
            returned.update(spans_by_id(oracle_parse(doc)))
    # a trace may span several requests (cozeloop_js sends one trace in 4): compare the spans
    # this request sent
    for span_id, (span_bytes, envelope) in sent_spans.items():
        assert span_id in returned, f"span {span_id} missing"
        assert returned[span_id] == (span_bytes, envelope), f"span {span_id} differs"
