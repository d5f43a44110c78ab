"""The Coze Loop ingest endpoints: native spans, bad input, file upload, project resolution."""

from __future__ import annotations

import json
import os

import httpx

from tests.harness import ServerProcess, get_json, wait_for
from tests.otlp_builders import PB, new_trace_id, request, span


def native_span(trace_id: str, name: str = "chat", parent: str = "0", **extra: object
                ) -> dict[str, object]:
    return {"started_at_micros": 1_795_336_174_595_881, "log_id": "",
            "span_id": os.urandom(8).hex(),
            "parent_id": parent, "trace_id": trace_id, "duration_micros": 2500,
            "service_name": "svc", "workspace_id": "ws-1", "span_name": name,
            "span_type": "model", "status_code": 0, "input": "hi", "output": "hello",
            "object_storage": "", "system_tags_string": {}, "system_tags_long": {},
            "system_tags_double": {}, "tags_string": {"model_name": "gpt"},
            "tags_long": {"input_tokens": 3}, "tags_double": {"temperature": 0.5},
            "tags_bool": {"stream": True}, **extra}


def test_bad_spans_are_named_and_good_ones_stored(server: ServerProcess, project: str) -> None:
    tid = os.urandom(16).hex()
    good = native_span(tid)
    body = {"spans": [good, native_span("xyz"), native_span(tid, started_at_micros="soon")]}
    with httpx.Client() as c:
        r = c.post(f"{server.http}/v1/loop/traces/ingest", json=body,
                   headers={"trajhub-project": project})
        assert r.status_code == 200
        reply = r.json()
        assert reply["code"] == 0
        assert "rejected 2" in reply["msg"] and "trace_id" in reply["msg"]
        assert "started_at_micros" in reply["msg"]
        stored = get_json(c, f"{server.http}/api/v1/traces/{tid}", project=project,
                          format="cozeloop")["spans"]
        assert stored == [good]
        view = get_json(c, f"{server.http}/api/v1/traces/{tid}/spans/{good['span_id']}",
                        project=project)
        assert view["cozeloop"]["span_type"] == "model"
        assert view["attributes"] == {"model_name": "gpt", "input_tokens": 3,
                                      "temperature": 0.5, "stream": True}


def test_undecodable_body_gets_a_nonzero_code(server: ServerProcess) -> None:
    with httpx.Client() as c:
        r = c.post(f"{server.http}/v1/loop/traces/ingest", content=b"{oops",
                   headers={"content-type": "application/json"})
        assert r.status_code == 400
        assert r.json()["code"] != 0 and "JSON" in r.json()["msg"]
        r = c.post(f"{server.http}/v1/loop/traces/ingest", json={"span": []})
        assert r.status_code == 400 and '"spans"' in r.json()["msg"]


def test_workspace_id_names_the_project(server: ServerProcess, project: str) -> None:
    tid = os.urandom(16).hex()
    with httpx.Client() as c:
        r = c.post(f"{server.http}/v1/loop/traces/ingest",
                   json={"spans": [native_span(tid, workspace_id=project)]})
        assert r.json() == {"code": 0, "msg": ""}
        assert get_json(c, f"{server.http}/api/v1/traces/{tid}", project=project)
        # the header wins over the span's workspace_id
        tid2 = os.urandom(16).hex()
        c.post(f"{server.http}/v1/loop/traces/ingest", json={"spans": [native_span(tid2)]},
               headers={"cozeloop-workspace-id": project})
        assert get_json(c, f"{server.http}/api/v1/traces/{tid2}", project=project)


def test_resource_attribute_names_the_project_of_otlp_spans(server: ServerProcess,
                                                           project: str) -> None:
    tid = new_trace_id()
    body = request([span(tid)], resource={"trajhub.project": project}).SerializeToString()
    with httpx.Client() as c:
        r = c.post(f"{server.http}/v1/traces", content=body,
                   headers=PB)
        assert r.status_code == 200
        assert get_json(c, f"{server.http}/api/v1/traces/{tid.hex()}", project=project)
        assert c.get(f"{server.http}/api/v1/traces/{tid.hex()}").status_code == 404


def test_file_upload_resolves_the_object_storage_key(server: ServerProcess, project: str) -> None:
    key = f"{project}/input/{os.urandom(4).hex()}"
    content = b"x" * (1024 * 1024 + 10)
    with httpx.Client() as c:
        r = c.post(f"{server.http}/v1/loop/files/upload", data={"workspace_id": project},
                   files={"file": (key, content)})
        assert r.json() == {"code": 0, "msg": ""}
        tid = os.urandom(16).hex()
        storage = json.dumps({"input_tos_key": key, "attachments": []})
        c.post(f"{server.http}/v1/loop/traces/ingest",
               json={"spans": [native_span(tid, workspace_id=project, object_storage=storage)]})
        spans = get_json(c, f"{server.http}/api/v1/traces/{tid}", project=project,
                         view="flat")["spans"]
        ref = json.loads(spans[0]["cozeloop"]["object_storage"])["input_tos_key"]
        got = c.get(f"{server.http}/api/v1/files/{ref}", params={"project": project})
        assert got.status_code == 200 and got.content == content
        assert c.get(f"{server.http}/api/v1/files/nope",
                     params={"project": project}).status_code == 404


def test_native_trace_gets_listed(server: ServerProcess, project: str) -> None:
    tid = os.urandom(16).hex()
    with httpx.Client() as c:
        c.post(f"{server.http}/v1/loop/traces/ingest", json={"spans": [native_span(tid)]},
               headers={"trajhub-project": project})
        items = wait_for(lambda: get_json(c, f"{server.http}/api/v1/traces",
                                          project=project)["items"], what="listed")
        assert items[0]["trace_id"] == tid and items[0]["service_name"] == "svc"
