"""Hostile input at the receivers: every case here once got a 500, an UNKNOWN, a dead
derivation worker or a stored span that no longer read back. Each must now be
answered per span (OTLP partial_success, the Coze Loop answer's msg) or with a 4xx naming the
problem, and must never stop the derivation worker."""

from __future__ import annotations

import asyncio
import os
from typing import Any

import asyncpg
import grpc
import httpx
import orjson
import pytest
import zstandard
from google.rpc import status_pb2
from opentelemetry.proto.collector.trace.v1 import trace_service_pb2_grpc
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceResponse
from opentelemetry.proto.trace.v1.trace_pb2 import Span as OtlpSpan

from tests.harness import ServerProcess, TestDatabase, final_trajectory, get_json, wait_for
from tests.otlp_builders import PB, new_trace_id, request, span
from tests.test_cozeloop_ingest import native_span
from trajhub.storage import compression_dictionaries

START_NS = 1_700_000_000_000_000_000
CHUNKS = 3200
REPLACEMENT = "\ufffd"


def otlp_json_span(trace_id: str, name: str = "op", **fields: Any) -> dict[str, Any]:
    return {"traceId": trace_id, "spanId": os.urandom(8).hex(), "name": name, "kind": 1,
            "startTimeUnixNano": str(START_NS), "endTimeUnixNano": str(START_NS + 1_000_000),
            **fields}


def otlp_json_request(*spans: dict[str, Any], resource: list[Any] | None = None
                      ) -> dict[str, Any]:
    attributes = [{"key": "service.name", "value": {"stringValue": "svc"}}, *(resource or [])]
    return {"resourceSpans": [{"resource": {"attributes": attributes},
                               "scopeSpans": [{"scope": {"name": "t"}, "spans": list(spans)}]}]}


def post_json(c: httpx.Client, server: ServerProcess, project: str, body: Any) -> httpx.Response:
    return c.post(f"{server.http}/v1/traces", json=body, headers={"trajhub-project": project})


def stored_spans(c: httpx.Client, server: ServerProcess, project: str, trace_id: str
                 ) -> list[dict[str, Any]]:
    r = c.get(f"{server.http}/api/v1/traces/{trace_id}", params={"project": project,
                                                                 "view": "flat"})
    if r.status_code == 404:
        return []
    assert r.status_code == 200, r.text
    spans: list[dict[str, Any]] = r.json()["spans"]
    return spans


def nested_arrays(depth: int) -> dict[str, Any]:
    value: dict[str, Any] = {"stringValue": "deep"}
    for _ in range(depth):
        value = {"arrayValue": {"values": [value]}}
    return value


def assert_worker_still_derives(c: httpx.Client, server: ServerProcess, project: str) -> None:
    """A clean trace sent now still gets its final trajectory."""
    tid = new_trace_id()
    r = c.post(f"{server.http}/v1/traces", headers={**PB, "trajhub-project": project},
               content=request([span(tid, name="clean-root")]).SerializeToString())
    assert r.status_code == 200
    final_trajectory(c, server.http, project, tid.hex())


# ---------------------------------------------------------------------------- poison spans

