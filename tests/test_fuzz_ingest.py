"""Mutation fuzzing of the receivers with the real-client captures as seeds.

hypothesis picks a capture and a series of mutations — structural ones (a field set to a
hostile number, a NUL in a name, an id of the wrong shape, attributes nested past the protobuf
limit) and raw byte flips, truncations and splices — and sends the result over OTLP/HTTP
protobuf, OTLP/gRPC, OTLP/JSON, the Coze Loop native ingest and /api/v1/normalize. No answer may
be a 500 or a gRPC UNKNOWN / INTERNAL. OTLP log bodies (built here: no capture holds logs)
are mutated alike and sent to the logs and metrics receivers. Afterwards the server must still
ingest, and the derivation worker must still derive a clean trace. Bounded: a fixed number of
examples (CI runs the same ones every time, see conftest.py)."""

from __future__ import annotations

import base64
import json
import os
from typing import Any

import grpc
import httpx
import orjson
import pytest
from google.protobuf import json_format
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.common.v1.common_pb2 import AnyValue
from opentelemetry.proto.resource.v1.resource_pb2 import Resource

from tests.captures import Capture, all_captures, replay
from tests.harness import ServerProcess, final_trajectory, wait_for
from tests.otlp_builders import PB, new_span_id, new_trace_id, request, span
from tests.test_otlp_logs import log_record, logs_request

pytestmark = pytest.mark.slow  # Hypothesis fuzzers against a live server

CAPTURES = all_captures()
PROTOBUF = [c for c in CAPTURES if c.protocol == "http"
            and c.headers.get("content-type") == "application/x-protobuf"]
GRPC = [c for c in CAPTURES if c.protocol == "grpc"]
OTLP_JSON = [c for c in CAPTURES if c.protocol == "http"
             and c.headers.get("content-type") == "application/json"
             and c.url_path != "/v1/loop/traces/ingest"]
NATIVE = [c for c in CAPTURES if c.url_path == "/v1/loop/traces/ingest"]

#: per transport; raise it locally (TRAJHUB_FUZZ_EXAMPLES=2000) for a longer hunt
EXAMPLES = int(os.environ.get("TRAJHUB_FUZZ_EXAMPLES", "60"))
FUZZ = settings(max_examples=EXAMPLES, deadline=None,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])

#: numbers just inside and outside every integer type OTLP and Coze Loop use
HOSTILE_INTS = [-1, -(2**31) - 1, 2**31, 2**32, 2**40, 2**62, 2**63 - 1, 2**63, 2**64 - 1,
                2**64, -(2**63) - 1, 0]
HOSTILE_STRINGS = ["", "\x00", "a\x00b", "0x" + "1" * 30, "-" + "1" * 31, " " * 32,
                   "_" * 16, "\u202e", "NaN", "Infinity", "9" * 40, "ff" * 8, "00" * 16]

# what the protobuf mutators below write into a field, spans and log records alike
#: a time in ns: zero, and the edges of int64 and uint64
HOSTILE_TIMES = st.sampled_from([0, 2**63 - 1, 2**63, 2**64 - 1])
#: an enum (span kind, status code, severity): any int32
ANY_ENUM = st.integers(-(2**31), 2**31 - 1)
#: a fixed32 field (flags): any uint32
ANY_FLAGS = st.integers(0, 2**32 - 1)
#: an id of any length but the right one too
ANY_ID = st.binary(max_size=20)
HOSTILE_TEXT = st.sampled_from(HOSTILE_STRINGS)


def grpc_export(server: ServerProcess, service: str, body: bytes, project: str) -> None:
    """Send `body` to the OTLP `service`'s Export over gRPC: any answer but a rejection of the
    input, a size limit or a transient fault fails the test."""
    with grpc.insecure_channel(server.grpc) as channel:
        export = channel.unary_unary(f"/opentelemetry.proto.collector.{service}/Export",
                                     request_serializer=None, response_deserializer=None)
        try:
            export(body, metadata=[("trajhub-project", project)], timeout=30)
        except grpc.RpcError as error:
            assert error.code() in (grpc.StatusCode.INVALID_ARGUMENT,
                                    grpc.StatusCode.RESOURCE_EXHAUSTED,
                                    grpc.StatusCode.UNAVAILABLE), (error.code(), error.details())


