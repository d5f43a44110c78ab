"""REST for trajectories: lifecycle (open → final, late span → new revision), the document,
list filters, explain, the trajectory view of a trace, re-derivation and the dry run."""

from __future__ import annotations

import subprocess
import sys
from importlib import resources
from pathlib import Path
from typing import Any

import httpx
import jsonschema
import orjson
import pytest

from tests.captures import capture_runs, replay_run
from tests.harness import ServerProcess, final_trajectories, final_trajectory, get_json, wait_for
from tests.otlp_builders import PB, new_span_id, new_trace_id, request, span

SCHEMA = orjson.loads(
    resources.files("trajhub.normalizers").joinpath("trajectory.schema.json").read_bytes())
RUNS = capture_runs()


def ingest_run(server: ServerProcess, project: str, run: str) -> str:
    """Replay one captured run (HTTP requests only); returns the id of its main trace.

    The OTel captures were made with a seeded id generator, so runs of different clients share
    trace and span ids: replay at most one OTel run per project."""
    return replay_run(run, server.http, server.grpc, project).most_common(1)[0][0]


@pytest.fixture
def react_traces(server: ServerProcess, project: str) -> dict[str, str]:
    """openinference react (prebuilt, stream) and cozeloop_python model_error, final."""
    traces = {"react": ingest_run(server, project, "openinference/react.prebuilt.stream"),
              "error": ingest_run(server, project, "cozeloop_python/model_error.prebuilt.stream")}
    final_trajectories(server.http, project, traces.values())
    return traces


def test_document_headers_and_conditional_get(server: ServerProcess, project: str,
                                              react_traces: dict[str, str]) -> None:
    with httpx.Client() as c:
        r = final_trajectory(c, server.http, project, react_traces["react"])
        doc = r.json()
        jsonschema.validate(doc, SCHEMA)
        assert doc["id"] == react_traces["react"]
        assert r.headers["etag"] == '"1"' and r.headers["x-trajectory-revision"] == "1"
        steps = doc["agent_steps"][0]["steps"]
        assert [s["type"] for s in steps] == ["model", "tool", "tool", "model", "tool", "model"]
        again = c.get(f"{server.http}/api/v1/trajectories/{react_traces['react']}",
                      params={"project": project}, headers={"if-none-match": '"1"'})
        assert again.status_code == 304


def test_lifecycle_open_final_and_late_span(server: ServerProcess, project: str) -> None:
    tid, root = new_trace_id(), new_span_id()
    t0 = 1_700_000_000_000_000_000
    child = span(tid, "chat", parent=root, start=t0 + 1000,
                 attributes={"gen_ai.operation.name": "chat", "gen_ai.usage.input_tokens": 5})
    with httpx.Client() as c:
        c.post(f"{server.http}/v1/traces", content=request([child]).SerializeToString(),
               headers={**PB, "trajhub-project": project})
        url = f"{server.http}/api/v1/trajectories/{tid.hex()}"
        first = wait_for(lambda: (r := c.get(url, params={"project": project}))
                         .status_code == 200 and r, what="open trajectory")
        assert first.headers["x-trajectory-status"] == "open"
        # without its root the trace stays open past the settle period
        import time
        time.sleep(1.5)
        assert c.get(url, params={"project": project}).headers["x-trajectory-status"] == "open"
        listed = f"{server.http}/api/v1/trajectories"

        def with_status(status: str) -> list[str]:
            return [t["trace_id"] for t in get_json(c, listed, project=project,
                                                    status=status)["items"]]
        assert with_status("open") == [tid.hex()] and with_status("final") == []

        root_span = span(tid, "agent", span_id=root, start=t0, duration=5_000_000,
                         attributes={"gen_ai.operation.name": "invoke_agent"})
        c.post(f"{server.http}/v1/traces", content=request([root_span]).SerializeToString(),
               headers={**PB, "trajhub-project": project})
        done = final_trajectory(c, server.http, project, tid.hex())
        assert int(done.headers["x-trajectory-revision"]) == 2
        assert with_status("open") == [] and with_status("final") == [tid.hex()]
        assert done.json()["root_step"]["name"] == "agent"

        late = span(tid, "execute_tool add", parent=root, start=t0 + 2_000_000,
                    attributes={"gen_ai.operation.name": "execute_tool",
                                "gen_ai.tool.name": "add"})
        c.post(f"{server.http}/v1/traces", content=request([late]).SerializeToString(),
               headers={**PB, "trajhub-project": project})
        wait_for(lambda: c.get(url, params={"project": project}).headers[
            "x-trajectory-revision"] == "3", what="re-derived after the late span")
        newest = final_trajectory(c, server.http, project, tid.hex())
        assert newest.headers["etag"] == '"3"'
        assert [s["name"] for s in newest.json()["agent_steps"][0]["steps"]] == ["chat", "add"]


