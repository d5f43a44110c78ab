"""Every route of /openapi.json, driven with real data, so that the document is checked against
what the server really answers: a project's runs arrive
through every ingest route, then every REST route is called on them as a client would, and each
live answer is checked against the document: its status is one the operation lists, its
Content-Type one it declares, and its body fits the declared schema (JSON Schema 2020-12, with
the document's components). A route added to the API without being driven here fails
`test_every_route_answers_what_its_openapi_document_says`."""

from __future__ import annotations

import base64
import time
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote, unquote

import atif
import httpx
import jsonschema
import orjson
import pytest
from google.protobuf import json_format

from tests.conftest import Secured
from tests.harness import wait_for
from tests.otlp_builders import PB, new_span_id, new_trace_id, request, span
from tests.test_cozeloop_ingest import native_span


@dataclass
class Recorder:
    """The answers seen, by (method, path template) as /openapi.json names them."""

    openapi: dict[str, Any]
    seen: dict[tuple[str, str], list[httpx.Response]] = field(default_factory=dict)

    def record(self, method: str, template: str, response: httpx.Response) -> httpx.Response:
        self.seen.setdefault((method.lower(), template), []).append(response)
        return response


def _run(agent: str, tool: str, model: str, session: str | None = None
         ) -> tuple[str, str, list[Any]]:
    """One agent run: an agent span (in `session`, when given), a model call and a tool
    call."""
    tid, root = new_trace_id(), new_span_id()
    t0 = time.time_ns()
    spans = [
        span(tid, f"invoke_agent {agent}", span_id=root, start=t0, duration=5_000_000,
             attributes={"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": agent,
                         "gen_ai.input.messages": '[{"role": "user", "content": "weather?"}]',
                         "gen_ai.output.messages":
                             '[{"role": "assistant", "content": "sunny"}]',
                         **({"gen_ai.conversation.id": session} if session else {})}),
        span(tid, f"chat {model}", parent=root, start=t0 + 1000, duration=1_000_000,
             attributes={"gen_ai.operation.name": "chat", "gen_ai.request.model": model,
                         "gen_ai.usage.input_tokens": 120, "gen_ai.usage.output_tokens": 30}),
        span(tid, f"execute_tool {tool}", parent=root, start=t0 + 2_000_000,
             attributes={"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": tool,
                         "gen_ai.tool.call.id": "call_1",
                         "gen_ai.tool.call.arguments": '{"city": "sf"}',
                         "gen_ai.tool.call.result": "sunny"}),
    ]
    return tid.hex(), root.hex(), spans


def _otlp_json(spans: list[Any]) -> bytes:
    doc = json_format.MessageToDict(request(spans))
    # OTLP/JSON carries ids as hex, not protobuf JSON's base64 (docs/otlp.md)
    for rs in doc["resourceSpans"]:
        for ss in rs["scopeSpans"]:
            for s in ss["spans"]:
                for key in ("traceId", "spanId", "parentSpanId"):
                    if key in s:
                        s[key] = base64.b64decode(s[key]).hex()
    return orjson.dumps(doc)