def test_nul_in_names_is_stored_readably_and_kept_in_the_raw_bytes(
        server: ServerProcess, project: str) -> None:
    """A root span name and a service.name with NUL, over OTLP protobuf and native ingest: the
    trajectory is derived (NUL shown as U+FFFD), the raw span keeps the NUL."""
    otlp_tid = new_trace_id()
    native_tid = os.urandom(16).hex()
    with httpx.Client(timeout=30) as c:
        r = c.post(f"{server.http}/v1/traces", headers={**PB, "trajhub-project": project},
                   content=request([span(otlp_tid, name="ro\x00ot")],
                                   service="sv\x00c").SerializeToString())
        assert r.status_code == 200
        assert not ExportTraceServiceResponse.FromString(r.content).HasField("partial_success")
        r = c.post(f"{server.http}/v1/loop/traces/ingest", headers={"trajhub-project": project},
                   json={"spans": [native_span(native_tid, name="na\x00tive",
                                               service_name="s\x00")]})
        assert r.json() == {"code": 0, "msg": ""}

        final_trajectory(c, server.http, project, otlp_tid.hex())
        final_trajectory(c, server.http, project, native_tid)
        items = get_json(c, f"{server.http}/api/v1/trajectories", project=project)["items"]
        assert {i["root_name"] for i in items} == {f"ro{REPLACEMENT}ot", f"na{REPLACEMENT}tive"}

        otlp = get_json(c, f"{server.http}/api/v1/traces/{otlp_tid.hex()}", project=project,
                        format="otlp")
        raw = otlp["resourceSpans"][0]["scopeSpans"][0]["spans"][0]
        assert raw["name"] == "ro\x00ot"
        resource = otlp["resourceSpans"][0]["resource"]["attributes"]
        assert {"key": "service.name", "value": {"stringValue": "sv\x00c"}} in resource
        native = get_json(c, f"{server.http}/api/v1/traces/{native_tid}", project=project,
                          format="cozeloop")["spans"]
        assert native[0]["span_name"] == "na\x00tive"
        assert_worker_still_derives(c, server, project)


def test_otlp_json_nesting_past_the_protobuf_limit_is_rejected_per_span(
        server: ServerProcess, project: str) -> None:
    """60 nested arrayValues cannot be parsed back from the stored bytes: rejected, named; a
    span within the limit (45) is stored and reads back; the request's other span is kept."""
    tid = os.urandom(16).hex()
    too_deep = otlp_json_span(tid, "too-deep",
                              attributes=[{"key": "a", "value": nested_arrays(60)}])
    deep = otlp_json_span(tid, "deep", attributes=[{"key": "a", "value": nested_arrays(45)}])
    with httpx.Client(timeout=30) as c:
        r = post_json(c, server, project, otlp_json_request(too_deep, deep))
        assert r.status_code == 200, r.text
        partial = r.json()["partialSuccess"]
        assert partial["rejectedSpans"] == "1"
        assert "too-deep" in partial["errorMessage"] and "nests deeper" in \
            partial["errorMessage"]
        spans = stored_spans(c, server, project, tid)
        assert [s["name"] for s in spans] == ["deep"]
        r = c.get(f"{server.http}/api/v1/traces/{tid}",
                  params={"project": project, "format": "otlp"})
        assert r.status_code == 200
        final_trajectory(c, server.http, project, tid)

        # the same limit holds for resource attributes: every span of that resource is named
        r = post_json(c, server, project, otlp_json_request(
            otlp_json_span(tid, "under-deep-resource"),
            resource=[{"key": "r", "value": nested_arrays(60)}]))
        assert r.status_code == 400
        assert "under-deep-resource" in r.json()["message"]


