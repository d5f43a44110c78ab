"""The captured real-client requests in tests/fixtures/real-clients, and replaying them.

Most captures hold trace exports only. The `otel_genai` event captures (`EVENT_CLIENTS`) also hold
the log exports that carry their message content (`*_v1_logs.*`), each over HTTP or gRPC:
`replay_signals` replays such a run, over its own transport, its signals in the order asked."""

from __future__ import annotations

import gzip
import json
import zlib
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import grpc
import httpx
from opentelemetry.proto.collector.logs.v1 import logs_service_pb2, logs_service_pb2_grpc
from opentelemetry.proto.collector.trace.v1 import trace_service_pb2, trace_service_pb2_grpc

from tests.normalize_support import load_file

CAPTURES = Path(__file__).parent / "fixtures" / "real-clients"
#: the request headers a replay keeps (as the capture harness did)
KEPT_HEADERS = {"content-type", "content-encoding", "authorization", "cozeloop-workspace-id"}
#: `otel_genai` with its content sent as OTLP log events (tests/capture/run_python.py): client →
#: OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT. Its span-only twin is `otel_genai`.
EVENT_CLIENTS = {"otel_genai_event_only": "EVENT_ONLY",
                 "otel_genai_span_and_event": "SPAN_AND_EVENT"}


@dataclass(frozen=True)
class Capture:
    path: Path  # the .bin body
    protocol: str  # "http" or "grpc"
    url_path: str
    headers: dict[str, str]

    @property
    def client(self) -> str:
        return self.path.parent.parent.name

    @property
    def run(self) -> str:
        return self.path.parent.name

    @property
    def signal(self) -> str:
        """"logs" for a log export (`…_v1_logs.bin`), else "traces"."""
        return "logs" if self.path.stem.endswith("_v1_logs") else "traces"

    @property
    def body(self) -> bytes:
        """The request body exactly as sent (still compressed if it was)."""
        return self.path.read_bytes()

    @property
    def decoded_body(self) -> bytes:
        """The body with its content-encoding undone (the multi-agent captures are gzipped)."""
        encoding = self.headers.get("content-encoding", "").lower()
        if encoding == "gzip":
            return gzip.decompress(self.body)
        if encoding == "deflate":
            return zlib.decompress(self.body)
        return self.body

    def trace_ids(self) -> list[str]:
        """The trace id of every span the request carries, in request order (none for logs)."""
        return [] if self.signal == "logs" else [span.trace_id for span in load_file(self.path)]

    def log_records(self) -> list[tuple[str, str, str]]:
        """(trace id, span id, event name) of every log record a log export carries, in
        request order (hex ids, empty when the record has none)."""
        if self.signal != "logs":
            return []
        request = logs_service_pb2.ExportLogsServiceRequest.FromString(self.decoded_body)
        return [(r.trace_id.hex(), r.span_id.hex(), r.event_name)
                for rl in request.resource_logs for sl in rl.scope_logs for r in sl.log_records]

    def __str__(self) -> str:
        return f"{self.client}/{self.run}/{self.path.name}"


def _every_request() -> list[Capture]:
    found = []
    for body in sorted(CAPTURES.glob("*/*/*.bin")):
        meta = json.loads(body.with_suffix(".json").read_text())
        protocol = "grpc" if body.name.startswith("grpc_") else "http"
        headers = {k.lower(): v for k, v in meta.get("headers", {}).items()
                   if k.lower() in KEPT_HEADERS}
        found.append(Capture(body, protocol, meta.get("path", "/v1/traces"), headers))
    return found


def all_captures() -> list[Capture]:
    """Every captured trace export (the log exports are in `capture_runs`)."""
    return [c for c in _every_request() if c.signal == "traces"]


def capture_runs() -> dict[str, list[Capture]]:
    """`client/run` → every request of that run, trace and log exports, in capture order."""
    runs: dict[str, list[Capture]] = {}
    for c in _every_request():
        runs.setdefault(f"{c.client}/{c.run}", []).append(c)
    return runs


def replay(capture: Capture, http_base: str, grpc_target: str, project: str | None = None,
           headers: dict[str, str] | None = None
           ) -> (httpx.Response | trace_service_pb2.ExportTraceServiceResponse
                 | logs_service_pb2.ExportLogsServiceResponse):
    """Send one capture exactly as captured (plus an optional trajhub-project header and
    `headers`, e.g. an API key's `authorization`)."""
    extra = {**({"trajhub-project": project} if project else {}), **(headers or {})}
    if capture.protocol == "grpc":
        with grpc.insecure_channel(grpc_target) as channel:
            if capture.signal == "logs":
                logs = logs_service_pb2_grpc.LogsServiceStub(channel)
                return logs.Export(
                    logs_service_pb2.ExportLogsServiceRequest.FromString(capture.decoded_body),
                    metadata=list(extra.items()), timeout=30)
            stub = trace_service_pb2_grpc.TraceServiceStub(channel)
            request = trace_service_pb2.ExportTraceServiceRequest.FromString(
                capture.decoded_body)
            return stub.Export(request, metadata=list(extra.items()), timeout=30)
    path = "/v1/logs" if capture.signal == "logs" else capture.url_path
    return httpx.post(http_base + path, content=capture.body,
                      headers={**capture.headers, **extra}, timeout=30)


def replay_run(run: str, http_base: str, grpc_target: str, project: str,
               headers: dict[str, str] | None = None) -> Counter[str]:
    """Replay the HTTP requests of one captured run (`client/run`) into `project`, each of which
    must be accepted; returns how many of the run's spans each trace id has."""
    trace_ids: Counter[str] = Counter()
    for capture in capture_runs()[run]:
        if capture.protocol != "http" or capture.signal != "traces":
            continue
        response = replay(capture, http_base, grpc_target, project, headers)
        assert isinstance(response, httpx.Response)
        assert response.status_code == 200, (str(capture), response.status_code, response.text)
        trace_ids.update(capture.trace_ids())
    return trace_ids


def replay_signals(run: str, http_base: str, grpc_target: str, project: str,
                   order: tuple[str, ...] = ("traces", "logs")) -> Counter[str]:
    """Replay the requests of one captured run (`client/run`) into `project` over the transport
    each was captured on: the exports of each signal of `order` ("traces", "logs"), signal by
    signal, each in capture order. Each must be accepted whole; returns how many of the run's
    spans each trace id has."""
    requests = capture_runs()[run]
    trace_ids: Counter[str] = Counter()
    for signal in order:
        for capture in (c for c in requests if c.signal == signal):
            response = replay(capture, http_base, grpc_target, project)
            if isinstance(response, httpx.Response):
                assert response.status_code == 200, (str(capture), response.status_code,
                                                     response.text)
            else:  # gRPC: an answer with partial_success set rejected some of it
                assert not response.HasField("partial_success"), (str(capture), response)
            trace_ids.update(capture.trace_ids())
    return trace_ids
