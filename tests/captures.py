"""The captured real-client requests in tests/fixtures/real-clients, and replaying them."""

from __future__ import annotations

import gzip
import json
import zlib
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import grpc
import httpx
from opentelemetry.proto.collector.trace.v1 import trace_service_pb2, trace_service_pb2_grpc

from tests.normalize_support import load_file

CAPTURES = Path(__file__).parent / "fixtures" / "real-clients"
#: the request headers a replay keeps (as the capture harness did)
KEPT_HEADERS = {"content-type", "content-encoding", "authorization", "cozeloop-workspace-id"}


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
        """The trace id of every span the request carries, in request order."""
        return [span.trace_id for span in load_file(self.path)]

    def __str__(self) -> str:
        return f"{self.client}/{self.run}/{self.path.name}"


def all_captures() -> list[Capture]:
    found = []
    for body in sorted(CAPTURES.glob("*/*/*.bin")):
        meta = json.loads(body.with_suffix(".json").read_text())
        protocol = "grpc" if body.name.startswith("grpc_") else "http"
        headers = {k.lower(): v for k, v in meta.get("headers", {}).items()
                   if k.lower() in KEPT_HEADERS}
        found.append(Capture(body, protocol, meta.get("path", "/v1/traces"), headers))
    return found


def capture_runs() -> dict[str, list[Capture]]:
    runs: dict[str, list[Capture]] = {}
    for c in all_captures():
        runs.setdefault(f"{c.client}/{c.run}", []).append(c)
    return runs


def replay(capture: Capture, http_base: str, grpc_target: str, project: str | None = None,
           headers: dict[str, str] | None = None
           ) -> httpx.Response | trace_service_pb2.ExportTraceServiceResponse:
    """Send one capture exactly as captured (plus an optional trajhub-project header and
    `headers`, e.g. an API key's `authorization`)."""
    extra = {**({"trajhub-project": project} if project else {}), **(headers or {})}
    if capture.protocol == "grpc":
        with grpc.insecure_channel(grpc_target) as channel:
            stub = trace_service_pb2_grpc.TraceServiceStub(channel)
            request = trace_service_pb2.ExportTraceServiceRequest.FromString(capture.body)
            return stub.Export(request, metadata=list(extra.items()), timeout=30)
    return httpx.post(http_base + capture.url_path, content=capture.body,
                      headers={**capture.headers, **extra}, timeout=30)


def replay_run(run: str, http_base: str, grpc_target: str, project: str,
               headers: dict[str, str] | None = None) -> Counter[str]:
    """Replay the HTTP requests of one captured run (`client/run`) into `project`, each of which
    must be accepted; returns how many of the run's spans each trace id has."""
    trace_ids: Counter[str] = Counter()
    for capture in capture_runs()[run]:
        if capture.protocol != "http":
            continue
        response = replay(capture, http_base, grpc_target, project, headers)
        assert isinstance(response, httpx.Response)
        assert response.status_code == 200, (str(capture), response.status_code, response.text)
        trace_ids.update(capture.trace_ids())
    return trace_ids