def test_list_filters_and_sort(server: ServerProcess, project: str,
                               react_traces: dict[str, str]) -> None:
    react, error = react_traces["react"], react_traces["error"]

    def ids(**params: object) -> list[str]:
        with httpx.Client() as c:
            return [i["trace_id"] for i in get_json(
                c, f"{server.http}/api/v1/trajectories", project=project, **params)["items"]]

    assert sorted(ids()) == sorted([react, error])
    assert ids(tool="divide") == [react]
    assert ids(failed_tool_steps="true") == [react]
    assert ids(failed_model_steps="true") == [error]
    assert ids(failed_model_steps="false") == [react]
    assert ids(agent="LangGraph", status="final", tool="get_weather") == [react]
    assert ids(framework="langgraph", min_tokens=600) == [react]
    assert ids(max_tokens=0) == [error]
    assert ids(q="1/0") == sorted([react, error]) or set(ids(q="1/0")) == {react, error}
    assert ids(q="no such question") == []
    # both runs called the scripted model (its name is in both captures); names match
    # case-insensitively, and a model neither called matches nothing
    assert sorted(ids(model="fake-gpt-4o-mini")) == sorted([react, error])
    assert sorted(ids(model="FAKE-GPT-4o-Mini")) == sorted([react, error])
    assert ids(model="gpt-4o") == []
    assert ids(tool="DIVIDE") == [react]
    assert ids(sort="tokens", order="desc") == [react, error]
    with httpx.Client() as c:
        item = get_json(c, f"{server.http}/api/v1/trajectories", project=project,
                        tool="divide")["items"][0]
        assert item["input_tokens"] == 530 and item["output_tokens"] == 73
        assert item["model_step_count"] == 3 and item["tool_step_count"] == 3
        assert item["failed_tool_steps"] == 1 and item["status"] == "final"
        page1 = get_json(c, f"{server.http}/api/v1/trajectories", project=project, limit=1)
        page2 = get_json(c, f"{server.http}/api/v1/trajectories", project=project, limit=1,
                         cursor=page1["next_cursor"])
        assert {page1["items"][0]["trace_id"], page2["items"][0]["trace_id"]} == {react, error}


def test_explain_and_trajectory_view(server: ServerProcess, project: str,
                                     react_traces: dict[str, str]) -> None:
    with httpx.Client() as c:
        explain = get_json(c, f"{server.http}/api/v1/trajectories/{react_traces['react']}/"
                              "explain", project=project)
        spans = explain["spans"]
        flat = get_json(c, f"{server.http}/api/v1/traces/{react_traces['react']}",
                        project=project, view="flat")["spans"]
        assert len(spans) == len(flat)
        kept = [s for s in spans if s["kept"]]
        assert sorted(s["kind"] for s in kept) == sorted(
            ["root", "model", "model", "model", "tool", "tool", "tool"])
        assert {s["convention"] for s in spans} == {"openinference"}
        assert all(s["rule"] for s in spans)
        nodes = get_json(c, f"{server.http}/api/v1/traces/{react_traces['react']}",
                         project=project, view="trajectory")["spans"]
        assert len(nodes) == 1 and nodes[0]["name"] == "LangGraph"
        assert [n["step_type"] for n in nodes[0]["children"]] == [
            "model", "tool", "tool", "model", "tool", "model"]


def test_unknown_trajectory_is_404(server: ServerProcess, project: str) -> None:
    with httpx.Client() as c:
        r = c.get(f"{server.http}/api/v1/trajectories/{'ab' * 16}", params={"project": project})
        assert r.status_code == 404 and "no trajectory" in r.json()["detail"]
        r = c.get(f"{server.http}/api/v1/trajectories/{'ab' * 16}/explain",
                  params={"project": project})
        assert r.status_code == 404
        r = c.get(f"{server.http}/api/v1/trajectories", params={"status": "closed"})
        assert r.status_code == 400 and "'status'" in r.json()["detail"]


