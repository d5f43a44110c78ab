"""Log records as trajectory content, through a real server: the GenAI instrumentations' event
mode (content in log records, none on the spans) gives a model step with the records' input,
output and system instructions, whichever signal arrives first; records that arrive after the
trajectory is final derive it again; records attached to no span are kept and listed; the
trace's REST view lists its records, and its OTLP logs export, posted back, stores the same
bytes. Requests are built by hand (tests/otlp_builders.py); the ground truth is written here."""

from __future__ import annotations

import json
from typing import Any

import httpx
import orjson
from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest
from opentelemetry.proto.logs.v1.logs_pb2 import LogRecord

from tests.harness import ServerProcess, TestDatabase, fetch_rows, fetch_value, wait_for
from tests.otlp_builders import kv, new_span_id, new_trace_id, post_spans, span
from trajhub.client import TrajhubClient
from trajhub.storage import compression

T0 = 1_795_341_600_000_000_000
SYSTEM = [{"type": "text", "content": "You are terse."}]
INPUT = [{"role": "user", "parts": [{"type": "text", "content": "weather in sf?"}]}]
OUTPUT = [{"role": "assistant", "parts": [{"type": "text", "content": "Sunny."}],
           "finish_reason": "stop"}]
#: what the model step reads from them (normalizers/payloads.py's message form)
STEP_INPUT = [{"role": "system", "content": "You are terse."},
              {"role": "user", "content": "weather in sf?"}]
STEP_OUTPUT = {"role": "assistant", "content": "Sunny."}


def _run(trace: bytes, root: bytes, chat: bytes) -> list[Any]:
    """An agent run whose model call carries no content (EVENT_ONLY)."""
    return [
        span(trace, "invoke_agent weather", span_id=root, start=T0, duration=10_000_000,
             attributes={"gen_ai.operation.name": "invoke_agent",
                         "gen_ai.agent.name": "weather"}),
        span(trace, "chat gpt-4o", parent=root, span_id=chat, start=T0 + 1_000_000,
             attributes={"gen_ai.operation.name": "chat", "gen_ai.request.model": "gpt-4o",
                         "gen_ai.usage.input_tokens": 5, "gen_ai.usage.output_tokens": 2}),
    ]


def _details(trace: bytes, chat: bytes) -> LogRecord:
    """The util-genai details event: structured content attributes."""
    record = LogRecord(time_unix_nano=T0 + 5_000_000, observed_time_unix_nano=T0 + 5_001_000,
                       trace_id=trace, span_id=chat, severity_number=9,
                       event_name="gen_ai.client.inference.operation.details")
    for key, value in (("gen_ai.operation.name", "chat"),
                       ("gen_ai.system_instructions", SYSTEM),
                       ("gen_ai.input.messages", INPUT), ("gen_ai.output.messages", OUTPUT)):
        record.attributes.append(kv(key, value))
    return record


def _note(trace: bytes = b"", span_id: bytes = b"", text: str = "note",
          time_ns: int = T0 + 2_000_000) -> LogRecord:
    record = LogRecord(time_unix_nano=time_ns, trace_id=trace, span_id=span_id,
                       severity_number=13, severity_text="WARN", event_name="app.note")
    record.body.string_value = text
    record.attributes.append(kv("app.kind", "note"))
    return record


def _logs_request(records: list[LogRecord]) -> ExportLogsServiceRequest:
    req = ExportLogsServiceRequest()
    rl = req.resource_logs.add()
    rl.resource.attributes.append(kv("service.name", "weather-agent"))
    sl = rl.scope_logs.add()
    sl.scope.name = "opentelemetry.instrumentation.openai_v2"
    sl.scope.version = "2.4b0"
    sl.log_records.extend(records)
    return req


def post_logs(base: str, project: str, records: list[LogRecord]) -> None:
    r = httpx.post(f"{base}/v1/logs", content=_logs_request(records).SerializeToString(),
                   headers={"content-type": "application/x-protobuf",
                            "trajhub-project": project}, timeout=30)
    assert r.status_code == 200, r.text


