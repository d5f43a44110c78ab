"""OTLP/HTTP receiver conformance (docs/otlp.md A12, one test per item)."""

from __future__ import annotations

import gzip
import zlib

import httpx
import orjson
from google.rpc import status_pb2
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)

from tests.harness import ServerProcess, get_json, wait_for
from tests.otlp_builders import PB, new_span_id, new_trace_id, request, span


def stored_span_ids(client: httpx.Client, server: ServerProcess, project: str,
                    trace_id: str) -> list[str]:
    r = client.get(f"{server.http}/api/v1/traces/{trace_id}",
                   params={"project": project, "view": "flat"})
    if r.status_code == 404:
        return []
    assert r.status_code == 200, r.text
    return [s["span_id"] for s in r.json()["spans"]]


def test_protobuf_export_gets_empty_protobuf_response(server: ServerProcess, project: str) -> None:
    tid = new_trace_id()
    body = request([span(tid)]).SerializeToString()
    with httpx.Client() as c:
        r = c.post(f"{server.http}/v1/traces", content=body,
                   headers={**PB, "trajhub-project": project})
        assert r.status_code == 200
        assert r.headers["content-type"] == "application/x-protobuf"
        response = ExportTraceServiceResponse.FromString(r.content)
        assert not response.HasField("partial_success")
        assert len(stored_span_ids(c, server, project, tid.hex())) == 1


def test_json_export_gets_empty_json_object(server: ServerProcess, project: str) -> None:
    tid = new_trace_id().hex()
    doc = {"resourceSpans": [{"scopeSpans": [{"spans": [{
        "traceId": tid, "spanId": new_span_id().hex(), "name": "op", "kind": 1,
        "startTimeUnixNano": "1700000000000000000", "endTimeUnixNano": "1700000000001000000",
    }]}]}]}
    with httpx.Client() as c:
        r = c.post(f"{server.http}/v1/traces", content=orjson.dumps(doc),
                   headers={"content-type": "application/json", "trajhub-project": project})
        assert r.status_code == 200
        assert r.headers["content-type"] == "application/json"
        assert r.json() == {}


def test_lenient_json_is_accepted(server: ServerProcess, project: str) -> None:
    """Upper- and lower-case hex ids, int64 as string and as number, an unknown field, kind as
    an int (and as a name, as the Collector reads it), snake_case keys."""
    tid = new_trace_id().hex()
    a, b, c_id = new_span_id().hex(), new_span_id().hex(), new_span_id().hex()
    doc = {"resourceSpans": [{"resource": {"attributes": [
        {"key": "service.name", "value": {"stringValue": "lenient"}}]},
        "someFutureField": {"x": 1},
        "scopeSpans": [{"spans": [
            {"traceId": tid.upper(), "spanId": a.upper(), "name": "upper", "kind": 2,
             "startTimeUnixNano": "1700000000000000000", "endTimeUnixNano": 1700000000002000000,
             "unknownSpanField": True,
             "attributes": [{"key": "n", "value": {"intValue": "42"}},
                            {"key": "m", "value": {"intValue": 7}}]},
            {"traceId": tid, "spanId": b, "parentSpanId": a, "name": "lower",
             "kind": "SPAN_KIND_CLIENT", "startTimeUnixNano": 1700000000000500000,
             "endTimeUnixNano": "1700000000001000000"},
            {"trace_id": tid, "span_id": c_id, "parent_span_id": a, "name": "snake",
             "start_time_unix_nano": "1700000000000600000",
             "end_time_unix_nano": "1700000000000700000"},
        ]}]}]}
    with httpx.Client() as c:
        r = c.post(f"{server.http}/v1/traces", content=orjson.dumps(doc),
                   headers={"content-type": "application/json; charset=utf-8",
                            "trajhub-project": project})
        assert r.status_code == 200, r.text
        assert r.json() == {}
        spans = {s["span_id"]: s for s in get_json(
            c, f"{server.http}/api/v1/traces/{tid}", project=project, view="flat")["spans"]}
        assert set(spans) == {a, b, c_id}
        assert spans[a]["attributes"] == {"n": 42, "m": 7}
        assert spans[a]["kind"] == "server" and spans[b]["kind"] == "client"
        assert spans[b]["parent_span_id"] == a