def test_rederive_over_rest_and_cli(server: ServerProcess, project: str,
                                    react_traces: dict[str, str], database) -> None:  # type: ignore[no-untyped-def]
    url = f"{server.http}/api/v1/trajectories/{react_traces['react']}"
    with httpx.Client() as c:
        r = c.post(f"{server.http}/api/v1/trajectories/rederive", params={"project": project},
                   json={})
        assert r.status_code == 202 and r.json()["queued"] == 2
        wait_for(lambda: c.get(url, params={"project": project}).headers[
            "x-trajectory-revision"] == "2", what="revision 2")
        done = subprocess.run(
            [sys.executable, "-m", "trajhub", "rederive", "--database-url", database.url,
             "--project", project, "--since", "2020-01-01T00:00:00Z"],
            capture_output=True, text=True, timeout=60, cwd=Path(__file__).parent.parent)
        assert done.returncode == 0, done.stderr
        assert "queued 2 trace" in done.stdout
        wait_for(lambda: c.get(url, params={"project": project}).headers[
            "x-trajectory-revision"] == "3", what="revision 3")
        # the document is rebuilt from the same spans: the same bytes
        assert final_trajectory(c, server.http, project, react_traces["react"]).json()["id"] \
            == react_traces["react"]


def test_normalize_dry_run_stores_nothing(server: ServerProcess, project: str) -> None:
    capture = next(c for c in RUNS["langsmith/react.prebuilt.invoke"] if c.protocol == "http")
    native = next(c for c in RUNS["cozeloop_python/react.prebuilt.invoke"])
    with httpx.Client() as c:
        r = c.post(f"{server.http}/api/v1/normalize", content=capture.body, headers=PB)
        assert r.status_code == 200, r.text
        (result,) = r.json()["traces"]
        jsonschema.validate(result["trajectory"], SCHEMA)
        assert result["trajectory"]["root_step"]["metrics_info"]["input_tokens"] == 530
        assert any(not e["kept"] for e in result["explanation"])
        assert c.get(f"{server.http}/api/v1/traces/{result['trace_id']}").status_code == 404

        r = c.post(f"{server.http}/api/v1/normalize", content=native.body,
                   headers={"content-type": "application/json"})
        (result,) = r.json()["traces"]
        assert [s["type"] for s in result["trajectory"]["agent_steps"][0]["steps"]] == [
            "model", "tool", "tool", "model", "tool", "model"]
        r = c.post(f"{server.http}/api/v1/normalize", content=b"hi",
                   headers={"content-type": "text/plain"})
        assert r.status_code == 415


@pytest.mark.slow  # several servers
def test_two_servers_share_the_work_and_derive_each_change_once(
        server: ServerProcess, project: str, database, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """A second trajhub on the same database: both derivation workers claim changes, and each
    trace (sent once) is derived exactly once — revision 1 — whichever worker took it."""
    second = ServerProcess.start(database.url, tmp_path, settle_seconds=0.5)
    trace_ids = []
    try:
        with httpx.Client() as c:
            for i in range(40):
                tid, root = new_trace_id(), new_span_id()
                spans = [span(tid, "agent", span_id=root, duration=10_000_000,
                              attributes={"gen_ai.operation.name": "invoke_agent"}),
                         span(tid, "chat", parent=root,
                              attributes={"gen_ai.operation.name": "chat"})]
                target = server if i % 2 else second
                r = c.post(f"{target.http}/v1/traces", content=request(spans).SerializeToString(),
                           headers={**PB, "trajhub-project": project})
                assert r.status_code == 200
                trace_ids.append(tid.hex())
            for tid in trace_ids:
                done = final_trajectory(c, server.http, project, tid)
                assert done.headers["x-trajectory-revision"] == "1"
    finally:
        assert second.stop() == 0


def test_a_request_carrying_whole_traces_is_acknowledged_with_their_trajectories(
        server: ServerProcess, project: str) -> None:
    """The ingest worker derives the traces a request carries whole in the transaction that
    stores their spans: the trajectory is there the moment the request is acknowledged."""
    tid, root = new_trace_id(), new_span_id()
    spans = [span(tid, "agent", span_id=root, duration=10_000_000,
                  attributes={"gen_ai.operation.name": "invoke_agent"}),
             span(tid, "chat", parent=root, start=1_700_000_000_000_001_000,
                  attributes={"gen_ai.operation.name": "chat"}),
             span(tid, "execute_tool add", parent=root, start=1_700_000_000_000_002_000,
                  attributes={"gen_ai.operation.name": "execute_tool",
                              "gen_ai.tool.name": "add"})]
    with httpx.Client() as c:
        r = c.post(f"{server.http}/v1/traces", content=request(spans).SerializeToString(),
                   headers={**PB, "trajhub-project": project})
        assert r.status_code == 200
        got = c.get(f"{server.http}/api/v1/trajectories/{tid.hex()}", params={"project": project})
        assert got.status_code == 200 and got.headers["x-trajectory-revision"] == "1"
        assert [s["name"] for s in got.json()["agent_steps"][0]["steps"]] == ["chat", "add"]
        listed = get_json(c, f"{server.http}/api/v1/traces", project=project)
        assert [t["trace_id"] for t in listed["items"]] == [tid.hex()]
        assert listed["items"][0]["span_count"] == 3


def _one_request(run: str) -> bytes:
    """Every OTLP/HTTP protobuf request of a captured run, merged into one."""
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
        ExportTraceServiceRequest,
    )
    whole = ExportTraceServiceRequest()
    for capture in RUNS[run]:
        if capture.protocol == "http" and "protobuf" in capture.headers.get("content-type", ""):
            whole.resource_spans.extend(
                ExportTraceServiceRequest.FromString(capture.decoded_body).resource_spans)
    assert whole.resource_spans, f"{run} has no OTLP/HTTP protobuf capture"
    return whole.SerializeToString()