def drive_every_route(c: httpx.Client, rec: Recorder, project: str, metrics_key: str) -> None:
    """Call every operation with this project's real data; the calls depend on each other's
    answers (ids, names) as a client's would."""
    r = rec.record

    # ------------------------------------------------------------------------------ ingest
    a_id, a_root, a_spans = _run("planner", "get_weather", "gpt-4o-mini", "chat/1")
    b_id, _, b_spans = _run("planner", "get_forecast", "gpt-4o-mini", "chat/1")
    c_id, _, c_spans = _run("writer", "search", "gpt-4o")
    res = r("post", "/v1/traces", c.post("/v1/traces", content=request(a_spans)
                                         .SerializeToString(), headers=PB))
    assert res.status_code == 200, res.text
    res = r("post", "/v1/traces", c.post("/v1/traces", content=_otlp_json(b_spans),
                                         headers={"content-type": "application/json"}))
    assert res.status_code == 200, res.text
    res = r("post", "/v1/loop/opentelemetry/v1/traces", c.post(
        "/v1/loop/opentelemetry/v1/traces", content=_otlp_json(c_spans),
        headers={"content-type": "application/json"}))
    assert res.status_code == 200, res.text
    loop_id = new_trace_id().hex()
    res = r("post", "/v1/loop/traces/ingest", c.post("/v1/loop/traces/ingest",
                                                     json={"spans": [native_span(loop_id)]}))
    assert res.status_code == 200 and res.json()["code"] == 0, res.text
    file_key = f"f-{project}"
    res = r("post", "/v1/loop/files/upload", c.post(
        "/v1/loop/files/upload", files={"file": (file_key, b"a large input")}))
    assert res.status_code == 200, res.text
    # the other OTLP signals: a log record (and one rejected), metrics counted and dropped
    logs = {"resourceLogs": [{"scopeLogs": [{"logRecords": [
        {"traceId": a_id, "spanId": a_root, "eventName": "gen_ai.choice",
         "body": {"stringValue": "sunny"}}, {"traceId": "abcde"}]}]}]}
    res = r("post", "/v1/logs", c.post("/v1/logs", content=orjson.dumps(logs),
                                       headers={"content-type": "application/json"}))
    assert res.status_code == 200 and res.json()["partialSuccess"], res.text
    res = r("post", "/v1/metrics", c.post("/v1/metrics", content=b"", headers=PB))
    assert res.status_code == 200, res.text
    r("post", "/v1/logs", c.post("/v1/logs", content=b"{", headers={
        "content-type": "application/json"}))
    # a rejected span is answered too (partialSuccess), and an undecodable body is a 400
    r("post", "/v1/traces", c.post("/v1/traces", content=b"{", headers={
        "content-type": "application/json"}))
    for tid in (a_id, b_id, c_id):
        wait_for(lambda t=tid: c.get(f"/api/v1/trajectories/{t}").headers.get(  # type: ignore[misc]
            "x-trajectory-status") == "final" or None, timeout=60, what=f"trajectory {tid}")

    # ------------------------------------------------------------------------------ health
    for path in ("/healthz", "/readyz", "/metrics"):
        headers = {"authorization": f"Bearer {metrics_key}"} if path == "/metrics" else None
        res = r("get", path, c.get(path, headers=headers))
        assert res.status_code == 200, (path, res.text)

    # -------------------------------------------------------------------------- traces
    r("get", "/api/v1/projects", c.get("/api/v1/projects"))
    r("get", "/api/v1/schema/trajectory", c.get("/api/v1/schema/trajectory"))
    r("get", "/api/v1/traces", c.get("/api/v1/traces", params={"limit": 2}))
    page = r("get", "/api/v1/traces", c.get("/api/v1/traces", params={"limit": 1})).json()
    assert page["next_cursor"]
    r("get", "/api/v1/traces", c.get("/api/v1/traces", params={"cursor": page["next_cursor"]}))
    for params in ({"view": "tree"}, {"view": "flat"}, {"view": "trajectory"},
                   {"format": "otlp"}, {"format": "otlp_logs"}):
        r("get", "/api/v1/traces/{trace_id}", c.get(f"/api/v1/traces/{a_id}", params=params))
    # the stored log records: a page, the next one, one trace's, the orphans, a bad cursor
    page = r("get", "/api/v1/logs", c.get("/api/v1/logs", params={"limit": 1})).json()
    assert page["items"][0]["body"] == "sunny" and page["items"][0]["trace_id"] == a_id, page
    r("get", "/api/v1/logs", c.get("/api/v1/logs", params={"cursor": page["next_cursor"]}))
    r("get", "/api/v1/logs", c.get("/api/v1/logs", params={"trace_id": a_id,
                                                           "orphaned": "true"}))
    r("get", "/api/v1/logs", c.get("/api/v1/logs", params={"cursor": "not-one"}))
    r("get", "/api/v1/traces/{trace_id}", c.get(f"/api/v1/traces/{loop_id}",
                                                params={"format": "cozeloop"}))
    r("get", "/api/v1/traces/{trace_id}", c.get(f"/api/v1/traces/{'0' * 31}1"))
    r("get", "/api/v1/traces/{trace_id}/spans/{span_id}",
      c.get(f"/api/v1/traces/{a_id}/spans/{a_root}"))
    # a trace's spans in pages: a first page with a cursor, the next one, a bad cursor
    page = r("get", "/api/v1/traces/{trace_id}/spans",
             c.get(f"/api/v1/traces/{a_id}/spans", params={"limit": 2})).json()
    assert page["next_cursor"], page
    r("get", "/api/v1/traces/{trace_id}/spans", c.get(
        f"/api/v1/traces/{a_id}/spans", params={"cursor": page["next_cursor"]}))
    r("get", "/api/v1/traces/{trace_id}/spans", c.get(
        f"/api/v1/traces/{a_id}/spans", params={"cursor": "bad"}))
    r("get", "/api/v1/files/{key}", c.get(f"/api/v1/files/{file_key}"))
    r("get", "/api/v1/files/{key}", c.get("/api/v1/files/no-such-file"))

    # -------------------------------------------------------------------- trajectories
    r("get", "/api/v1/trajectories", c.get("/api/v1/trajectories",
                                           params={"count": "true", "agent": "planner"}))
    r("get", "/api/v1/trajectories", c.get("/api/v1/trajectories", params={"start": "soon"}))
    r("get", "/api/v1/trajectories/{trace_id}", c.get(f"/api/v1/trajectories/{a_id}"))
    # a trajectory's steps and events in pages, and an offset past the end
    for params in ({"limit": 2}, {"offset": 2, "limit": 2}, {"offset": 99}):
        r("get", "/api/v1/trajectories/{trace_id}/steps",
          c.get(f"/api/v1/trajectories/{a_id}/steps", params=params))
        r("get", "/api/v1/trajectories/{trace_id}/events",
          c.get(f"/api/v1/trajectories/{a_id}/events", params=params))
    r("get", "/api/v1/trajectories/{trace_id}/steps",
      c.get(f"/api/v1/trajectories/{a_id}/steps", params={"limit": 0}))
    for suffix in ("explain", "item-draft", "revisions", "cost", "contract", "events",
                   "tool-results", "graph"):
        r("get", f"/api/v1/trajectories/{{trace_id}}/{suffix}",
          c.get(f"/api/v1/trajectories/{a_id}/{suffix}"))
    # the agent graph: one run's (above), the planner's runs (a and b), a 404 and bad input
    graph = r("get", "/api/v1/graph", c.get("/api/v1/graph", params={"agent": "planner",
                                                                   "limit": 500})).json()
    assert graph["runs"] == 2, graph
    r("get", "/api/v1/graph", c.get("/api/v1/graph", params={"limit": 0}))
    r("get", "/api/v1/graph", c.get("/api/v1/graph", params={"start": "soon"}))
    r("get", "/api/v1/trajectories/{trace_id}/graph",
      c.get(f"/api/v1/trajectories/{'0' * 31}1/graph"))
    r("get", "/api/v1/trajectories/compare",
      c.get("/api/v1/trajectories/compare", params={"a": a_id, "b": b_id}))
    r("post", "/api/v1/trajectories/rederive",
      c.post("/api/v1/trajectories/rederive", json={"outdated": True}))
    r("post", "/api/v1/normalize", c.post("/api/v1/normalize",
                                          content=request(c_spans).SerializeToString(),
                                          headers=PB))
    r("post", "/api/v1/normalize", c.post("/api/v1/normalize", content=b"x",
                                          headers={"content-type": "text/plain"}))

    # ------------------------------------------------------------------------ sessions
    page = r("get", "/api/v1/sessions", c.get("/api/v1/sessions", params={
        "agent": "planner", "user_id": "nobody"})).json()
    assert page["items"] == []
    page = r("get", "/api/v1/sessions", c.get("/api/v1/sessions", params={"limit": 1})).json()
    assert [s["session_id"] for s in page["items"]] == ["chat/1"], page
    assert page["items"][0]["turns"] == 2
    r("get", "/api/v1/sessions", c.get("/api/v1/sessions", params={
        "cursor": page["next_cursor"], "has_error": "false", "start": "2020-01-01T00:00:00Z",
        "agent": "planner", "min_turns": 1}))
    r("get", "/api/v1/sessions", c.get("/api/v1/sessions", params={"cursor": "bad"}))
    detail = r("get", "/api/v1/sessions/{session_id}",
               c.get(f"/api/v1/sessions/{quote('chat/1', safe='')}")).json()
    assert [t["trace_id"] for t in detail["turns"]] == [a_id, b_id]
    assert [t["input"] for t in detail["turns"]] == ["weather?", "weather?"]
    r("get", "/api/v1/sessions/{session_id}", c.get("/api/v1/sessions/chat/1",
                                                      params={"limit": 1}))
    r("get", "/api/v1/sessions/{session_id}", c.get("/api/v1/sessions/no-such-session"))
    r("get", "/api/v1/sessions/{session_id}", c.get("/api/v1/sessions/a%00b"))

    # ------------------------------------------------------------------------ datasets
    name = "weather-set"
    res = r("post", "/api/v1/datasets", c.post("/api/v1/datasets",
                                               json={"name": name, "description": "d"}))
    assert res.status_code == 201, res.text
    r("post", "/api/v1/datasets", c.post("/api/v1/datasets", json={"name": name}))  # 409
    r("get", "/api/v1/datasets", c.get("/api/v1/datasets"))
    r("get", "/api/v1/datasets/{name}", c.get(f"/api/v1/datasets/{name}"))
    r("patch", "/api/v1/datasets/{name}", c.patch(f"/api/v1/datasets/{name}",
                                                  json={"description": "weather runs"}))
    res = r("post", "/api/v1/datasets/{name}/fill", c.post(
        f"/api/v1/datasets/{name}/fill", json={"trace_ids": [a_id, b_id]}))
    assert res.json()["added"] == 2, res.text
    res = r("post", "/api/v1/datasets/{name}/items", c.post(
        f"/api/v1/datasets/{name}/items",
        json={"input": "hello", "metadata": {"big": 2**64}, "tags": ["hand"]}))
    assert res.status_code == 201, res.text
    item_id = res.json()["id"]
    r("get", "/api/v1/datasets/{name}/items", c.get(f"/api/v1/datasets/{name}/items",
                                                     params={"include_trajectory": "true"}))
    r("get", "/api/v1/datasets/{name}/items/{item_id}",
      c.get(f"/api/v1/datasets/{name}/items/{item_id}"))
    r("patch", "/api/v1/datasets/{name}/items/{item_id}",
      c.patch(f"/api/v1/datasets/{name}/items/{item_id}", json={"tags": ["edited"]}))
    export = r("get", "/api/v1/datasets/{name}/export",
               c.get(f"/api/v1/datasets/{name}/export", params={"format": "jsonl"}))
    r("get", "/api/v1/datasets/{name}/export",
      c.get(f"/api/v1/datasets/{name}/export", params={"format": "csv"}))
    r("post", "/api/v1/datasets/{name}/import", c.post(
        "/api/v1/datasets/copy/import", params={"create": "true"}, content=export.content,
        headers={"content-type": "application/x-ndjson"}))
    atif_export = r("get", "/api/v1/datasets/{name}/export",
                    c.get(f"/api/v1/datasets/{name}/export", params={"format": "atif"}))
    lines = [orjson.loads(line) for line in atif_export.content.splitlines()]
    # the two filled runs and the hand-made item, each one ATIF trajectory
    assert [d["schema_version"] for d in lines] == ["ATIF-v1.8"] * 3, atif_export.text
    assert {d["agent"]["name"] for d in lines} == {"planner", "reference"}
    for line in lines:  # valid ATIF v1.8, the item-only one included
        atif.Trajectory.model_validate(line)

    # -------------------------------------------------------------------------- ATIF
    res = r("get", "/api/v1/trajectories/{trace_id}/atif",
            c.get(f"/api/v1/trajectories/{a_id}/atif"))
    assert res.status_code == 200, res.text
    document = res.json()
    assert document["agent"]["name"] == "planner"
    atif.Trajectory.model_validate(document)
    model_step = next(s for s in document["steps"] if s["source"] == "agent")
    assert model_step["metrics"]["prompt_tokens"] == 120
    r("get", "/api/v1/trajectories/{trace_id}/atif",
      c.get(f"/api/v1/trajectories/{'0' * 31}2/atif"))  # 404
    res = r("post", "/api/v1/trajectories/import/atif",
            c.post("/api/v1/trajectories/import/atif", json=document))
    assert res.status_code == 201, res.text
    imported = res.json()["trace_id"]
    wait_for(lambda: c.get(f"/api/v1/trajectories/{imported}").headers.get(
        "x-trajectory-status") == "final" or None, timeout=60, what=f"imported {imported}")
    again = c.get(f"/api/v1/trajectories/{imported}").json()
    original = c.get(f"/api/v1/trajectories/{a_id}").json()
    assert [(a["name"], [(s["type"], s["name"]) for s in a["steps"]])
            for a in again["agent_steps"]] == [
        (a["name"], [(s["type"], s["name"]) for s in a["steps"]])
        for a in original["agent_steps"]]
    assert again["root_step"]["metrics_info"]["input_tokens"] == 120
    r("post", "/api/v1/trajectories/import/atif", c.post(
        "/api/v1/trajectories/import/atif", json={"schema_version": "ATIF-v9", "steps": []}))

    # --------------------------------------------------------------------- evaluations
    evaluations = []
    for _ in range(2):
        res = r("post", "/api/v1/evaluations", c.post("/api/v1/evaluations", json={
            "dataset": name, "evaluators": ["expected_agents_tools"]}))
        assert res.status_code == 202, res.text
        evaluations.append(res.json()["id"])
    for evaluation in evaluations:
        wait_for(lambda e=evaluation: c.get(f"/api/v1/evaluations/{e}").json()[  # type: ignore[misc]
            "status"] != "running" or None, timeout=60, what=f"evaluation {evaluation}")
        r("get", "/api/v1/evaluations/{evaluation_id}", c.get(f"/api/v1/evaluations/{evaluation}"))
        r("get", "/api/v1/evaluations/{evaluation_id}/results",
          c.get(f"/api/v1/evaluations/{evaluation}/results"))
    r("get", "/api/v1/evaluations", c.get("/api/v1/evaluations", params={"dataset": name}))
    r("post", "/api/v1/regressions", c.post("/api/v1/regressions", json={
        "baseline": {"evaluation": evaluations[0]},
        "candidate": {"evaluation": evaluations[1]}}))
    r("post", "/api/v1/regressions", c.post("/api/v1/regressions", json={
        "baseline": {"evaluation": 2**86}, "candidate": {"evaluation": 1}}))

    # -------------------------------------------------------------------------- scores
    scores = f"/api/v1/trajectories/{a_id}/scores"
    res = r("post", "/api/v1/trajectories/{trace_id}/scores", c.post(scores, json={
        "name": "correctness", "value": 0.8, "comment": "right city"}))
    assert res.status_code == 201, res.text
    # the author is the name of the key that wrote it (tests/conftest.py: `secured`)
    assert res.json()["items"][0]["author"] == "contract tests"
    res = r("post", "/api/v1/trajectories/{trace_id}/scores", c.post(scores, json={"scores": [
        {"name": "tool_ok", "value": True, "step_id": a_root, "source": "human"},
        {"name": "verdict", "value": "pass"}]}))
    assert res.status_code == 201, res.text
    step_score = res.json()["items"][0]["id"]
    r("post", "/api/v1/trajectories/{trace_id}/scores", c.post(scores, json={
        "name": "x", "value": 1, "step_id": "0" * 16}))  # 400: no such step
    r("post", "/api/v1/trajectories/{trace_id}/scores", c.post(scores, json={
        "name": "x", "value": [1]}))  # 422: not a number, boolean or category
    res = r("post", "/api/v1/trajectories/{trace_id}/scores", c.post(scores, json={
        "name": "x", "value": 1, "author": "mallory"}))  # with a key, the key is the author
    assert res.status_code == 400 and "set from the API key" in res.text, res.text
    res = r("get", "/api/v1/trajectories/{trace_id}/scores", c.get(scores))
    # the evaluations above judged a_id too (expected_agents_tools), twice
    assert [s["name"] for s in res.json()["items"]] == [
        "expected_agents_tools", "expected_agents_tools", "correctness", "tool_ok", "verdict"]
    r("get", "/api/v1/trajectories/{trace_id}/scores",
      c.get(f"/api/v1/trajectories/{'0' * 31}1/scores"))  # 404
    res = r("get", "/api/v1/trajectories", c.get("/api/v1/trajectories", params={
        "score": "correctness>=0.5", "sort": "score:correctness"}))
    assert [t["trace_id"] for t in res.json()["items"]] == [a_id], res.text
    r("get", "/api/v1/trajectories", c.get("/api/v1/trajectories", params={"score": "x~1"}))
    res = r("delete", "/api/v1/trajectories/{trace_id}/scores/{score_id}",
            c.delete(f"{scores}/{step_score}"))
    assert res.status_code == 204, res.text
    r("delete", "/api/v1/trajectories/{trace_id}/scores/{score_id}",
      c.delete(f"{scores}/{step_score}"))  # 404
    res = r("put", "/api/v1/score-configs/{name}", c.put("/api/v1/score-configs/correctness",
                                                          json={"data_type": "number",
                                                                "min": 0, "max": 1}))
    assert res.status_code == 200, res.text
    r("put", "/api/v1/score-configs/{name}", c.put("/api/v1/score-configs/x", json={
        "data_type": "number", "min": 2, "max": 1}))  # 400
    res = r("post", "/api/v1/trajectories/{trace_id}/scores", c.post(scores, json={
        "name": "correctness", "value": 2}))
    assert res.status_code == 400 and "outside its config" in res.text, res.text
    res = r("get", "/api/v1/score-configs", c.get("/api/v1/score-configs"))
    # other test files share this server's project (the `secured` fixture) and add configs too
    assert "correctness" in [x["name"] for x in res.json()["items"]], res.text
    res = r("delete", "/api/v1/score-configs/{name}",
            c.delete("/api/v1/score-configs/correctness"))
    assert res.status_code == 204, res.text
    r("delete", "/api/v1/score-configs/{name}",
      c.delete("/api/v1/score-configs/correctness"))  # 404

    # ------------------------------------------- online evaluation rules (docs/rules.md)
    res = r("post", "/api/v1/rules", c.post("/api/v1/rules", json={
        "name": "steps", "evaluator": "efficiency", "config": {"max_steps": 50},
        "filter": {"agent": "nobody-runs-this"}}))
    assert res.status_code == 201, res.text
    rule = res.json()["id"]
    r("post", "/api/v1/rules", c.post("/api/v1/rules", json={
        "name": "steps", "evaluator": "efficiency", "config": {"max_steps": 5}}))  # 409
    res = r("post", "/api/v1/rules", c.post("/api/v1/rules", json={
        "name": "x", "evaluator": "efficiency", "config": {"max_steps": 5},
        "filter": {"score": "x~1"}}))  # 400: the filter does not parse
    assert res.status_code == 400 and "score" in res.text, res.text
    res = r("get", "/api/v1/rules", c.get("/api/v1/rules"))
    assert [x["name"] for x in res.json()["items"]] == ["steps"]
    r("get", "/api/v1/rules/{rule_id}", c.get(f"/api/v1/rules/{rule}"))
    r("get", "/api/v1/rules/{rule_id}", c.get("/api/v1/rules/999999999"))  # 404
    # the filter now takes every trajectory: a backfill judges a_id among them
    res = r("patch", "/api/v1/rules/{rule_id}", c.patch(f"/api/v1/rules/{rule}", json={
        "filter": {}, "enabled": True}))
    assert res.status_code == 200 and res.json()["filter"] == {}, res.text
    r("patch", "/api/v1/rules/{rule_id}", c.patch(f"/api/v1/rules/{rule}", json={
        "evaluator": "no_such_evaluator"}))  # 400
    res = r("post", "/api/v1/rules/{rule_id}/backfills",
            c.post(f"/api/v1/rules/{rule}/backfills", json={}))
    assert res.status_code == 202 and res.json()["total"] >= 1, res.text
    backfill = res.json()["id"]
    done = wait_for(lambda: (lambda b: b if b["status"] == "done" else None)(
        c.get(f"/api/v1/rules/{rule}/backfills/{backfill}").json()), what="the backfill")
    assert done["done"] == done["total"]
    r("get", "/api/v1/rules/{rule_id}/backfills/{backfill_id}",
      c.get(f"/api/v1/rules/{rule}/backfills/{backfill}"))
    r("get", "/api/v1/rules/{rule_id}/backfills/{backfill_id}",
      c.get(f"/api/v1/rules/{rule}/backfills/999999999"))  # 404
    r("get", "/api/v1/rules/{rule_id}/backfills", c.get(f"/api/v1/rules/{rule}/backfills"))
    judged = [x for x in c.get(scores).json()["items"] if x["rule_id"] == rule]
    assert [(x["name"], x["source"], x["value"]) for x in judged] == [
        ("efficiency", "evaluator", 1.0)], judged
    res = r("delete", "/api/v1/rules/{rule_id}", c.delete(f"/api/v1/rules/{rule}"))
    assert res.status_code == 204, res.text
    r("delete", "/api/v1/rules/{rule_id}", c.delete(f"/api/v1/rules/{rule}"))  # 404
    # ------------------------------------------------ monitoring alerts (docs/alerts.md)
    hook = {"metric": "error_rate", "alert_threshold": 0.5, "window_seconds": 900,
            "webhook_url": "http://127.0.0.1:9/never-listening", "muted": True}
    res = r("post", "/api/v1/alerts", c.post("/api/v1/alerts", json={"name": "errs", **hook}))
    assert res.status_code == 201 and res.json()["secret"], res.text
    alert = res.json()["id"]
    r("post", "/api/v1/alerts", c.post("/api/v1/alerts", json={"name": "errs", **hook}))  # 409
    res = r("post", "/api/v1/alerts", c.post("/api/v1/alerts", json={
        "name": "x", **hook, "warning_threshold": 0.9}))  # 400: the warning comes first
    assert res.status_code == 400 and "warning_threshold" in res.text, res.text
    r("post", "/api/v1/alerts", c.post("/api/v1/alerts", json={
        "name": "x", **hook, "metric": "mood"}))  # 422
    res = r("get", "/api/v1/alerts", c.get("/api/v1/alerts", params={"limit": 1}))
    r("get", "/api/v1/alerts", c.get("/api/v1/alerts", params={"cursor": "bad"}))  # 400
    r("get", "/api/v1/alerts/{alert_id}", c.get(f"/api/v1/alerts/{alert}"))
    r("get", "/api/v1/alerts/{alert_id}", c.get("/api/v1/alerts/999999999"))  # 404
    res = r("patch", "/api/v1/alerts/{alert_id}", c.patch(f"/api/v1/alerts/{alert}", json={
        "warning_threshold": 0.2}))
    assert res.status_code == 200 and res.json()["muted"], res.text
    r("patch", "/api/v1/alerts/{alert_id}", c.patch(f"/api/v1/alerts/{alert}", json={
        "alert_threshold": 0.1}))  # 400: now below the warning
    r("patch", "/api/v1/alerts/{alert_id}", c.patch("/api/v1/alerts/999999999", json={}))
    r("get", "/api/v1/alerts/{alert_id}/events", c.get(f"/api/v1/alerts/{alert}/events"))
    r("get", "/api/v1/alerts/{alert_id}/events", c.get("/api/v1/alerts/999999999/events"))
    res = r("delete", "/api/v1/alerts/{alert_id}", c.delete(f"/api/v1/alerts/{alert}"))
    assert res.status_code == 204, res.text
    r("delete", "/api/v1/alerts/{alert_id}", c.delete(f"/api/v1/alerts/{alert}"))  # 404
    # ---------------------------------------------------------------- review queues
    res = r("put", "/api/v1/score-configs/{name}", c.put("/api/v1/score-configs/review_ok",
                                                          json={"data_type": "boolean"}))
    assert res.status_code == 200, res.text
    q = "/api/v1/review-queues/triage"
    res = r("post", "/api/v1/review-queues", c.post("/api/v1/review-queues", json={
        "name": "triage", "description": "planner runs", "score_names": ["review_ok"]}))
    assert res.status_code == 201, res.text
    r("post", "/api/v1/review-queues", c.post("/api/v1/review-queues", json={
        "name": "triage"}))  # 409
    r("post", "/api/v1/review-queues", c.post("/api/v1/review-queues", json={
        "name": "other", "score_names": ["no_config"]}))  # 400
    res = r("post", "/api/v1/review-queues/{name}/items", c.post(f"{q}/items", json={
        "trace_ids": [c_id]}))
    assert res.json()["added"] == [c_id], res.text
    res = r("post", "/api/v1/review-queues/{name}/items", c.post(f"{q}/items", json={
        "query": {"agent": "planner"}, "limit": 10}))
    # the planner's runs (a and b, and any other an earlier call made)
    planned = res.json()["added"]
    assert {a_id, b_id} <= set(planned), res.text
    r("get", "/api/v1/review-queues", c.get("/api/v1/review-queues"))
    res = r("get", "/api/v1/review-queues/{name}", c.get(q))
    assert res.json()["total"] == 1 + len(planned), res.text
    r("get", "/api/v1/review-queues/{name}", c.get("/api/v1/review-queues/none"))  # 404
    res = r("post", "/api/v1/review-queues/{name}/next", c.post(f"{q}/next", json={}))
    first = res.json()["item"]
    assert first["reviewer"] == "contract tests", res.text
    complete = "/api/v1/review-queues/{name}/items/{item_id}/complete"
    r("post", complete, c.post(f"{q}/items/{first['id']}/complete", json={
        "scores": [{"name": "review_ok", "value": 3}]}))  # 400: outside its config
    res = r("post", complete, c.post(f"{q}/items/{first['id']}/complete", json={
        "scores": [{"name": "review_ok", "value": True}], "comment": "fine",
        "expectations": {"tools": {"writer": ["search"]}}}))
    assert res.status_code == 200 and res.json()["item"]["status"] == "done", res.text
    r("post", complete, c.post(f"{q}/items/{first['id']}/complete", json={
        "scores": [{"name": "review_ok", "value": True}]}))  # 409: not held any more
    res = r("post", "/api/v1/review-queues/{name}/next", c.post(f"{q}/next", json={}))
    second = res.json()["item"]
    res = r("post", "/api/v1/review-queues/{name}/items/{item_id}/skip",
            c.post(f"{q}/items/{second['id']}/skip", json={"comment": "unclear"}))
    assert res.json()["status"] == "skipped", res.text
    r("get", "/api/v1/review-queues/{name}/items", c.get(f"{q}/items",
                                                        params={"status": "done"}))
    res = r("post", "/api/v1/review-queues/{name}/export-to-dataset",
            c.post(f"{q}/export-to-dataset", json={"dataset": "reviewed"}))
    assert res.json()["added"] == 1, res.text

    # ----------------------------------------------------------- retention and keys
    r("get", "/api/v1/retention", c.get("/api/v1/retention"))
    r("put", "/api/v1/retention", c.put("/api/v1/retention", json={"days": 30}))
    r("delete", "/api/v1/retention", c.delete("/api/v1/retention"))

    # ----------------------------------------------------------------------- monitoring
    now, day = time.time_ns(), 86_400_000_000_000
    res = r("get", "/api/v1/timeseries", c.get("/api/v1/timeseries", params={
        "start": str(now - day), "end": str(now + day), "group_by": "model"}))
    assert res.status_code == 200, res.text
    r("get", "/api/v1/timeseries", c.get("/api/v1/timeseries", params={
        "start": str(now), "end": str(now - day)}))  # 400: backwards
    r("get", "/api/v1/keys", c.get("/api/v1/keys"))
    res = r("post", "/api/v1/keys", c.post("/api/v1/keys", json={"scope": "read",
                                                                  "name": "reader"}))
    r("delete", "/api/v1/keys/{key_id}", c.delete(f"/api/v1/keys/{res.json()['key_id']}"))

    # ----------------------------------------------------------------------- deletes
    r("delete", "/api/v1/datasets/{name}/items/{item_id}",
      c.delete(f"/api/v1/datasets/{name}/items/{item_id}"))
    r("delete", "/api/v1/datasets/{name}", c.delete(f"/api/v1/datasets/{name}"))
    r("delete", "/api/v1/datasets/{name}", c.delete(f"/api/v1/datasets/{name}"))  # 404
    r("delete", "/api/v1/review-queues/{name}", c.delete("/api/v1/review-queues/triage"))
    r("delete", "/api/v1/review-queues/{name}",
      c.delete("/api/v1/review-queues/triage"))  # 404