def test_wrong_length_hex_id_rejects_that_span_only(server: ServerProcess, project: str) -> None:
    tid = new_trace_id().hex()
    good = new_span_id().hex()
    doc = {"resourceSpans": [{"scopeSpans": [{"spans": [
        {"traceId": tid, "spanId": good, "name": "good", "startTimeUnixNano": "1",
         "endTimeUnixNano": "2"},
        {"traceId": tid[:-2], "spanId": new_span_id().hex(), "name": "short trace id",
         "startTimeUnixNano": "1", "endTimeUnixNano": "2"},
        {"traceId": tid, "spanId": "zz" * 8, "name": "not hex", "startTimeUnixNano": "1",
         "endTimeUnixNano": "2"},
    ]}]}]}
    with httpx.Client() as c:
        r = c.post(f"{server.http}/v1/traces", content=orjson.dumps(doc),
                   headers={"content-type": "application/json", "trajhub-project": project})
        assert r.status_code == 200
        partial = r.json()["partialSuccess"]
        assert partial["rejectedSpans"] == "2"
        assert "trace_id" in partial["errorMessage"] and "span_id" in partial["errorMessage"]
        assert stored_span_ids(c, server, project, tid) == [good]


def test_gzip_and_deflate_bodies_are_accepted(server: ServerProcess, project: str) -> None:
    with httpx.Client() as c:
        for encoding, compress in (("gzip", gzip.compress), ("deflate", zlib.compress)):
            tid = new_trace_id()
            body = compress(request([span(tid)]).SerializeToString())
            r = c.post(f"{server.http}/v1/traces", content=body,
                       headers={**PB, "content-encoding": encoding, "trajhub-project": project})
            assert r.status_code == 200, (encoding, r.text)
            assert len(stored_span_ids(c, server, project, tid.hex())) == 1


def test_unknown_encoding_is_refused_with_a_message(server: ServerProcess) -> None:
    body = request([span(new_trace_id())]).SerializeToString()
    with httpx.Client() as c:
        r = c.post(f"{server.http}/v1/traces", content=body,
                   headers={**PB, "content-encoding": "br"})
        assert r.status_code == 415
        status = status_pb2.Status.FromString(r.content)
        assert "Content-Encoding" in status.message


def test_gzip_bomb_over_the_limit_gets_413(tmp_path, database) -> None:  # type: ignore[no-untyped-def]
    # a small server limit keeps the bomb small; the point is that the decompressed size counts
    limited = ServerProcess.start(database.url, tmp_path,
                                  extra_env={"TRAJHUB_MAX_REQUEST_BYTES": str(1024 * 1024)})
    try:
        bomb = gzip.compress(b"\x00" * (8 * 1024 * 1024))
        assert len(bomb) < 1024 * 1024
        with httpx.Client() as c:
            r = c.post(f"{limited.http}/v1/traces", content=bomb,
                       headers={**PB, "content-encoding": "gzip"})
            assert r.status_code == 413
            assert "limit" in status_pb2.Status.FromString(r.content).message
            big = b"\x0a" + b"\x00" * (2 * 1024 * 1024)
            r = c.post(f"{limited.http}/v1/traces", content=big, headers=PB)
            assert r.status_code == 413
    finally:
        assert limited.stop() == 0


def test_other_content_type_gets_415(server: ServerProcess) -> None:
    with httpx.Client() as c:
        r = c.post(f"{server.http}/v1/traces", content=b"hello",
                   headers={"content-type": "text/plain"})
        assert r.status_code == 415
        assert "Content-Type" in r.json()["message"]


def test_undecodable_body_gets_400_naming_the_problem(server: ServerProcess) -> None:
    with httpx.Client() as c:
        r = c.post(f"{server.http}/v1/traces", content=b"\xff\xff\xff", headers=PB)
        assert r.status_code == 400
        assert "protobuf" in status_pb2.Status.FromString(r.content).message
        r = c.post(f"{server.http}/v1/traces", content=b"{not json",
                   headers={"content-type": "application/json"})
        assert r.status_code == 400
        assert "JSON" in r.json()["message"]


def test_empty_request_succeeds_and_stores_nothing(server: ServerProcess, project: str) -> None:
    with httpx.Client() as c:
        r = c.post(f"{server.http}/v1/traces",
                   content=ExportTraceServiceRequest().SerializeToString(),
                   headers={**PB, "trajhub-project": project})
        assert r.status_code == 200
        assert not ExportTraceServiceResponse.FromString(r.content).HasField("partial_success")
        r = c.post(f"{server.http}/v1/traces", content=b"{}",
                   headers={"content-type": "application/json", "trajhub-project": project})
        assert r.status_code == 200 and r.json() == {}


