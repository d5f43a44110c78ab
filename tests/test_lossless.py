"""Everything a span carries survives storage: `?format=otlp` gives back exactly the spans,
resource and scope that were sent, over HTTP (protobuf and JSON) and gRPC."""

from __future__ import annotations

import math

import grpc
import httpx
import orjson
import pytest
from google.protobuf import json_format
from opentelemetry.proto.collector.trace.v1 import trace_service_pb2_grpc
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.trace.v1.trace_pb2 import Span

from tests.harness import ServerProcess, get_json
from tests.otlp_builders import kv, new_span_id, new_trace_id, request, span
from trajhub.service.ingest.otlp_json import parse_request
from trajhub.service.stored_spans import otlp_json

EVERY_TYPE = {
    "s": "text", "empty": "", "b": True, "i": -(2**63), "big": 2**63 - 1, "d": 1.0,
    "tiny": 5e-324, "inf": math.inf, "bytes": b"\x00\xffraw", "arr": ["a", 1, 2.5, False],
    "nested": {"k": {"deeper": [1, {"x": b"\x01"}]}, "n": None}, "unicode": "日本語 ✓ \u0000",
}


def rich_request(trace_id: bytes) -> ExportTraceServiceRequest:
    root_id = new_span_id()
    root = span(trace_id, "root", span_id=root_id, attributes=EVERY_TYPE)
    root.trace_state = "vendor=abc,other=1"
    root.flags = 0x301
    root.kind = Span.SPAN_KIND_PRODUCER
    root.dropped_attributes_count = 3
    root.dropped_events_count = 2
    root.dropped_links_count = 1
    root.status.code = 2
    root.status.message = "it failed"
    event = root.events.add(time_unix_nano=1_700_000_000_000_000_500, name="exception",
                            dropped_attributes_count=1)
    event.attributes.append(kv("exception.message", "boom"))
    link = root.links.add(trace_id=new_trace_id(), span_id=new_span_id(), trace_state="k=v",
                          flags=1, dropped_attributes_count=4)
    link.attributes.append(kv("link.kind", "follows"))
    child = span(trace_id, "child", parent=root_id, attributes={"x": 1})
    req = request([root, child], service="lossless",
                  resource={"host.arch": "amd64", "pids": [1, 2]})
    rs = req.resource_spans[0]
    rs.schema_url = "https://opentelemetry.io/schemas/1.26.0"
    rs.resource.dropped_attributes_count = 7
    ss = rs.scope_spans[0]
    ss.schema_url = "https://example.com/scope-schema"
    ss.scope.attributes.append(kv("scope.attr", 42))
    ss.scope.dropped_attributes_count = 5
    # a second scope under the same resource
    other = rs.scope_spans.add()
    other.scope.name = "another-scope"
    other.spans.append(span(trace_id, "from another scope", parent=root_id))
    return req


def returned(server: ServerProcess, project: str, trace_id: bytes) -> ExportTraceServiceRequest:
    with httpx.Client() as c:
        doc = get_json(c, f"{server.http}/api/v1/traces/{trace_id.hex()}", project=project,
                       format="otlp")
    return parse_request(doc)


def by_span(req: ExportTraceServiceRequest) -> dict[bytes, tuple[bytes, bytes, bytes, str, str]]:
    out = {}
    for rs in req.resource_spans:
        for ss in rs.scope_spans:
            for s in ss.spans:
                out[s.span_id] = (s.SerializeToString(deterministic=True),
                                  rs.resource.SerializeToString(deterministic=True),
                                  ss.scope.SerializeToString(deterministic=True),
                                  rs.schema_url, ss.schema_url)
    return out


@pytest.mark.parametrize("transport", ["protobuf", "json", "grpc"])
def test_every_field_round_trips(transport: str, server: ServerProcess, project: str) -> None:
    trace_id = new_trace_id()
    sent = rich_request(trace_id)
    headers = {"trajhub-project": project}
    if transport == "grpc":
        stub = trace_service_pb2_grpc.TraceServiceStub(grpc.insecure_channel(server.grpc))
        stub.Export(sent, metadata=list(headers.items()), timeout=10)
    else:
        if transport == "json":
            # the OTLP/JSON a JS exporter would send: hex ids, int64 as strings
            body = orjson.dumps(otlp_json(sent))
            content_type = "application/json"
        else:
            body, content_type = sent.SerializeToString(), "application/x-protobuf"
        r = httpx.post(f"{server.http}/v1/traces", content=body,
                       headers={**headers, "content-type": content_type})
        assert r.status_code == 200, r.text
    got = by_span(returned(server, project, trace_id))
    want = by_span(sent)
    assert got.keys() == want.keys()
    for span_id, value in want.items():
        assert got[span_id] == value, json_format.MessageToDict(
            Span.FromString(got[span_id][0]))