def _operation_of(openapi: dict[str, Any], method: str, template: str) -> dict[str, Any]:
    operation: dict[str, Any] = openapi["paths"][template][method]
    return operation


def _check_answer(openapi: dict[str, Any], method: str, template: str,
                  response: httpx.Response) -> str | None:
    """Why this answer breaks the document, or None."""
    operation = _operation_of(openapi, method, template)
    declared = operation["responses"].get(str(response.status_code))
    where = f"{method.upper()} {template} -> {response.status_code}"
    if declared is None:
        return f"{where}: status not listed ({sorted(operation['responses'])})"
    content = declared.get("content") or {}
    if not content:
        return None if not response.content else f"{where}: a body where none is declared"
    media = response.headers.get("content-type", "").split(";")[0].strip()
    if media not in content:
        return f"{where}: Content-Type {media!r} not declared ({sorted(content)})"
    schema = content[media].get("schema")
    if not schema:
        return None
    if media in ("application/json", "application/schema+json"):
        documents = [response.json()]
    elif media == "application/x-ndjson":
        # each line is one document of the schema (events); export's text is a plain string
        if schema.get("type") == "string":
            return None
        documents = [orjson.loads(line) for line in response.content.splitlines() if line]
    else:
        return None
    # the operation's schema, resolved against the document's components
    validator = jsonschema.Draft202012Validator({**schema, "components": openapi["components"]})
    for document in documents:
        error = jsonschema.exceptions.best_match(validator.iter_errors(document))
        if error is not None:
            return f"{where}: {'/'.join(map(str, error.absolute_path))}: {error.message[:300]}"
    return None


