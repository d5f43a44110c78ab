"""Operations: the JSON log format (trajhub's and uvicorn's records alike), the access log of
both transports, the start without a runtime-directory warning, /metrics moving with the
traffic, and one line per record whatever control characters a request carries. Each test
reads a real server's stderr or scrapes its /metrics (the formatter test formats a record)."""

from __future__ import annotations

import asyncio
import json
import logging
import os
import sys
from collections.abc import Iterator
from typing import Any

import asyncpg
import grpc
import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

from tests.harness import (
    ServerProcess,
    TestDatabase,
    final_trajectory,
    separate_database,
    wait_for,
)
from tests.otlp_builders import PB, new_span_id, new_trace_id, request, span

EXPORT = "/opentelemetry.proto.collector.trace.v1.TraceService/Export"


@pytest.fixture(scope="module")
def json_server(database: TestDatabase, tmp_path_factory: pytest.TempPathFactory
                ) -> Iterator[ServerProcess]:
    """A server logging JSON lines, started as a service would be: no XDG_RUNTIME_DIR. Its
    database is its own, so that its derivation worker alone derives what it receives (the
    derivation metrics count this server's work)."""
    saved = os.environ.pop("XDG_RUNTIME_DIR", None)
    with separate_database(database) as url:
        try:
            proc = ServerProcess.start(url, tmp_path_factory.mktemp("json-server"),
                                       extra_env={"TRAJHUB_LOG_FORMAT": "json"})
        finally:
            if saved is not None:
                os.environ["XDG_RUNTIME_DIR"] = saved
        proc.database_url = url  # type: ignore[attr-defined]
        yield proc
        proc.stop()


def log_lines(server: ServerProcess) -> list[str]:
    return [line for line in server.log_path.read_text().splitlines() if line.strip()]


def access_entries(server: ServerProcess) -> list[dict[str, object]]:
    entries = [json.loads(line) for line in log_lines(server)]
    return [e for e in entries if e["logger"] == "trajhub.access"]


def scrape(server: ServerProcess) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    text = httpx.get(f"{server.http}/metrics").text
    return {(sample.name, tuple(sorted(sample.labels.items()))): sample.value
            for family in text_string_to_metric_families(text) for sample in family.samples}


def value(samples: dict[tuple[str, tuple[tuple[str, str], ...]], float], name: str,
          **labels: str) -> float:
    return samples.get((name, tuple(sorted(labels.items()))), 0.0)


def test_every_log_line_is_json_and_no_runtime_dir_warning(json_server: ServerProcess) -> None:
    httpx.get(f"{json_server.http}/healthz")
    lines = wait_for(lambda: [ln for ln in log_lines(json_server)
                              if "trajhub.access" in ln] and log_lines(json_server),
                     what="an access line")
    entries = [json.loads(line) for line in lines]  # fails on any line that is not JSON
    loggers = {e["logger"] for e in entries}
    assert "trajhub" in loggers and "uvicorn.error" in loggers, loggers
    for entry in entries:
        assert {"time", "level", "logger", "message"} <= entry.keys()
    assert not [line for line in lines if "RuntimeDirWarning" in line or "XDG_RUNTIME_DIR" in line]


def test_access_log_of_http_ingest_carries_span_counts(json_server: ServerProcess,
                                                       project: str) -> None:
    tid = new_trace_id()
    spans = [span(tid), span(tid), span(bytes(16))]  # the all-zero trace id is invalid
    r = httpx.post(f"{json_server.http}/v1/traces",
                   content=request(spans).SerializeToString(),
                   headers={**PB, "trajhub-project": project}, timeout=30)
    assert r.status_code == 200
    entry = wait_for(lambda: next((e for e in access_entries(json_server)
                                   if e["project"] == project), None), what="access line")
    assert entry["method"] == "POST" and entry["path"] == "/v1/traces"
    assert entry["status"] == 200 and entry["transport"] == "http"
    assert isinstance(entry["duration_ms"], float | int) and entry["duration_ms"] >= 0
    assert (entry["spans_accepted"], entry["spans_rejected"]) == (2, 1)


def test_access_log_of_grpc_ingest_carries_span_counts(json_server: ServerProcess,
                                                       project: str) -> None:
    tid = new_trace_id()
    body = request([span(tid), span(tid), span(tid)]).SerializeToString()
    with grpc.insecure_channel(json_server.grpc) as channel:
        export = channel.unary_unary(EXPORT, request_serializer=None,
                                     response_deserializer=None)
        export(body, metadata=[("trajhub-project", project)], timeout=30)
    entry = wait_for(lambda: next((e for e in access_entries(json_server)
                                   if e["project"] == project), None), what="access line")
    assert entry["transport"] == "grpc" and entry["status"] == "OK"
    assert entry["path"] == EXPORT
    assert (entry["spans_accepted"], entry["spans_rejected"]) == (3, 0)