def test_a_trace_that_cannot_be_derived_records_its_error_and_others_still_derive(
        server: ServerProcess, database: TestDatabase, project: str) -> None:
    """Rows ingest would not write, planted directly: a native span whose JSON body is broken
    cannot be read at all, so its trace records a derivation_error and the worker moves on; an
    OTLP span whose bytes do not parse (as one stored before the depth rule could be), or whose
    frame names a compression dictionary the database does not hold, still reads back through
    its columns, so GET /traces answers 200, not 500."""
    broken_native, broken_otlp, lost = (os.urandom(16).hex() for _ in range(3))
    # a span body compressed with a dictionary that was never stored
    samples = [f"span {i} of an agent run that calls a tool".encode() * 8 for i in range(300)]
    elsewhere = zstandard.ZstdCompressionDict(
        compression_dictionaries.train(samples))
    orphan = zstandard.ZstdCompressor(dict_data=elsewhere).compress(
        OtlpSpan(name="lost").SerializeToString())

    async def plant() -> None:
        conn = await asyncpg.connect(database.url)
        try:
            for tid, fmt, body in ((broken_native, 2, b"{not json"),
                                   (broken_otlp, 1, b"\xff\xff\xff"), (lost, 1, orphan)):
                await conn.execute(
                    "INSERT INTO spans (project, trace_id, span_id, parent_span_id, name, kind, "
                    "start_ns, end_ns, status_code, service_name, resource_id, format, "
                    "attributes, body) VALUES ($1, $2, $3, '', 'broken', 1, $4, $5, 0, 'svc', "
                    "NULL, $6, '{}', $7)",
                    project, tid, os.urandom(8).hex(), START_NS, START_NS + 1000, fmt, body)
                # ingest records every trace's partition key with its first span (0021)
                await conn.execute(
                    "INSERT INTO trace_keys (project, trace_id, first_seen) "
                    "SELECT $1, $2, first_seen FROM spans WHERE project = $1 AND trace_id = $2 "
                    "ON CONFLICT DO NOTHING", project, tid)
                await conn.execute(
                    "INSERT INTO trace_changes (project, trace_id) VALUES ($1, $2)", project, tid)
        finally:
            await conn.close()

    asyncio.run(plant())
    with httpx.Client(timeout=30) as c:
        def failed() -> dict[str, Any] | None:
            r = c.get(f"{server.http}/api/v1/trajectories/{broken_native}/explain",
                      params={"project": project})
            return r.json() if r.status_code == 200 and r.json()["derivation_error"] else None

        explained = wait_for(failed, what="the derivation error to be recorded")
        assert "JSONDecodeError" in explained["derivation_error"]
        r = c.get(f"{server.http}/api/v1/trajectories/{broken_native}",
                  params={"project": project})
        assert r.status_code == 422 and "could not be derived" in r.json()["detail"]
        items = get_json(c, f"{server.http}/api/v1/trajectories", project=project)["items"]
        assert any(i["derivation_error"] for i in items)

        for tid in (broken_otlp, lost):
            spans = stored_spans(c, server, project, tid)
            assert [s["name"] for s in spans] == ["broken"]
            assert "trajhub.unreadable_body" in spans[0]["attributes"]
            final_trajectory(c, server.http, project, tid)
        assert str(elsewhere.dict_id()) in spans[0]["attributes"]["trajhub.unreadable_body"]
        assert_worker_still_derives(c, server, project)


# ---------------------------------------------------------------------------- numbers

@pytest.mark.parametrize(("fields", "named"), [
    ({"startTimeUnixNano": "-1"}, "startTimeUnixNano"),
    ({"startTimeUnixNano": str(2**63)}, "start_time_unix_nano"),
    ({"endTimeUnixNano": str(2**64)}, "endTimeUnixNano"),
    ({"kind": 2**40}, "kind"),
    ({"kind": 7}, "kind"),
    ({"status": {"code": 2**33}}, "status.code"),
    ({"flags": -1}, "flags"),
    ({"droppedAttributesCount": -1}, "droppedAttributesCount"),
    ({"attributes": [{"key": "n", "value": {"intValue": str(2**64)}}]}, "intValue"),
    ({"attributes": [{"key": "n", "value": {"intValue": 2**64}}]}, "intValue"),
    ({"events": [{"name": "e", "timeUnixNano": str(2**63 + 5)}]}, "events.time_unix_nano"),
])
def test_otlp_json_numbers_out_of_range_are_rejected_per_span(
        server: ServerProcess, project: str, fields: dict[str, Any], named: str) -> None:
    tid = os.urandom(16).hex()
    with httpx.Client(timeout=30) as c:
        r = post_json(c, server, project, otlp_json_request(
            otlp_json_span(tid, "bad", **fields), otlp_json_span(tid, "good")))
        assert r.status_code == 200, r.text
        partial = r.json()["partialSuccess"]
        assert partial["rejectedSpans"] == "1"
        assert named in partial["errorMessage"] and "'bad'" in partial["errorMessage"]
        assert [s["name"] for s in stored_spans(c, server, project, tid)] == ["good"]