@pytest.fixture(scope="module")
def driven(secured: Secured) -> Recorder:
    with httpx.Client(base_url=secured.server.http, headers=secured.headers,
                      timeout=60) as c:
        openapi = c.get("/openapi.json").json()
        rec = Recorder(openapi)
        drive_every_route(c, rec, secured.project, secured.metrics)
    return rec


def test_every_route_answers_what_its_openapi_document_says(driven: Recorder) -> None:
    documented = {(method, path) for path, operations in driven.openapi["paths"].items()
                  for method in operations}
    assert documented - set(driven.seen) == set(), "routes no test drives: add them above"
    assert set(driven.seen) - documented == set(), "driven routes the document does not list"
    problems = [problem for (method, template), answers in driven.seen.items()
                for response in answers
                if (problem := _check_answer(driven.openapi, method, template, response))]
    assert problems == []


def test_every_route_answered_a_success_to_real_data(driven: Recorder) -> None:
    without = sorted(f"{m.upper()} {t}: {[a.status_code for a in answers]}"
                     for (m, t), answers in driven.seen.items()
                     if not any(200 <= a.status_code < 300 for a in answers))
    assert without == []


def test_a_body_integer_beyond_64_bits_is_stored_not_a_server_error(driven: Recorder) -> None:
    created = [a for a in driven.seen[("post", "/api/v1/datasets/{name}/items")]
               if a.request.content and b"18446744073709551616" in a.request.content]
    assert created and created[0].status_code == 201, created[0].text if created else None
    assert float(created[0].json()["metadata"]["big"]) == float(2**64)


def test_an_evaluation_id_beyond_a_bigint_is_a_422_naming_it(driven: Recorder) -> None:
    answers = [a for a in driven.seen[("post", "/api/v1/regressions")]
               if b"77371252455336267181195264" in (a.request.content or b"")]
    assert answers and answers[0].status_code == 422
    assert "evaluation" in answers[0].text


@pytest.mark.parametrize("name", ["数据", "a\nb", 'quote" and %41'])
def test_export_names_any_set_in_its_header_without_breaking_it(secured: Secured,
                                                                 name: str) -> None:
    with httpx.Client(base_url=secured.server.http, headers=secured.headers, timeout=60) as c:
        r = c.post("/api/v1/datasets", json={"name": name})
        assert r.status_code == 201, r.text
        try:
            r = c.get(f"/api/v1/datasets/{quote(name, safe='')}/export")
            assert r.status_code == 200, r.text
            disposition = r.headers["content-disposition"]
            assert "\n" not in disposition and disposition.isascii()
            encoded = disposition.split("filename*=UTF-8''", 1)[1]
            assert unquote(encoded) == f"{name}.jsonl.jsonl"
        finally:
            c.delete(f"/api/v1/datasets/{quote(name, safe='')}")