def nest_deep(data: st.DataObject, value: AnyValue) -> None:
    """Make `value` arrays in arrays, 10 to 47 deep: deep, yet within what protobuf parses."""
    for _ in range(data.draw(st.integers(min_value=10, max_value=47))):
        value = value.array_value.values.add()
    value.string_value = "x"


def hostile_resource_attribute(data: st.DataObject, resource: Resource, key: str) -> None:
    """Give `resource` the attribute `key` (service.name, trajhub.project) a hostile text."""
    resource.attributes.add(key=key).value.string_value = data.draw(HOSTILE_TEXT)


def nested(depth: int) -> dict[str, Any]:
    value: dict[str, Any] = {"stringValue": "x"}
    for _ in range(depth):
        value = {"arrayValue": {"values": [value]}}
    return value


def hostile_json_values() -> st.SearchStrategy[Any]:
    return st.one_of(
        st.sampled_from(HOSTILE_INTS),
        st.sampled_from([str(n) for n in HOSTILE_INTS]),
        HOSTILE_TEXT,
        st.sampled_from([None, True, 1.5, 1e300, -0.0, [], {}, [None], {"": None}]),
        st.integers(min_value=40, max_value=70).map(nested),
        st.text(max_size=20),
    )


# ---------------------------------------------------------------------------- JSON mutation