def test_protobuf_times_at_or_past_2_63_are_rejected_with_a_reason(
        server: ServerProcess, project: str) -> None:
    """fixed64 times ≥ 2^63 are valid uint64 but beyond a bigint: rejected per span over HTTP
    and gRPC, never 500 / UNKNOWN."""
    tid = new_trace_id()
    late = span(tid, name="late", start=2**63, duration=10)
    later = span(tid, name="later", start=START_NS, duration=2**64 - 1 - START_NS)
    good = span(tid, name="good")
    body = request([late, later, good])
    with httpx.Client(timeout=30) as c:
        r = c.post(f"{server.http}/v1/traces", content=body.SerializeToString(),
                   headers={**PB, "trajhub-project": project})
        assert r.status_code == 200
        partial = ExportTraceServiceResponse.FromString(r.content).partial_success
        assert partial.rejected_spans == 2
        assert "start_time_unix_nano" in partial.error_message
        assert "end_time_unix_nano" in partial.error_message
        assert "2262" in partial.error_message
        with grpc.insecure_channel(server.grpc) as channel:
            response = trace_service_pb2_grpc.TraceServiceStub(channel).Export(
                body, metadata=[("trajhub-project", project)], timeout=30)
        assert response.partial_success.rejected_spans == 2
        assert [s["name"] for s in stored_spans(c, server, project, tid.hex())] == ["good"]


def test_protobuf_unknown_kind_and_status_are_rejected_per_span(
        server: ServerProcess, project: str) -> None:
    tid = new_trace_id()
    odd_kind = span(tid, name="odd-kind")
    odd_kind.kind = 40000  # type: ignore[assignment]
    odd_status = span(tid, name="odd-status")
    odd_status.status.code = 7  # type: ignore[assignment]
    with httpx.Client(timeout=30) as c:
        r = c.post(f"{server.http}/v1/traces", headers={**PB, "trajhub-project": project},
                   content=request([odd_kind, odd_status, span(tid)]).SerializeToString())
        partial = ExportTraceServiceResponse.FromString(r.content).partial_success
        assert r.status_code == 200 and partial.rejected_spans == 2
        assert "kind 40000" in partial.error_message and "status.code 7" in \
            partial.error_message


@pytest.mark.parametrize(("fields", "named"), [
    ({"started_at_micros": 2**62}, "largest storable time"),
    ({"started_at_micros": -5}, "started_at_micros"),
    ({"duration_micros": 2**62}, "largest storable time"),
    ({"duration_micros": -1}, "duration_micros"),
    ({"status_code": 2**40}, "status_code"),
    ({"tags_long": {"tokens": 2**63}}, "tags_long.tokens"),
])
def test_native_numbers_out_of_range_are_rejected_per_span(
        server: ServerProcess, project: str, fields: dict[str, Any], named: str) -> None:
    tid = os.urandom(16).hex()
    with httpx.Client(timeout=30) as c:
        r = c.post(f"{server.http}/v1/loop/traces/ingest", headers={"trajhub-project": project},
                   json={"spans": [native_span(tid, name="bad", **fields),
                                   native_span(tid, name="good")]})
        assert r.status_code == 200
        reply = r.json()
        assert reply["code"] == 0 and "rejected 1" in reply["msg"]
        assert named in reply["msg"] and "'bad'" in reply["msg"]
        spans = stored_spans(c, server, project, tid)
        assert [s["name"] for s in spans] == ["good"]


# ---------------------------------------------------------------------------- ids and names

@pytest.mark.parametrize("bad_id", [
    "0x" + "ab" * 15, "-" + "1" * 31, " " + "a" * 31, "a" * 15 + "_" + "a" * 16, "0" * 32,
    "a" * 31, "g" * 32,
])
def test_native_trace_ids_must_be_hex(server: ServerProcess, project: str, bad_id: str) -> None:
    with httpx.Client(timeout=30) as c:
        r = c.post(f"{server.http}/v1/loop/traces/ingest", headers={"trajhub-project": project},
                   json={"spans": [native_span(bad_id)]})
        assert r.status_code == 400
        assert "invalid trace_id" in r.json()["msg"]
        assert get_json(c, f"{server.http}/api/v1/traces", project=project)["items"] == []