def _trajectory(base: str, project: str, trace_id: str, revision: int = 1) -> dict[str, Any]:
    """The trace's final trajectory once its revision is at least `revision`."""
    def probe() -> dict[str, Any] | None:
        r = httpx.get(f"{base}/api/v1/trajectories/{trace_id}", params={"project": project})
        if r.status_code == 200 and r.headers.get("x-trajectory-status") == "final" and \
                int(r.headers["x-trajectory-revision"]) >= revision:
            return {"revision": int(r.headers["x-trajectory-revision"]), "document": r.json()}
        return None
    return wait_for(probe, 30, what=f"final trajectory of {trace_id} (revision {revision})")


def _model_step(document: dict[str, Any]) -> dict[str, Any]:
    [step] = [s for a in document["agent_steps"] for s in a["steps"] if s["type"] == "model"]
    return step


def test_event_only_records_fill_the_model_step_whichever_signal_comes_first(
        server: ServerProcess, project: str) -> None:
    for logs_first in (True, False):
        trace, root, chat = new_trace_id(), new_span_id(), new_span_id()
        if logs_first:  # the request's own derivation must not miss the stored records
            post_logs(server.http, project, [_details(trace, chat)])
            post_spans(server.http, project, _run(trace, root, chat))
        else:
            post_spans(server.http, project, _run(trace, root, chat))
            post_logs(server.http, project, [_details(trace, chat)])
        step = _model_step(_trajectory(server.http, project, trace.hex())["document"])
        assert json.loads(step["input"]) == STEP_INPUT, logs_first
        assert json.loads(step["output"]) == STEP_OUTPUT, logs_first
        assert step["metadata"]["model_name"] == "gpt-4o"


def test_records_after_the_final_trajectory_derive_it_again(
        server: ServerProcess, project: str) -> None:
    trace, root, chat = new_trace_id(), new_span_id(), new_span_id()
    post_spans(server.http, project, _run(trace, root, chat))
    first = _trajectory(server.http, project, trace.hex())
    step = _model_step(first["document"])
    assert (step["input"], step["output"]) == ("", "")
    post_logs(server.http, project, [_details(trace, chat)])
    later = _trajectory(server.http, project, trace.hex(), first["revision"] + 1)
    step = _model_step(later["document"])
    assert json.loads(step["input"]) == STEP_INPUT
    assert json.loads(step["output"]) == STEP_OUTPUT
    # the same records sent again are stored once and queue nothing
    post_logs(server.http, project, [_details(trace, chat)])
    assert httpx.get(f"{server.http}/api/v1/trajectories/{trace.hex()}",
                     params={"project": project}).headers["x-trajectory-revision"] == \
        str(later["revision"])


def test_orphans_are_kept_and_listed_and_a_trace_of_logs_alone_has_no_trajectory(
        server: ServerProcess, database: TestDatabase, project: str) -> None:
    trace, root, chat = new_trace_id(), new_span_id(), new_span_id()
    lonely = new_trace_id()  # a trace with records and no spans
    post_spans(server.http, project, _run(trace, root, chat))
    records = [_note(trace, chat, "attached"), _note(trace, new_span_id(), "span not in trace"),
               _note(lonely, new_span_id(), "trace without spans"), _note(text="no trace"),
               _note(trace, b"", "names no span")]
    post_logs(server.http, project, records)
    _trajectory(server.http, project, trace.hex(), 2)
    # the lonely trace was queued, taken, and left without a trajectory or an error
    wait_for(lambda: fetch_value(database.url, "SELECT count(*) FROM trace_changes "
                                 "WHERE project = $1", project) == 0, what="the queue drained")
    assert httpx.get(f"{server.http}/api/v1/trajectories/{lonely.hex()}",
                     params={"project": project}).status_code == 404
    assert httpx.get(f"{server.http}/readyz").json()["status"] == "ready"

    with TrajhubClient(server.http, project=project) as hub:
        orphans = hub.list_logs(orphaned=True).items
        assert sorted(r.body for r in orphans) == [
            "names no span", "no trace", "span not in trace", "trace without spans"]
        assert all(r.orphaned for r in orphans)
        [attached] = hub.list_logs(orphaned=False).items
        assert (attached.trace_id, attached.span_id, attached.body, attached.orphaned) == (
            trace.hex(), chat.hex(), "attached", False)
        assert (attached.event_name, attached.severity_number, attached.severity_text) == (
            "app.note", 13, "WARN")
        assert attached.attributes == {"app.kind": "note"}
        assert attached.resource == {"service.name": "weather-agent"}
        assert (attached.scope.name, attached.scope.version) == (
            "opentelemetry.instrumentation.openai_v2", "2.4b0")
        assert attached.time == "2026-11-22T10:00:00.002000Z" and attached.observed_time == ""
        [lonely_record] = hub.list_logs(trace_id=lonely.hex()).items
        assert lonely_record.body == "trace without spans" and lonely_record.orphaned
        # a page at a time, each record once
        assert sorted(r.body for r in hub.iter_logs(page_size=2)) == sorted(
            r.body.string_value for r in records)
    bad = httpx.get(f"{server.http}/api/v1/logs", params={"project": project, "cursor": "x"})
    assert bad.status_code == 400