def test_access_log_of_rest_names_the_project(json_server: ServerProcess, project: str) -> None:
    r = httpx.get(f"{json_server.http}/api/v1/trajectories", params={"project": project})
    assert r.status_code == 200
    entry = wait_for(lambda: next((e for e in access_entries(json_server)
                                   if e["project"] == project), None), what="access line")
    assert entry["path"] == "/api/v1/trajectories" and entry["status"] == 200
    assert entry["spans_accepted"] is None


def test_text_format_is_the_default(server: ServerProcess) -> None:
    httpx.get(f"{server.http}/healthz")
    line = wait_for(lambda: next((ln for ln in log_lines(server)
                                  if "trajhub.access" in ln and "/healthz" in ln), None),
                    what="access line")
    assert " INFO trajhub.access: GET /healthz 200 " in line
    assert "method=GET" in line and "status=200" in line and "duration_ms=" in line


def test_metrics_move_with_traffic(json_server: ServerProcess, project: str) -> None:
    before = scrape(json_server)
    tid = new_trace_id()
    root = span(tid, name="agent")
    good = [root, span(tid, parent=root.span_id)]
    r = httpx.post(f"{json_server.http}/v1/traces",
                   content=request([*good, span(bytes(16))]).SerializeToString(),
                   headers={**PB, "trajhub-project": project}, timeout=30)
    assert r.status_code == 200
    bad = httpx.post(f"{json_server.http}/v1/traces", content=b"not protobuf",
                     headers={**PB, "trajhub-project": project}, timeout=30)
    assert bad.status_code == 400
    # a span whose parent never came: not a whole trace, so the derivation worker derives it
    # (the others were derived by the ingest worker that stored them)
    orphan = new_trace_id()
    with grpc.insecure_channel(json_server.grpc) as channel:
        channel.unary_unary(EXPORT, request_serializer=None, response_deserializer=None)(
            request([span(orphan, parent=new_span_id())]).SerializeToString(),
            metadata=[("trajhub-project", project)], timeout=30)
    with httpx.Client() as client:
        final_trajectory(client, json_server.http, project, tid.hex())
        wait_for(lambda: client.get(f"{json_server.http}/api/v1/trajectories/{orphan.hex()}",
                                    params={"project": project}).status_code == 200,
                 what="the orphan span's trajectory")

    rounds = "trajhub_derivation_round_duration_seconds_count"
    after = wait_for(lambda: (s := scrape(json_server)) and value(
        s, "trajhub_traces_derived_total") > value(before, "trajhub_traces_derived_total")
        and value(s, rounds) > value(before, rounds) and s,
        what="derivations counted (the derivation worker reports every 0.25 s)")

    def moved(name: str, **labels: str) -> float:
        return value(after, name, **labels) - value(before, name, **labels)

    assert moved("trajhub_spans_accepted_total", format="protobuf") >= 3
    assert moved("trajhub_spans_rejected_total", format="protobuf") >= 1
    assert moved("trajhub_requests_total", transport="http", outcome="ok") >= 2
    assert moved("trajhub_requests_total", transport="http", outcome="client_error") >= 1
    assert moved("trajhub_requests_total", transport="grpc", outcome="ok") >= 1
    assert moved("trajhub_request_duration_seconds_count", transport="grpc") >= 1
    assert moved("trajhub_derivation_round_duration_seconds_count") >= 1
    # the scrape itself is in flight while it is answered
    assert value(after, "trajhub_requests_in_flight", transport="http") >= 1
    assert value(after, "trajhub_ingest_queue_limit") == 32
    for name in ("trajhub_ingest_queue", "trajhub_derivation_backlog",
                 "trajhub_derivation_backlog_oldest_seconds"):
        assert ((name, ()) in after), name
    assert ("trajhub_database_errors_total", (("where", "ingest"),)) in after


