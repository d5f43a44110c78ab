"""llm_judge against a local fake OpenAI-compatible server: the verdict is stored; a malformed
verdict is an error entry, never a pass."""

from __future__ import annotations

import json
import threading
import uuid
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, ClassVar

import httpx
import pytest

from tests.harness import ServerProcess, TestDatabase
from tests.test_datasets_support import ingest_all, wait_evaluation


class FakeJudge(BaseHTTPRequestHandler):
    """POST /v1/chat/completions. An item whose input says MALFORMED gets a prose answer (what
    a chatty model does); every other item gets a well-formed verdict."""

    requests: ClassVar[list[tuple[dict[str, str], dict[str, Any]]]] = []

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["content-length"])))
        FakeJudge.requests.append(({k.lower(): v for k, v in self.headers.items()}, body))
        if self.path != "/v1/chat/completions":
            self.send_response(404)
            self.end_headers()
            return
        prompt = body["messages"][-1]["content"]
        content = ("The agent did fine overall, I'd say a pass." if "MALFORMED" in prompt
                   else json.dumps({"score": 0.8, "passed": True, "reason": "sensible tools"}))
        answer = json.dumps({
            "id": "chatcmpl-1", "object": "chat.completion", "model": body["model"],
            "choices": [{"index": 0, "finish_reason": "stop",
                         "message": {"role": "assistant", "content": content}}],
        }).encode()
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(answer)))
        self.end_headers()
        self.wfile.write(answer)

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture(scope="module")
def judge_url() -> Iterator[str]:
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), FakeJudge)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}/v1"
    httpd.shutdown()


@pytest.fixture(scope="module")
def judged_server(database: TestDatabase, judge_url: str,
                  tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    proc = ServerProcess.start(database.url, Path(tmp_path_factory.mktemp("judged")),
                               extra_env={"TRAJHUB_JUDGE_URL": judge_url,
                                          "TRAJHUB_JUDGE_MODEL": "judge-model",
                                          "TRAJHUB_JUDGE_API_KEY": "sk-test"})
    yield proc
    proc.stop()


def test_llm_judge_verdicts_and_a_malformed_answer(judged_server: ServerProcess) -> None:
    ingested = ingest_all(judged_server, "t-judge-" + uuid.uuid4().hex[:8])
    api = httpx.Client(base_url=judged_server.http + "/api/v1",
                       headers={"trajhub-project": ingested.project}, timeout=30)
    name = "judged"
    api.post("/datasets", json={"name": name})
    api.post(f"/datasets/{name}/fill",
             json={"query": {"agent": "LangGraph", "failed_model_steps": False}, "limit": 2})
    good, bad = api.get(f"/datasets/{name}/items").json()["items"]
    api.patch(f"/datasets/{name}/items/{bad['id']}", json={"input": "MALFORMED please"})
    FakeJudge.requests.clear()

    r = api.post("/evaluations", json={"dataset": name, "evaluators": [
        {"name": "llm_judge", "config": {"rubric": "Be strict."}}]})
    assert r.status_code == 202, r.text
    run = wait_evaluation(api, judged_server.http, ingested.project, r.json()["id"])
    assert run["status"] == "done"
    (agg,) = run["aggregates"]
    assert (agg["passed"], agg["failed"], agg["errors"]) == (1, 0, 1)
    assert agg["pass_rate"] == 0.5 and agg["mean_score"] == pytest.approx(0.8)

    page = api.get(f"/evaluations/{run['id']}/results").json()
    results = {r["item_id"]: r for r in page["items"]}
    assert results[good["id"]]["passed"] is True and results[good["id"]]["score"] == 0.8
    assert results[good["id"]]["reason"]["text"] == "sensible tools"
    assert results[good["id"]]["reason"]["model"] == "judge-model"
    assert results[bad["id"]]["passed"] is None and results[bad["id"]]["score"] is None
    assert "not JSON" in results[bad["id"]]["error"]

    assert len(FakeJudge.requests) == 2
    headers, body = FakeJudge.requests[0]
    assert headers["authorization"] == "Bearer sk-test"
    assert body["model"] == "judge-model"
    assert "Be strict." in body["messages"][0]["content"]
    prompt = " ".join(json.dumps(req["messages"][-1]["content"]) for _, req in FakeJudge.requests)
    # the prompt carries the trajectory's tool calls and the item's expectations
    assert "get_weather" in prompt and "divide" in prompt and "tool_order" in prompt

    r = api.post("/evaluations", json={"dataset": name, "evaluators": [
        {"name": "llm_judge", "config": {"temperature": 1}}]})
    assert r.status_code == 400 and "unknown option 'temperature'" in r.text
    api.close()