def _paths(doc: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Every place in a JSON document a value can be replaced."""
    out = [prefix] if prefix else []
    if isinstance(doc, dict):
        for key, value in doc.items():
            out.extend(_paths(value, (*prefix, key)))
    elif isinstance(doc, list):
        for i, value in enumerate(doc):
            out.extend(_paths(value, (*prefix, i)))
    return out


def _set(doc: Any, path: tuple[Any, ...], value: Any) -> None:
    for key in path[:-1]:
        doc = doc[key]
    doc[path[-1]] = value


def mutate_json(data: st.DataObject, body: bytes) -> bytes:
    doc = orjson.loads(body)
    paths = _paths(doc)
    for _ in range(data.draw(st.integers(min_value=1, max_value=4), label="edits")):
        if not paths:
            break
        path = data.draw(st.sampled_from(paths), label="path")
        _set(doc, path, data.draw(hostile_json_values(), label="value"))
        paths = _paths(doc)
    out = json.dumps(doc).encode()  # stdlib: integers past 64 bits too
    return maybe_mangle(data, out)


# ---------------------------------------------------------------------------- protobuf mutation

def mutate_protobuf(data: st.DataObject, body: bytes) -> bytes:
    req = ExportTraceServiceRequest.FromString(body)
    spans = [s for rs in req.resource_spans for ss in rs.scope_spans for s in ss.spans]
    for _ in range(data.draw(st.integers(min_value=1, max_value=4), label="edits")):
        if not spans:
            break
        target = data.draw(st.sampled_from(spans), label="span")
        edit = data.draw(st.sampled_from(
            ["start", "end", "kind", "status", "name", "trace_id", "span_id", "parent",
             "int_attr", "nested_attr", "flags", "service"]), label="edit")
        if edit == "start":
            target.start_time_unix_nano = data.draw(HOSTILE_TIMES)
        elif edit == "end":
            target.end_time_unix_nano = data.draw(st.integers(0, 2**64 - 1))
        elif edit == "kind":
            target.kind = data.draw(ANY_ENUM)  # type: ignore[assignment]
        elif edit == "status":
            target.status.code = data.draw(ANY_ENUM)  # type: ignore[assignment]
        elif edit == "name":
            target.name = data.draw(HOSTILE_TEXT)
        elif edit in ("trace_id", "span_id", "parent"):
            value = data.draw(ANY_ID)
            setattr(target, {"trace_id": "trace_id", "span_id": "span_id",
                             "parent": "parent_span_id"}[edit], value)
        elif edit == "int_attr":
            target.attributes.add(key="n").value.int_value = data.draw(
                st.integers(-(2**63), 2**63 - 1))
        elif edit == "nested_attr":
            nest_deep(data, target.attributes.add(key="deep").value)
        elif edit == "flags":
            target.flags = data.draw(ANY_FLAGS)
        elif edit == "service":
            hostile_resource_attribute(data, req.resource_spans[0].resource, "service.name")
    return maybe_mangle(data, req.SerializeToString())


def maybe_mangle(data: st.DataObject, body: bytes) -> bytes:
    """Now and then, damage the bytes themselves: flip, cut or splice."""
    how = data.draw(st.sampled_from(["none", "none", "none", "flip", "cut", "splice"]),
                    label="mangle")
    if how == "none" or not body:
        return body
    at = data.draw(st.integers(min_value=0, max_value=len(body) - 1), label="at")
    if how == "flip":
        return body[:at] + bytes([body[at] ^ data.draw(st.integers(1, 255))]) + body[at + 1:]
    if how == "cut":
        return body[:at]
    return body[:at] + data.draw(st.binary(min_size=1, max_size=16)) + body[at:]


# ---------------------------------------------------------------------------- the tests

def _no_server_error(response: httpx.Response, what: str) -> None:
    assert response.status_code < 500 or response.status_code == 503, (
        what, response.status_code, response.text[:500])


def _pick(data: st.DataObject, captures: list[Capture]) -> Capture:
    return data.draw(st.sampled_from(captures), label="capture")


@pytest.fixture(scope="module")
def fuzz_project() -> str:
    return "fuzz"


@FUZZ
@given(data=st.data())
def test_mutated_otlp_protobuf_over_http_and_grpc(server: ServerProcess, fuzz_project: str,
                                                  data: st.DataObject) -> None:
    capture = _pick(data, PROTOBUF + GRPC)
    body = mutate_protobuf(data, capture.decoded_body)
    with httpx.Client(timeout=30) as c:
        r = c.post(f"{server.http}/v1/traces", content=body,
                   headers={**PB, "trajhub-project": fuzz_project})
        _no_server_error(r, "http")
        r = c.post(f"{server.http}/api/v1/normalize", content=body,
                   headers=PB)
        _no_server_error(r, "normalize")
    grpc_export(server, "trace.v1.TraceService", body, fuzz_project)


@pytest.mark.parametrize(("path", "captures"), [("/v1/traces", OTLP_JSON),
                                               ("/v1/loop/traces/ingest", NATIVE)],
                         ids=["otlp-json", "native"])
@FUZZ
@given(data=st.data())
def test_mutated_json(server: ServerProcess, fuzz_project: str, path: str,
                      captures: list[Capture], data: st.DataObject) -> None:
    """OTLP/JSON and native Coze Loop bodies, mutated, to their receiver and to the dry run."""
    body = mutate_json(data, _pick(data, captures).decoded_body)
    with httpx.Client(timeout=30) as c:
        r = c.post(f"{server.http}{path}", content=body,
                   headers={"content-type": "application/json",
                            "trajhub-project": fuzz_project})
        _no_server_error(r, path)
        r = c.post(f"{server.http}/api/v1/normalize", content=body,
                   headers={"content-type": "application/json"})
        _no_server_error(r, "normalize")


def log_seeds() -> list[bytes]:
    """OTLP log bodies to mutate (no capture holds logs): events of a span, a record outside
    any trace, a body of each AnyValue kind."""
    tid, sid = new_trace_id(), new_span_id()
    records = [log_record(tid, sid), log_record(tid, sid, name="gen_ai.choice", content="4"),
               log_record(content="no trace")]
    records[2].body.Clear()
    records[2].body.string_value = "plain"
    return [logs_request(records).SerializeToString(),
            logs_request(records[:1], service="other").SerializeToString()]


def mutate_log_protobuf(data: st.DataObject, body: bytes) -> bytes:
    req = ExportLogsServiceRequest.FromString(body)
    records = [r for rl in req.resource_logs for sl in rl.scope_logs for r in sl.log_records]
    for _ in range(data.draw(st.integers(min_value=1, max_value=4), label="edits")):
        target = data.draw(st.sampled_from(records), label="record")
        edit = data.draw(st.sampled_from(
            ["time", "observed", "severity", "name", "trace_id", "span_id", "nested",
             "flags", "project"]), label="edit")
        if edit in ("time", "observed"):
            setattr(target, "time_unix_nano" if edit == "time" else "observed_time_unix_nano",
                    data.draw(HOSTILE_TIMES))
        elif edit == "severity":
            target.severity_number = data.draw(ANY_ENUM)  # type: ignore[assignment]
        elif edit == "name":
            target.event_name = data.draw(HOSTILE_TEXT)
        elif edit in ("trace_id", "span_id"):
            setattr(target, edit, data.draw(ANY_ID))
        elif edit == "nested":
            nest_deep(data, target.body)
        elif edit == "flags":
            target.flags = data.draw(ANY_FLAGS)
        elif edit == "project":
            hostile_resource_attribute(data, req.resource_logs[0].resource, "trajhub.project")
    return maybe_mangle(data, req.SerializeToString())


def _logs_json(body: bytes) -> bytes:
    """A logs body in OTLP/JSON, ids in hex as OTLP/JSON has them."""
    doc = json_format.MessageToDict(ExportLogsServiceRequest.FromString(body))
    for rl in doc.get("resourceLogs", []):
        for sl in rl.get("scopeLogs", []):
            for record in sl.get("logRecords", []):
                for key in ("traceId", "spanId"):
                    if key in record:
                        record[key] = base64.b64decode(record[key]).hex()
    return orjson.dumps(doc)


@FUZZ
@given(data=st.data())
def test_mutated_otlp_logs(server: ServerProcess, fuzz_project: str,
                           data: st.DataObject) -> None:
    """Log bodies, mutated, over OTLP/HTTP protobuf and JSON and gRPC LogsService; a metrics
    body's bytes, mangled, to both metrics receivers."""
    seed = data.draw(st.sampled_from(log_seeds()), label="seed")
    body = mutate_log_protobuf(data, seed)
    as_json = mutate_json(data, _logs_json(seed))
    with httpx.Client(timeout=30) as c:
        for content, media in ((body, "application/x-protobuf"), (as_json, "application/json")):
            r = c.post(f"{server.http}/v1/logs", content=content,
                       headers={"content-type": media, "trajhub-project": fuzz_project})
            _no_server_error(r, f"logs {media}")
            r = c.post(f"{server.http}/v1/metrics", content=content,
                       headers={"content-type": media, "trajhub-project": fuzz_project})
            _no_server_error(r, f"metrics {media}")
    for service in ("logs.v1.LogsService", "metrics.v1.MetricsService"):
        grpc_export(server, service, body, fuzz_project)


def test_after_the_fuzzing_the_server_ingests_and_derives(server: ServerProcess,
                                                          fuzz_project: str) -> None:
    """Runs after the fuzz tests (file order): what they sent has been through the trajectory
    worker; a clean capture and a clean trace are still accepted and derived."""
    with httpx.Client(timeout=30) as c:
        assert c.get(f"{server.http}/readyz").status_code == 200
        response = replay(PROTOBUF[0], server.http, server.grpc, "fuzz-after")
        assert isinstance(response, httpx.Response) and response.status_code == 200
        tid = new_trace_id()
        r = c.post(f"{server.http}/v1/traces", content=request([span(tid)]).SerializeToString(),
                   headers={"content-type": "application/x-protobuf",
                            "trajhub-project": "fuzz-after"})
        assert r.status_code == 200
        final_trajectory(c, server.http, "fuzz-after", tid.hex(), timeout=60)
        wait_for(lambda: c.get(f"{server.http}/readyz").status_code == 200, what="ready")

        # every fuzzed trace that was stored reads back in every form, and its trajectory
        # either exists or names its derivation error: never a 500
        listed = c.get(f"{server.http}/api/v1/traces",
                       params={"project": fuzz_project, "limit": 1000})
        assert listed.status_code == 200
        trace_ids = [t["trace_id"] for t in listed.json()["items"]]
        assert trace_ids, "no fuzzed trace was stored: the mutations never got past decoding"
        for trace_id in trace_ids:
            for params in ({"view": "flat"}, {"view": "tree"}, {"format": "otlp"}):
                r = c.get(f"{server.http}/api/v1/traces/{trace_id}",
                          params={"project": fuzz_project, **params})
                assert r.status_code == 200, (trace_id, params, r.text[:300])
            r = c.get(f"{server.http}/api/v1/trajectories/{trace_id}",
                      params={"project": fuzz_project})
            assert r.status_code in (200, 404, 422), (trace_id, r.text[:300])