def test_half_invalid_batch_gets_partial_success(server: ServerProcess, project: str) -> None:
    tid = new_trace_id()
    good = [span(tid) for _ in range(3)]
    bad = [span(bytes(16)) for _ in range(2)] + [span(tid, span_id=bytes(8))]
    with httpx.Client() as c:
        r = c.post(f"{server.http}/v1/traces", content=request(good + bad).SerializeToString(),
                   headers={**PB, "trajhub-project": project})
        assert r.status_code == 200
        partial = ExportTraceServiceResponse.FromString(r.content).partial_success
        assert partial.rejected_spans == 3
        assert "invalid trace_id" in partial.error_message
        assert sorted(stored_span_ids(c, server, project, tid.hex())) == sorted(
            s.span_id.hex() for s in good)


def test_all_invalid_batch_gets_400(server: ServerProcess) -> None:
    with httpx.Client() as c:
        r = c.post(f"{server.http}/v1/traces",
                   content=request([span(bytes(16))]).SerializeToString(), headers=PB)
        assert r.status_code == 400
        assert "invalid trace_id" in status_pb2.Status.FromString(r.content).message


def test_same_request_twice_is_stored_once(server: ServerProcess, project: str) -> None:
    tid = new_trace_id()
    body = request([span(tid, name=f"s{i}") for i in range(5)]).SerializeToString()
    with httpx.Client() as c:
        for _ in range(2):
            r = c.post(f"{server.http}/v1/traces", content=body,
                       headers={**PB, "trajhub-project": project})
            assert r.status_code == 200
        assert len(stored_span_ids(c, server, project, tid.hex())) == 5
        summary = wait_for(lambda: get_json(c, f"{server.http}/api/v1/traces",
                                            project=project)["items"], what="trace summary")
        assert summary[0]["span_count"] == 5


def test_resent_span_with_later_end_replaces_the_stored_one(server: ServerProcess,
                                                           project: str) -> None:
    tid, sid = new_trace_id(), new_span_id()
    with httpx.Client() as c:
        # the in-progress version first, then the finished one, then a stale re-send
        for duration, name in ((1_000_000, "in progress"), (5_000_000, "finished"),
                               (1_000_000, "in progress")):
            body = request([span(tid, name=name, span_id=sid, duration=duration)])
            r = c.post(f"{server.http}/v1/traces", content=body.SerializeToString(),
                       headers={**PB, "trajhub-project": project})
            assert r.status_code == 200
        stored = get_json(c, f"{server.http}/api/v1/traces/{tid.hex()}/spans/{sid.hex()}",
                          project=project)
        assert stored["name"] == "finished"
        assert stored["duration_ms"] == 5.0


def test_cors_preflight(tmp_path, database) -> None:  # type: ignore[no-untyped-def]
    cors = ServerProcess.start(database.url, tmp_path,
                               extra_env={"TRAJHUB_CORS_ORIGINS": "http://app.example"})
    try:
        with httpx.Client() as c:
            r = c.options(f"{cors.http}/v1/traces", headers={
                "origin": "http://app.example", "access-control-request-method": "POST",
                "access-control-request-headers": "content-type"})
            assert 200 <= r.status_code < 300
            assert r.headers["access-control-allow-origin"] == "http://app.example"
            assert "POST" in r.headers["access-control-allow-methods"]
            assert "content-type" in r.headers["access-control-allow-headers"].lower()
            r = c.options(f"{cors.http}/v1/traces", headers={
                "origin": "http://evil.example", "access-control-request-method": "POST"})
            assert "access-control-allow-origin" not in r.headers
            # a preflight for every method of every route the API document lists
            paths = c.get(f"{cors.http}/openapi.json", timeout=60).json()["paths"]
            refused = []
            for path, operations in paths.items():
                for method in operations:
                    r = c.options(f"{cors.http}{path}", headers={
                        "origin": "http://app.example",
                        "access-control-request-method": method.upper()})
                    if not (200 <= r.status_code < 300 and method.upper() in
                            r.headers.get("access-control-allow-methods", "")):
                        refused.append(f"{method.upper()} {path}: {r.status_code}")
            assert {m for ops in paths.values() for m in ops} >= {"get", "post", "put", "delete"}
            assert refused == []
    finally:
        assert cors.stop() == 0