def test_derivation_backlog_counts_waiting_traces(json_server: ServerProcess,
                                                  project: str) -> None:
    """Changes the derivation worker cannot take yet show in the backlog and its age, in
    /metrics and in /readyz. Holding
    a trace's advisory lock (the one a worker takes to derive it) keeps its changes queued,
    as when another replica is deriving that trace."""
    trace_ids = [new_trace_id().hex() for _ in range(5)]

    async def check() -> tuple[float, float, dict[str, Any]]:
        conn = await asyncpg.connect(json_server.database_url)  # type: ignore[attr-defined]
        try:
            for trace_id in trace_ids:
                await conn.execute("SELECT pg_advisory_lock(hashtextextended($1, 0))",
                                   f"{project}/{trace_id}")
            await conn.execute(
                "INSERT INTO trace_changes (project, trace_id, received_at) "
                "SELECT $1, t, now() - interval '30 seconds' FROM unnest($2::text[]) t",
                project, trace_ids)
            samples = await asyncio.to_thread(scrape, json_server)
            ready = (await asyncio.to_thread(
                httpx.get, f"{json_server.http}/readyz", timeout=30)).json()
            return (value(samples, "trajhub_derivation_backlog"),
                    value(samples, "trajhub_derivation_backlog_oldest_seconds"), ready)
        finally:
            await conn.close()  # releases the locks; the worker then drops the empty changes

    backlog, oldest, ready = asyncio.run(check())
    assert backlog >= 5
    assert oldest >= 30
    assert ready["status"] == "ready"
    assert ready["derivation_backlog"] >= 5 and ready["derivation_backlog_oldest_seconds"] >= 30
    after = wait_for(lambda: (s := scrape(json_server)) and value(
        s, "trajhub_derivation_backlog") < 5 and s, what="the backlog drained")
    assert value(after, "trajhub_derivation_backlog_oldest_seconds") < 30


# ------------------------------------------------------------- control characters in the logs


def access_line_count(server: ServerProcess) -> int:
    return sum(" trajhub.access: " in line for line in log_lines(server))


def test_text_access_log_escapes_a_newline_and_an_escape_in_the_path(
        server: ServerProcess) -> None:
    marker = new_trace_id().hex()
    before = access_line_count(server)
    # a newline that would start a forged record, and an ESC that would colour a terminal
    r = httpx.get(f"{server.http}/esc-{marker}%0A2026-01-01%2000:00:00,000%20INFO%20forged%1B[31m")
    assert r.status_code == 404
    line = wait_for(lambda: next((ln for ln in log_lines(server) if marker in ln), None),
                    what="the access line")
    assert access_line_count(server) == before + 1
    assert [ln for ln in log_lines(server) if marker in ln] == [line]
    escaped = f"/esc-{marker}\\n2026-01-01 00:00:00,000 INFO forged\\x1b[31m"
    assert f" INFO trajhub.access: GET {escaped} 404 " in line
    assert f" path={escaped} status=404 " in line
    log = server.log_path.read_text()
    assert "\x1b" not in log
    assert not [ln for ln in log.split("\n") if ln.startswith("2026-01-01 00:00:00,000 INFO")]


def test_json_access_log_keeps_every_line_break_inside_its_string(
        json_server: ServerProcess) -> None:
    marker = new_trace_id().hex()
    before = len(access_entries(json_server))
    # LF, ESC, DEL, NEL (C1) and U+2028: `str.splitlines` breaks a line at LF, NEL and U+2028
    r = httpx.get(f"{json_server.http}/esc-{marker}%0Aa%1Bb%7Fc%C2%85d%E2%80%A8e")
    assert r.status_code == 404
    entry = wait_for(lambda: next((e for e in access_entries(json_server)
                                   if marker in str(e["path"])), None), what="the access line")
    assert entry["path"] == f"/esc-{marker}\na\x1bb\x7fc\x85d\u2028e"
    assert len(access_entries(json_server)) == before + 1
    raw = json_server.log_path.read_text()
    [line] = [ln for ln in raw.split("\n") if marker in ln]
    assert "\\n" in line and "\\u001b" in line and "\\u007f" in line
    assert "\\u0085" in line and "\\u2028" in line
    for character in ("\x1b", "\x7f", "\x85", "\u2028"):
        assert character not in raw, repr(character)


def test_text_format_escapes_every_record_and_keeps_a_traceback_on_its_line() -> None:
    from trajhub.service.logs import TextFormatter

    try:
        raise ValueError("bad value\nTraceback forged")
    except ValueError:
        exc_info = sys.exc_info()
    record = logging.makeLogRecord({
        "name": "trajhub.ingest", "levelno": logging.WARNING, "levelname": "WARNING",
        "msg": "span %s: tab\tCR\rDEL\x7fNEL\x85LS\u2028PS\u2029 back\\slash",
        "args": ("x\x00y",), "exc_info": exc_info,
        "fields": {"header": "a\nb", "absent": None}})
    line = TextFormatter().format(record)
    assert len(line.splitlines()) == 1
    assert ("WARNING trajhub.ingest: span x\\x00y: tab\\tCR\\rDEL\\x7fNEL\\x85LS\\u2028PS\\u2029 "
            "back\\\\slash\\nTraceback (most recent call last):\\n") in line
    assert line.endswith("ValueError: bad value\\nTraceback forged header=a\\nb")
    assert "absent" not in line
