"""A local OTLP/gRPC receiver that saves every trace and log export exactly as sent.

Each `TraceService/Export` call becomes `grpc_NNN_v1_traces.bin` (the serialized
`ExportTraceServiceRequest`, as the exporter put it in its gRPC message) and
`grpc_NNN_v1_traces.json` (the method and the request metadata), the layout tests/captures.py
and tests/normalize_support.py read; each `LogsService/Export` call likewise becomes
`grpc_NNN_v1_logs.{bin,json}` (an `ExportLogsServiceRequest`). Anything else (apmplus also
exports runtime metrics) is answered UNIMPLEMENTED, as a collector of traces and logs would.

With `gzip_bodies`, each message is saved gzip-compressed (as a gzip-compressing exporter sent
it: gRPC hands the handler the message decompressed), with `content-encoding: gzip` under
`headers` in its `.json`, as the HTTP captures say theirs.
"""

from __future__ import annotations

import gzip
from concurrent import futures
from pathlib import Path
from typing import Any

import grpc

from tests.capture.receiver import CaptureFiles

TRACE_EXPORT = "/opentelemetry.proto.collector.trace.v1.TraceService/Export"
LOGS_EXPORT = "/opentelemetry.proto.collector.logs.v1.LogsService/Export"
#: the saved file's name for each method received
_NAMES = {TRACE_EXPORT: "v1_traces", LOGS_EXPORT: "v1_logs"}


class _Handler(grpc.GenericRpcHandler):
    def __init__(self, outdir: Path, gzip_bodies: bool) -> None:
        self.files = CaptureFiles(outdir)
        self.gzip_bodies = gzip_bodies

    def service(self, handler_call_details: Any) -> grpc.RpcMethodHandler | None:
        method = handler_call_details.method
        if method not in _NAMES:
            return None
        metadata = {k: v for k, v in handler_call_details.invocation_metadata
                    if isinstance(v, str)}

        def export(request: bytes, context: grpc.ServicerContext) -> bytes:
            meta: dict[str, Any] = {"method": method, "metadata": metadata}
            if self.gzip_bodies:
                meta["headers"] = {"content-encoding": "gzip"}
                request = gzip.compress(request, mtime=0)
            self.files.save("grpc", _NAMES[method], meta, request)
            return b""  # an empty Export…ServiceResponse: everything accepted

        # no (de)serializers: the handler sees the request's bytes as sent
        return grpc.unary_unary_rpc_method_handler(export)


class GrpcReceiver:
    """`with GrpcReceiver(outdir) as r:` … exporters send to `r.endpoint` (host:port) …"""

    def __init__(self, outdir: Path, gzip_bodies: bool = False) -> None:
        self._handler = _Handler(outdir, gzip_bodies)
        self._server = grpc.server(futures.ThreadPoolExecutor(max_workers=4))
        self._server.add_generic_rpc_handlers((self._handler,))
        self._port = self._server.add_insecure_port("127.0.0.1:0")

    @property
    def endpoint(self) -> str:
        return f"127.0.0.1:{self._port}"

    @property
    def count(self) -> int:
        return self._handler.files.count

    def __enter__(self) -> GrpcReceiver:
        self._server.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.stop(grace=None)