def test_native_span_and_parent_ids_must_be_hex(server: ServerProcess, project: str) -> None:
    tid = os.urandom(16).hex()
    bad_span = native_span(tid, name="bad-span")
    bad_span["span_id"] = "0x" + "1" * 14
    with httpx.Client(timeout=30) as c:
        r = c.post(f"{server.http}/v1/loop/traces/ingest", headers={"trajhub-project": project},
                   json={"spans": [bad_span, native_span(tid, name="bad-parent",
                                                         parent="-" + "1" * 15),
                                   native_span(tid, name="root-with-empty-parent", parent="")]})
        msg = r.json()["msg"]
        assert "rejected 2" in msg and "invalid span_id" in msg and "invalid parent_id" in msg
        assert [s["name"] for s in stored_spans(c, server, project, tid)] == [
            "root-with-empty-parent"]


def test_otlp_json_ids_must_be_plain_hex(server: ServerProcess, project: str) -> None:
    tid = os.urandom(16).hex()
    spaced = otlp_json_span(tid, "spaced")
    spaced["spanId"] = "ab cd ef 01 02 03 04 05"
    with httpx.Client(timeout=30) as c:
        r = post_json(c, server, project, otlp_json_request(spaced, otlp_json_span(tid)))
        assert r.json()["partialSuccess"]["rejectedSpans"] == "1"
        assert "invalid span_id" in r.json()["partialSuccess"]["errorMessage"]


def test_project_names_beyond_the_limit_get_invalid_argument(server: ServerProcess) -> None:
    """A 4,000-character project once got 503 forever (btree row too large)."""
    long_name = "p" * 4000
    body = request([span(new_trace_id())])
    with httpx.Client(timeout=30) as c:
        r = c.post(f"{server.http}/v1/traces", content=body.SerializeToString(),
                   headers={**PB, "trajhub-project": long_name})
        assert r.status_code == 400
        assert "the limit is 128" in status_pb2.Status.FromString(r.content).message
        r = c.post(f"{server.http}/v1/traces", content=body.SerializeToString(),
                   headers={**PB, "trajhub-project": "a/b"})
        assert r.status_code == 400
        assert "characters outside" in status_pb2.Status.FromString(r.content).message

        tid = new_trace_id()
        r = c.post(f"{server.http}/v1/traces", headers=PB, content=request(
            [span(tid)], resource={"trajhub.project": long_name}).SerializeToString())
        assert r.status_code == 400 and "trajhub.project" in \
            status_pb2.Status.FromString(r.content).message

        r = c.post(f"{server.http}/v1/loop/traces/ingest",
                   json={"spans": [native_span(os.urandom(16).hex(), workspace_id=long_name)]})
        assert r.status_code == 400 and "workspace_id" in r.json()["msg"]
        assert "128" in r.json()["msg"]

    with grpc.insecure_channel(server.grpc) as channel, pytest.raises(grpc.RpcError) as failure:
        trace_service_pb2_grpc.TraceServiceStub(channel).Export(
            body, metadata=[("trajhub-project", long_name)], timeout=30)
    assert failure.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert "128" in (failure.value.details() or "")


# ---------------------------------------------------------------------------- content types

