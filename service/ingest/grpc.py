"""OTLP/gRPC: `opentelemetry.proto.collector.trace.v1.TraceService/Export`, and the same for
the logs and metrics signals (`LogsService`, `MetricsService`: service/ingest/signals.py).

The method is registered with no deserializer, so the handler gets the raw request bytes and the
ingest workers decode them (gRPC has already undone `grpc-encoding: gzip` and enforced the
receive limit, answering RESOURCE_EXHAUSTED beyond it).
"""

from __future__ import annotations

import time

import grpc

from trajhub.service import access, metrics
from trajhub.service.auth import IngestGate
from trajhub.service.errors import grpc_status, ingest_error
from trajhub.service.ingest.pool import IngestPool
from trajhub.service.ingest.signals import SIGNALS, Signal
from trajhub.service.ingest.worker import KIND_OTLP_PROTOBUF, IngestJob
from trajhub.service.projects import PROJECT_HEADERS


def _metadata_project(metadata: dict[str, str]) -> str | None:
    """The project the call's metadata names (validated by the ingest worker), if any."""
    for key in PROJECT_HEADERS:
        if metadata.get(key):
            return metadata[key]
    return None


def otlp_service(signal: Signal, pool: IngestPool, max_bytes: int, gate: IngestGate
                 ) -> grpc.GenericRpcHandler:
    """The `Export` method of one signal's gRPC service."""
    kind = signal.kinds[KIND_OTLP_PROTOBUF]
    path = signal.export_path

    async def export(request: bytes, context: grpc.aio.ServicerContext[bytes, bytes]) -> bytes:
        started = time.perf_counter()
        metadata = {key: value for key, value in context.invocation_metadata() or ()
                    if isinstance(value, str)}
        project = _metadata_project(metadata)
        in_flight = metrics.IN_FLIGHT.labels("grpc")
        in_flight.inc()
        try:
            # the API key in the `authorization` metadata decides the project
            project = await gate.project(metadata.get("authorization"), project)
            result = await pool.submit(IngestJob(kind, request, "", project, max_bytes))
        except Exception as exc:  # never UNKNOWN: every failure maps to its code
            error = ingest_error(exc)
            status = grpc_status(error)
            access.record("grpc", "POST", path, status.code.name,
                          time.perf_counter() - started, project,
                          metric_status=error.http_status)
            await context.abort(status.code, status.details, status.trailing_metadata)
        finally:
            in_flight.dec()
        access.record("grpc", "POST", path, grpc.StatusCode.OK.name,
                      time.perf_counter() - started, project, result.accepted, result.rejected,
                      metric_status=200)
        return signal.response(result).SerializeToString()

    return grpc.method_handlers_generic_handler(signal.service, {
        "Export": grpc.unary_unary_rpc_method_handler(
            export, request_deserializer=None, response_serializer=None),
    })


def create_server(pool: IngestPool, max_bytes: int, gate: IngestGate) -> grpc.aio.Server:
    server = grpc.aio.server(options=[
        ("grpc.max_receive_message_length", max_bytes),
        ("grpc.max_send_message_length", 4 * 1024 * 1024),
        # OTLP requests are ~1 MB: a 64 KB stream window made every one wait for a dozen
        # WINDOW_UPDATE round trips through the event loop
        ("grpc.http2.lookahead_bytes", 8 * 1024 * 1024),
        # the Collector's exporters ping every 10 s; accept that without GOAWAY (docs/otlp.md A10)
        ("grpc.http2.min_ping_interval_without_data_ms", 5000),
        ("grpc.http2.min_recv_ping_interval_without_data_ms", 5000),
        ("grpc.keepalive_permit_without_calls", 1),
        ("grpc.http2.max_ping_strikes", 0),
        # a second server on a busy port must fail to bind, not split the traffic
        ("grpc.so_reuseport", 0),
    ])
    server.add_generic_rpc_handlers(tuple(otlp_service(signal, pool, max_bytes, gate)
                                          for signal in SIGNALS))
    return server
