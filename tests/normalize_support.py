"""Test-only loaders: fixture captures → `normalizers.model.Span` lists, grouped by trace.

Fixtures are read from tests/fixtures only. OTLP/JSON is turned into protobuf with
`google.protobuf.json_format` after converting the hex ids OTLP/JSON uses to the base64 that the
proto3 JSON mapping expects.
"""

from __future__ import annotations

import base64
import gzip
import json
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from google.protobuf import json_format
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
)

from trajhub.normalizers.model import Span
from trajhub.normalizers.sources import span_from_cozeloop, spans_from_resource_spans
from trajhub.normalizers.trajectory import Trajectory

FIXTURES = Path(__file__).parent / "fixtures"
REAL = FIXTURES / "real-clients"
#: captures whose message content is only in their log exports (`otel_genai` with
#: EVENT_ONLY): their spans alone are not the run, so they are no span-only capture set
#: (tests/test_genai_events.py replays them, logs included, into a server)
LOGS_ONLY_CONTENT = frozenset({"otel_genai_event_only"})
_ID_KEYS = {"traceId", "spanId", "parentSpanId", "trace_id", "span_id", "parent_span_id"}


def _hex_ids_to_b64(node: Any) -> Any:
    if isinstance(node, dict):
        out = {}
        for key, value in node.items():
            if key in _ID_KEYS and isinstance(value, str):
                value = base64.b64encode(bytes.fromhex(value)).decode() if value else ""
            out[key] = _hex_ids_to_b64(value)
        return out
    if isinstance(node, list):
        return [_hex_ids_to_b64(v) for v in node]
    return node


def otlp_json_spans(data: dict[str, Any]) -> list[Span]:
    request = ExportTraceServiceRequest()
    json_format.ParseDict(_hex_ids_to_b64(data), request, ignore_unknown_fields=True)
    return list(spans_from_resource_spans(request.resource_spans))


def otlp_proto_spans(body: bytes) -> list[Span]:
    request = ExportTraceServiceRequest.FromString(body)
    return list(spans_from_resource_spans(request.resource_spans))


def native_spans(data: Any) -> list[Span]:
    raw = data["spans"] if isinstance(data, dict) else data
    return [span_from_cozeloop(s) for s in raw]


def load_file(path: Path) -> list[Span]:
    """The spans of one captured request body or fixture file."""
    if path.name.startswith("grpc_"):
        body = path.read_bytes()
        # the event captures save their gRPC messages gzipped (tests/capture/grpc_receiver.py);
        # a serialized message never starts with gzip's magic bytes
        return otlp_proto_spans(gzip.decompress(body) if body[:2] == b"\x1f\x8b" else body)
    if path.suffix == ".bin":
        meta = json.loads(path.with_suffix(".json").read_text())
        headers = {k.lower(): v for k, v in meta.get("headers", {}).items()}
        content_type = headers.get("content-type", "")
        body = path.read_bytes()
        if headers.get("content-encoding") == "gzip":
            body = gzip.decompress(body)
        if "json" not in content_type:
            return otlp_proto_spans(body)
        data = json.loads(body)
    else:
        data = json.loads(path.read_text())
    if isinstance(data, dict) and ("resourceSpans" in data or "resource_spans" in data):
        return otlp_json_spans(data)
    return native_spans(data)


def by_trace(spans: Iterable[Span]) -> dict[str, list[Span]]:
    out: dict[str, list[Span]] = {}
    for span in spans:
        out.setdefault(span.trace_id, []).append(span)
    return out


def capture_sets() -> dict[str, list[Path]]:
    """Every capture in tests/fixtures: name → the files that together hold its spans."""
    sets: dict[str, list[Path]] = {}
    for variant in sorted(REAL.glob("*/*")):
        if variant.parent.name in LOGS_ONLY_CONTENT:
            continue
        # the log exports of the event captures hold no spans
        http = sorted(p for p in variant.glob("http_*.bin") if not p.stem.endswith("_v1_logs"))
        grpc = sorted(p for p in variant.glob("grpc_*.bin") if not p.stem.endswith("_v1_logs"))
        name = f"{variant.parent.name}/{variant.name}"
        if http:
            sets[f"{name}/http"] = http
        if grpc:
            sets[f"{name}/grpc"] = grpc
    for shape in sorted(p for p in (FIXTURES / "eino-real").iterdir() if p.is_dir()):
        for path in ("cozeloop", "apmplus"):
            sets[f"eino-real/{shape.name}/{path}"] = sorted((shape / path).glob("*.bin"))
    examples = FIXTURES / "coze-loop-examples"
    for path in sorted(examples.glob("*payload*.json")) + sorted(
        examples.glob("*ingest_spans.json")
    ):
        sets[f"coze-loop-examples/{path.name}"] = [path]
    return sets


def load_files(files: Iterable[Path]) -> list[Span]:
    """The spans of several captured request bodies or fixture files, in file order."""
    spans: list[Span] = []
    for path in files:
        spans.extend(load_file(path))
    return spans


def load_traces(files: Iterable[Path]) -> dict[str, list[Span]]:
    return by_trace(load_files(files))


class View:
    """A minimal TraceView over a list of spans, to read spans through one convention directly
    (without the builder's deduplication and parent resolution)."""

    def __init__(self, spans: Iterable[Span]) -> None:
        self.spans = list(spans)
        self._by_id = {s.span_id: s for s in self.spans}
        self._children: dict[str, list[Span]] = {}
        for s in self.spans:
            if s.parent_span_id in self._by_id and s.parent_span_id != s.span_id:
                self._children.setdefault(s.parent_span_id, []).append(s)
        for kids in self._children.values():
            kids.sort(key=lambda s: (s.start_ns, s.end_ns, s.span_id))

    def span(self, span_id: str) -> Span | None:
        return self._by_id.get(span_id)

    def parent(self, span: Span) -> Span | None:
        if not span.parent_span_id or span.parent_span_id == span.span_id:
            return None
        return self._by_id.get(span.parent_span_id)

    def children(self, span: Span) -> Sequence[Span]:
        return self._children.get(span.span_id, [])

    def all_spans(self) -> Sequence[Span]:
        return sorted(self.spans, key=lambda s: (s.start_ns, s.end_ns, s.span_id))


Skeleton = list[tuple[str, list[tuple[str, str, bool]]]]


def skeleton(trajectory: Trajectory) -> Skeleton:
    """(agent step name, [(type, name, failed)]) for every agent step, in output order."""
    return [
        (a.name, [(s.type, s.name, s.basic_info.error is not None) for s in a.steps])
        for a in trajectory.agent_steps
    ]


def parallel_shape(steps: list[tuple[str, str, Any]]) -> list[tuple[str, str]]:
    """(type, name) of (type, name, parallel group) steps in order; consecutive steps of one
    parallel group sorted among themselves (they ran concurrently, so their start order is not
    the script's)."""
    out: list[tuple[str, str]] = []
    group: list[tuple[str, str]] = []
    current: Any = None
    for kind, name, parallel in [*steps, ("", "", None)]:
        if parallel is not None and parallel == current:
            group.append((kind, name))
            continue
        out.extend(sorted(group))
        group, current = [(kind, name)], parallel
    return [s for s in out if s[0]]