def test_deriving_at_ingest_and_in_the_trajectory_worker_give_the_same_trajectory(
        server: ServerProcess, project: str, database, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """Captured runs sent as one request each: `server` derives them in the ingest worker from
    the spans it just decoded; a server with TRAJHUB_DERIVE_AT_INGEST=false queues them, and
    its derivation worker reads the stored spans back. Both give the same documents."""
    queued = ServerProcess.start(database.url, tmp_path,
                                 extra_env={"TRAJHUB_DERIVE_AT_INGEST": "false"})
    runs = ["openinference/react.prebuilt.stream", "langsmith/react.prebuilt.invoke",
            "traceloop/supervisor_handoff.langgraph_supervisor.invoke"]
    try:
        with httpx.Client() as c:
            for i, run in enumerate(runs):
                body = _one_request(run)
                trace_ids: list[list[str]] = []
                documents = []
                for target, where in ((server, f"{project}-{i}-ingest"),
                                      (queued, f"{project}-{i}-queued")):
                    r = c.post(f"{target.http}/v1/traces", content=body,
                               headers={**PB, "trajhub-project": where})
                    assert r.status_code == 200

                    def derived(where: str = where) -> list[dict[str, Any]] | None:
                        return get_json(c, f"{server.http}/api/v1/trajectories",
                                        project=where)["items"] or None
                    # derived with the request: listed at once, without waiting
                    listed = derived() if target is server else wait_for(derived, what=run)
                    assert listed, f"{run}: not derived with the request"
                    trace_ids.append([t["trace_id"] for t in listed])
                    documents.append(
                        final_trajectory(c, server.http, where, trace_ids[-1][0]).content)
                assert trace_ids[0] == trace_ids[1]
                assert documents[0] == documents[1], run
    finally:
        assert queued.stop() == 0


#: one run per client captured only for the multi-agent shapes, through the server: the official
#: OTel GenAI LangChain instrumentation on langgraph-supervisor (its `call_agent` wrapper
#: spans), and OpenInference with its GenAI dual-write on the ReAct run whose model turns report
#: cache and reasoning tokens, and OpenInference JS on the same run (its tool calls and cache
#: writes come from output.value)
NEW_CLIENT_RUNS = ("otel_genai/supervisor_handoff.langgraph_supervisor.stream",
                   "openinference_genai/react_agent.prebuilt.stream",
                   "openinference_js/react_agent.prebuilt.stream")


@pytest.mark.parametrize("run", NEW_CLIENT_RUNS)
def test_a_new_clients_run_gives_its_ground_truth_over_rest(server: ServerProcess, project: str,
                                                           run: str) -> None:
    truth = orjson.loads((Path(__file__).parent / "fixtures" / "real-clients" / "ground_truth"
                          / f"{run.split('/')[1].split('.')[0]}.json").read_bytes())
    trace_id = ingest_run(server, project, run)
    with httpx.Client() as c:
        doc = final_trajectory(c, server.http, project, trace_id).json()
    jsonschema.validate(doc, SCHEMA)
    agents = doc["agent_steps"]
    assert [a["name"] for a in agents] == [a["agent"] for a in truth["activations"]]
    assert [(a["metrics_info"]["input_tokens"], a["metrics_info"]["output_tokens"])
            for a in agents] == [(a["input_tokens"], a["output_tokens"])
                                 for a in truth["activations"]]
    models = [s["model_info"] for a in agents for s in a["steps"] if s["type"] == "model"]
    assert (sum(m["input_read_cached_tokens"] for m in models),
            sum(m["input_creation_cached_tokens"] for m in models),
            sum(m["reasoning_tokens"] for m in models)) == (
        truth["root"]["cache_read_tokens"], truth["root"]["cache_write_tokens"],
        truth["root"]["reasoning_tokens"])
    failed = [s["name"] for a in agents for s in a["steps"] if s["basic_info"].get("error")]
    assert failed == [s["name"] for a in truth["activations"] for s in a["steps"]
                      if s.get("error")]