def test_ingest_endpoints_accept_only_their_declared_types(
        server: ServerProcess, project: str) -> None:
    """A browser's cross-site "simple request" (text/plain, form posts) is refused with 415."""
    native = {"spans": [native_span(os.urandom(16).hex())]}
    with httpx.Client(timeout=30) as c:
        for content_type in ("text/plain", "application/x-www-form-urlencoded"):
            r = c.post(f"{server.http}/v1/loop/traces/ingest", content=orjson.dumps(native),
                       headers={"content-type": content_type, "trajhub-project": project})
            assert r.status_code == 415, r.text
            r = c.post(f"{server.http}/v1/traces", content=b"{}",
                       headers={"content-type": content_type, "trajhub-project": project})
            assert r.status_code == 415
        r = c.post(f"{server.http}/v1/loop/files/upload", content=b"hello",
                   headers={"content-type": "text/plain", "trajhub-project": project})
        assert r.status_code == 415 and "multipart/form-data" in r.json()["msg"]
        # multipart needs no preflight, so a cross-site form post is refused by its Origin
        r = c.post(f"{server.http}/v1/loop/files/upload", files={"file": ("k.txt", b"evil")},
                   headers={"origin": "https://evil.example", "trajhub-project": project})
        assert r.status_code == 403 and "evil.example" in r.json()["msg"]
        assert c.get(f"{server.http}/api/v1/files/k.txt",
                     params={"project": project}).status_code == 404
        assert get_json(c, f"{server.http}/api/v1/traces", project=project)["items"] == []


def test_upload_over_the_limit_is_refused_while_streaming(
        database: TestDatabase, tmp_path: Any) -> None:
    """The limit applies as the body arrives: a declared length over it is refused before
    reading, and a chunked upload is cut off once it passes the limit."""
    limit = 256 * 1024
    small = ServerProcess.start(database.url, tmp_path,
                                extra_env={"TRAJHUB_MAX_REQUEST_BYTES": str(limit)})
    sent = 0

    def chunks() -> Any:
        nonlocal sent
        yield (b"--xx\r\nContent-Disposition: form-data; name=\"file\"; filename=\"big.bin\"\r\n"
               b"Content-Type: application/octet-stream\r\n\r\n")
        for _ in range(CHUNKS):  # 3,200 × 64 KiB = 200 MiB, far past the limit
            sent += 1
            yield b"x" * 65536
        yield b"\r\n--xx--\r\n"

    try:
        with httpx.Client(timeout=30) as c:
            r = c.post(f"{small.http}/v1/loop/files/upload",
                       files={"file": ("big.bin", b"x" * (2 * limit))})
            assert r.status_code == 413
            try:
                r = c.post(f"{small.http}/v1/loop/files/upload", content=chunks(),
                           headers={"content-type": "multipart/form-data; boundary=xx"})
            except httpx.HTTPError:
                pass  # the server answered 413 and closed while the client was still sending
            else:
                assert r.status_code == 413
            assert sent < CHUNKS, "the whole body was read before the limit was applied"
            r = c.post(f"{small.http}/v1/loop/files/upload",
                       files={"file": ("small.bin", b"ok")})
            assert r.json() == {"code": 0, "msg": ""}
    finally:
        assert small.stop() == 0


# ---------------------------------------------------------------------------- classification

def test_the_trajectory_worker_records_a_trace_the_database_refuses_and_stores_the_rest(
        server: ServerProcess, database: TestDatabase, project: str) -> None:
    """Real PostgreSQL, rows built past the sanitizer: the batch is refused (NUL in text), so
    the worker stores trace by trace; the refused trace gets a derivation_error, the other its
    trajectory. (`server` has migrated the database.)"""
    from datetime import UTC, datetime

    from trajhub.records import write_values
    from trajhub.records.traces import TraceSummary
    from trajhub.records.trajectories import TrajectorySummary
    from trajhub.service.derivation import store_results
    from trajhub.storage.derivation_store import TraceWrite, TrajectoryWrite
    from trajhub.storage.stored_documents import pack

    now = datetime.now(UTC)
    good_id, bad_id = os.urandom(16).hex(), os.urandom(16).hex()

    def result(trace_id: str, root_name: str) -> tuple[TraceWrite, TrajectoryWrite]:
        trace = write_values(TraceSummary, None, {
            "root_span_id": "1" * 16, "root_name": root_name, "service_name": "svc",
            "start_ns": 1, "end_ns": 2, "span_count": 1, "error_count": 0,
            "last_received_at": now})
        summary = write_values(TrajectorySummary, None, {
            "normalizer_version": "test", "root_name": root_name})
        return (TraceWrite(project, trace_id, trace),
                TrajectoryWrite(project, trace_id, now, True, pack("{}"), pack("[]"), [], summary))

    async def scenario() -> dict[str, Any]:
        conn = await asyncpg.connect(database.url)
        try:
            async with conn.transaction():
                await store_results(
                    conn, [result(good_id, "fine"), result(bad_id, "nul\x00here")])
            rows = await conn.fetch("SELECT trace_id, root_name, derivation_error "
                                    "FROM trajectories WHERE project = $1", project)
        finally:
            await conn.close()
        return {r["trace_id"]: dict(r) for r in rows}

    stored = asyncio.run(scenario())
    assert stored[good_id]["root_name"] == "fine" and stored[good_id]["derivation_error"] is None
    assert stored[bad_id]["derivation_error"].startswith("CharacterNotInRepertoireError")