def test_the_trace_view_lists_its_records_and_the_otlp_export_stores_the_same_bytes(
        server: ServerProcess, database: TestDatabase, project: str) -> None:
    trace, root, chat = new_trace_id(), new_span_id(), new_span_id()
    post_spans(server.http, project, _run(trace, root, chat))
    records = [_details(trace, chat), _note(trace, chat, "attached")]
    # a nested map body survives as an object
    records[1].body.kvlist_value.values.append(kv("message", {"role": "assistant",
                                                              "tool_calls": [{"id": "c1"}]}))
    post_logs(server.http, project, records)
    _trajectory(server.http, project, trace.hex(), 2)

    with TrajhubClient(server.http, project=project) as hub:
        for view in ("tree", "flat", "trajectory"):
            body = hub.get_trace(trace.hex(), view=view)
            assert [r.event_name for r in body.logs] == [
                "app.note", "gen_ai.client.inference.operation.details"]
        note, details = hub.get_trace(trace.hex()).logs
        assert note.body == {"message": {"role": "assistant", "tool_calls": [{"id": "c1"}]}}
        assert details.attributes["gen_ai.input.messages"] == INPUT
        assert details.body is None and details.time == "2026-11-22T10:00:00.005000Z"
        assert details.observed_time == "2026-11-22T10:00:00.005001Z"
        exported = hub.get_trace(trace.hex(), format="otlp_logs")

    other = project + "-copy"
    r = httpx.post(f"{server.http}/v1/logs", content=orjson.dumps(exported.model_dump()),
                   headers={"content-type": "application/json", "trajhub-project": other})
    assert r.status_code == 200, r.text
    query = ("SELECT body FROM log_records WHERE project = $1 ORDER BY time_ns")
    original = [compression.decompress(r["body"]) for r in fetch_rows(database.url, query,
                                                                       project)]
    copied = [compression.decompress(r["body"]) for r in fetch_rows(database.url, query, other)]
    assert original == copied == [r.SerializeToString() for r in records[::-1]]
    # a trace with records and no spans: its records export, its span view is still not found
    lonely = new_trace_id()
    post_logs(server.http, project, [_note(lonely, new_span_id())])
    exported_alone = httpx.get(f"{server.http}/api/v1/traces/{lonely.hex()}",
                               params={"project": project, "format": "otlp_logs"})
    assert exported_alone.status_code == 200
    [rl] = exported_alone.json()["resourceLogs"]
    assert rl["scopeLogs"][0]["logRecords"][0]["traceId"] == lonely.hex()
    assert httpx.get(f"{server.http}/api/v1/traces/{lonely.hex()}",
                     params={"project": project}).status_code == 404
    # and a trace with spans and no records exports an empty request, not an error
    bare = new_trace_id()
    post_spans(server.http, project, [span(bare, "lonely span")])
    exported_none = httpx.get(f"{server.http}/api/v1/traces/{bare.hex()}",
                              params={"project": project, "format": "otlp_logs"})
    assert exported_none.status_code == 200, exported_none.text
    assert exported_none.json() == {"resourceLogs": []}
