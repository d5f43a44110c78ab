"""OTLP/gRPC receiver conformance (docs/otlp.md A12 items 1, 5, 7, 8)."""

from __future__ import annotations

import time

import grpc
import httpx
from opentelemetry.proto.collector.trace.v1 import trace_service_pb2_grpc

from tests.harness import ServerProcess, get_json
from tests.otlp_builders import new_trace_id, request, span


def stub(server: ServerProcess, **options: object) -> trace_service_pb2_grpc.TraceServiceStub:
    channel = grpc.insecure_channel(server.grpc, options=list(options.items()))
    return trace_service_pb2_grpc.TraceServiceStub(channel)


def test_export_is_stored(server: ServerProcess, project: str) -> None:
    tid = new_trace_id()
    response = stub(server).Export(request([span(tid), span(tid)]),
                                   metadata=[("trajhub-project", project)], timeout=10)
    assert not response.HasField("partial_success")
    with httpx.Client() as c:
        spans = get_json(c, f"{server.http}/api/v1/traces/{tid.hex()}", project=project,
                         view="flat")["spans"]
    assert len(spans) == 2


def test_gzip_compressed_call_works(server: ServerProcess, project: str) -> None:
    tid = new_trace_id()
    stub(server).Export(request([span(tid)]), metadata=[("trajhub-project", project)],
                        compression=grpc.Compression.Gzip, timeout=10)
    with httpx.Client() as c:
        assert get_json(c, f"{server.http}/api/v1/traces/{tid.hex()}", project=project)


def test_half_invalid_batch_gets_partial_success(server: ServerProcess, project: str) -> None:
    tid = new_trace_id()
    response = stub(server).Export(
        request([span(tid), span(bytes(16)), span(tid, span_id=b"\x01\x02")]),
        metadata=[("trajhub-project", project)], timeout=10)
    assert response.partial_success.rejected_spans == 2
    assert "invalid" in response.partial_success.error_message


def test_all_invalid_batch_is_invalid_argument(server: ServerProcess) -> None:
    try:
        stub(server).Export(request([span(bytes(16))]), timeout=10)
    except grpc.RpcError as error:
        assert error.code() == grpc.StatusCode.INVALID_ARGUMENT
        assert "invalid trace_id" in error.details()
    else:
        raise AssertionError("expected INVALID_ARGUMENT")


def test_same_request_twice_is_stored_once(server: ServerProcess, project: str) -> None:
    tid = new_trace_id()
    req = request([span(tid, name=f"s{i}") for i in range(4)])
    for _ in range(2):
        stub(server).Export(req, metadata=[("trajhub-project", project)], timeout=10)
    with httpx.Client() as c:
        spans = get_json(c, f"{server.http}/api/v1/traces/{tid.hex()}", project=project,
                         view="flat")["spans"]
    assert len(spans) == 4


def test_message_over_the_limit_is_resource_exhausted(tmp_path, database) -> None:  # type: ignore[no-untyped-def]
    limited = ServerProcess.start(database.url, tmp_path,
                                  extra_env={"TRAJHUB_MAX_REQUEST_BYTES": str(1024 * 1024)})
    try:
        tid = new_trace_id()
        big = request([span(tid, attributes={"input.value": "x" * (2 * 1024 * 1024)})])
        try:
            stub(limited, **{"grpc.max_send_message_length": 64 * 1024 * 1024}).Export(
                big, timeout=10)
        except grpc.RpcError as error:
            assert error.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
        else:
            raise AssertionError("expected RESOURCE_EXHAUSTED")
    finally:
        assert limited.stop() == 0


def test_default_limit_accepts_messages_over_grpcs_4_mib_default(server: ServerProcess,
                                                                  project: str) -> None:
    tid = new_trace_id()
    big = request([span(tid, attributes={"input.value": "x" * (6 * 1024 * 1024)})])
    response = stub(server, **{"grpc.max_send_message_length": 64 * 1024 * 1024}).Export(
        big, metadata=[("trajhub-project", project)], timeout=20)
    assert not response.HasField("partial_success")
    with httpx.Client() as c:
        spans = get_json(c, f"{server.http}/api/v1/traces/{tid.hex()}", project=project,
                         view="flat")["spans"]
    assert len(spans) == 1
    assert len(spans[0]["attributes"]["input.value"]) == 6 * 1024 * 1024


def test_keepalive_pings_every_10s_cause_no_goaway(server: ServerProcess, project: str) -> None:
    """The Collector's exporters ping every 10 s (even between calls); the server must not
    answer with GOAWAY too_many_pings, which would drop the connection. A client pinging every
    second for 6 s makes the point sooner: the channel must stay READY throughout."""
    options = [("grpc.keepalive_time_ms", 1000), ("grpc.keepalive_timeout_ms", 2000),
               ("grpc.keepalive_permit_without_calls", 1),
               ("grpc.http2.max_pings_without_data", 0)]
    channel = grpc.insecure_channel(server.grpc, options=options)
    states: list[grpc.ChannelConnectivity] = []
    channel.subscribe(states.append, try_to_connect=True)
    client = trace_service_pb2_grpc.TraceServiceStub(channel)
    client.Export(request([span(new_trace_id())]), metadata=[("trajhub-project", project)],
                  timeout=10)
    time.sleep(6)
    client.Export(request([span(new_trace_id())]), metadata=[("trajhub-project", project)],
                  timeout=10)
    after_ready = states[states.index(grpc.ChannelConnectivity.READY):]
    assert set(after_ready) == {grpc.ChannelConnectivity.READY}, states
    channel.close()