def test_database_errors_are_classified_by_kind() -> None:
    """Transient faults are 503 / UNAVAILABLE; deterministic ones 500 / INTERNAL (logged, not
    retried forever): a too-long key is a program limit, not an outage."""
    from trajhub.service.errors import Unavailable, ingest_error
    from trajhub.storage.database import is_transient

    transient = [asyncpg.InternalClientError("cannot switch to state 15; another operation is "
                                             "in progress"),
                 asyncpg.ConnectionDoesNotExistError("connection was closed"),
                 asyncpg.AdminShutdownError("terminating connection due to administrator "
                                            "command"),
                 asyncpg.TooManyConnectionsError("too many clients"),
                 asyncpg.SerializationError("could not serialize access"),
                 asyncpg.LockNotAvailableError("could not obtain lock"),
                 ConnectionRefusedError(111, "refused"), TimeoutError()]
    deterministic = [asyncpg.ProgramLimitExceededError("index row size exceeds maximum"),
                     asyncpg.CharacterNotInRepertoireError("invalid byte sequence"),
                     asyncpg.UniqueViolationError("duplicate key"),
                     asyncpg.DataError("value out of range"), KeyError("bug")]
    for error in transient:
        assert is_transient(error), error
        mapped = ingest_error(error)
        assert isinstance(mapped, Unavailable) and mapped.http_status == 503
        assert mapped.grpc_code == grpc.StatusCode.UNAVAILABLE
    for error in deterministic:
        assert not is_transient(error), error
        mapped = ingest_error(error)
        assert mapped.http_status == 500 and mapped.grpc_code == grpc.StatusCode.INTERNAL


def test_a_document_whose_dictionary_is_missing_answers_503_naming_it(
        server: ServerProcess, database: TestDatabase, project: str) -> None:
    """A stored document that needs a compression dictionary the database does not hold (a
    restore without `compression_dictionaries`, say) cannot be read: 503 naming the
    dictionary, not 500."""
    tid = new_trace_id()
    r = httpx.post(f"{server.http}/v1/traces", content=request([span(tid, "agent")])
                   .SerializeToString(), headers={"content-type": "application/x-protobuf",
                                                  "trajhub-project": project})
    assert r.status_code == 200
    with httpx.Client(timeout=30) as c:
        final_trajectory(c, server.http, project, tid.hex())
        samples = [f'{{"step": {i}, "kind": "agent", "name": "planner"}}'.encode() * 8
                   for i in range(300)]
        elsewhere = zstandard.ZstdCompressionDict(compression_dictionaries.train(samples))
        orphan = zstandard.ZstdCompressor(dict_data=elsewhere).compress(b'{"id": "x"}')

        async def replace() -> None:
            conn = await asyncpg.connect(database.url)
            try:
                await conn.execute("UPDATE trajectories SET document = $3 "
                                   "WHERE project = $1 AND trace_id = $2",
                                   project, tid.hex(), orphan)
            finally:
                await conn.close()

        asyncio.run(replace())
        r = c.get(f"{server.http}/api/v1/trajectories/{tid.hex()}", params={"project": project})
        assert r.status_code == 503
        assert str(elsewhere.dict_id()) in r.json()["detail"]
