"""API keys against a real server with TRAJHUB_AUTH=on: every REST route (enumerated from
/openapi.json, so a new route is covered without touching this file) and every ingest transport
(OTLP/HTTP protobuf and JSON, gRPC, Coze Loop native ingest, Coze Loop's OTLP path, Coze Loop
upload) answer a missing, revoked or foreign key and too small a scope with the right status,
and nothing is read or written across projects. /metrics takes only a `metrics` key (or the
bootstrap key) unless TRAJHUB_METRICS_PUBLIC opens it; with auth off, the REST key routes refuse
to make, list or revoke keys, and the CLI makes them."""

from __future__ import annotations

import asyncio
import base64
import hashlib
import json
import os
import subprocess
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import asyncpg
import grpc
import httpx
import pytest
from google.protobuf import json_format
from google.rpc import status_pb2
from opentelemetry.proto.collector.trace.v1 import trace_service_pb2_grpc
from prometheus_client.parser import text_string_to_metric_families

from tests.cli_runner import run_cli
from tests.harness import ServerProcess, TestDatabase, wait_for
from tests.otlp_builders import PB, request, span
from tests.test_cozeloop_ingest import native_span

#: what only the admin scope may do (README, "API keys"): keys, re-derivation, deletes
ADMIN_ONLY = {("post", "/api/v1/trajectories/rederive"), ("get", "/api/v1/keys"),
              ("post", "/api/v1/keys"),
              # a shorter retention deletes data
              ("put", "/api/v1/retention"),
              # a config decides which scores every other key may write
              ("put", "/api/v1/score-configs/{name}"),
              # a rule writes scores on every new trajectory, and may call a paid judge
              ("post", "/api/v1/rules"), ("patch", "/api/v1/rules/{rule_id}"),
              ("post", "/api/v1/rules/{rule_id}/backfills"),
              # a queue decides what reviewers must score
              ("post", "/api/v1/review-queues"),
              # an alert rule sends the project's figures to the address it names
              ("post", "/api/v1/alerts"), ("patch", "/api/v1/alerts/{alert_id}")}

#: routes that write spans, as OTLP does: the ingest scope (an admin key has it too)
INGEST_ROUTES = {("post", "/api/v1/trajectories/import/atif")}

#: routes that stay open with auth on
OPEN = ["/healthz", "/readyz", "/", "/ui/js/api.js", "/docs", "/redoc", "/openapi.json"]


@dataclass
class World:
    server: ServerProcess
    bootstrap: str
    project: str  # project A: holds the data no other key may see
    other: str  # project B
    ingest: str  # keys of A
    read: str
    admin: str
    revoked: str  # a revoked admin key of A
    other_admin: str  # keys of B
    other_ingest: str
    marker: str  # a text only A's data holds
    trace_id: str
    span_id: str
    dataset: str
    item_id: str
    file_key: str

    @property
    def http(self) -> str:
        return self.server.http


def bearer(key: str | None) -> dict[str, str]:
    return {"authorization": f"Bearer {key}"} if key else {}


def create_key(c: httpx.Client, base: str, admin: str, project: str, scope: str) -> str:
    r = c.post(f"{base}/api/v1/keys", params={"project": project}, headers=bearer(admin),
               json={"scope": scope, "name": f"test {scope}"})
    assert r.status_code == 201, r.text
    doc = r.json()
    assert doc["project"] == project and doc["scope"] == scope and doc["revoked_time"] is None
    assert doc["created_time"] == doc["created_at"]  # the deprecated alias, the same moment
    assert doc["key"].startswith("thk_" + doc["key_id"] + "_")
    return str(doc["key"])


@pytest.fixture(scope="module")
def world(database: TestDatabase, tmp_path_factory: pytest.TempPathFactory) -> Iterator[World]:
    bootstrap = "boot-" + uuid.uuid4().hex
    server = ServerProcess.start(database.url, tmp_path_factory.mktemp("secured"),
                                 settle_seconds=0.3,
                                 extra_env={"TRAJHUB_AUTH": "on",
                                            "TRAJHUB_BOOTSTRAP_KEY": bootstrap})
    suffix = uuid.uuid4().hex[:10]
    project, other = f"keys-a-{suffix}", f"keys-b-{suffix}"
    marker = f"m4rk3r-{uuid.uuid4().hex}"
    try:
        with httpx.Client(timeout=30) as c:
            base = server.http
            keys = {scope: create_key(c, base, bootstrap, project, scope)
                    for scope in ("ingest", "read", "admin")}
            revoked = create_key(c, base, bootstrap, project, "admin")
            revoked_id = revoked.split("_")[1]
            r = c.delete(f"{base}/api/v1/keys/{revoked_id}", headers=bearer(keys["admin"]))
            assert r.status_code == 200 and r.json()["revoked_time"], r.text
            other_admin = create_key(c, base, bootstrap, other, "admin")
            other_ingest = create_key(c, base, bootstrap, other, "ingest")

            # A's data, written with A's ingest key and no project header: the key decides
            tid, sid = os.urandom(16), os.urandom(8)
            body = request([span(tid, name=marker, span_id=sid)]).SerializeToString()
            r = c.post(f"{base}/v1/traces", content=body, headers={
                "content-type": "application/x-protobuf", **bearer(keys["ingest"])})
            assert r.status_code == 200, r.text
            file_key = f"f-{suffix}"
            r = c.post(f"{base}/v1/loop/files/upload", headers=bearer(keys["ingest"]),
                       files={"file": (file_key, marker.encode())})
            assert r.json() == {"code": 0, "msg": ""}
            # reading and creating datasets is the read key's work
            dataset = f"ds-{suffix}"
            r = c.post(f"{base}/api/v1/datasets", headers=bearer(keys["read"]),
                       json={"name": dataset, "description": marker})
            assert r.status_code == 201, r.text
            r = c.post(f"{base}/api/v1/datasets/{dataset}/items", headers=bearer(keys["read"]),
                       json={"input": marker})
            assert r.status_code == 201, r.text
            item_id = str(r.json()["id"])
            wait_for(lambda: c.get(f"{base}/api/v1/trajectories/{tid.hex()}",
                                   headers=bearer(keys["read"])).status_code == 200 or None,
                     what="A's trajectory")
        yield World(server, bootstrap, project, other, keys["ingest"], keys["read"],
                    keys["admin"], revoked, other_admin, other_ingest, marker, tid.hex(),
                    sid.hex(), dataset, item_id, file_key)
    finally:
        server.stop()


# ------------------------------------------------------------------------------------ REST


def operations(world: World) -> list[tuple[str, str]]:
    """(method, path template) of every REST operation the server documents."""
    doc = httpx.get(f"{world.http}/openapi.json", timeout=30).json()
    found = [(method, path) for path, ops in doc["paths"].items() for method in ops
             if path.startswith("/api/")]
    assert len(found) > 25  # the whole API, not a stub
    return found


def fill(world: World, path: str, existing: bool = True) -> str:
    """The path with A's objects in it (or names nothing has, when not `existing`)."""
    values = {"trace_id": world.trace_id, "span_id": world.span_id, "key": world.file_key,
              "name": world.dataset, "item_id": world.item_id, "evaluation_id": "1",
              "key_id": "000000000000", "score_id": "1", "session_id": "no-such-session",
              "rule_id": "1", "backfill_id": "1", "alert_id": "1"}
    if not existing:
        values.update(name="no-such-set", item_id="999999999", key="no-such-file",
                      score_id="999999999", rule_id="999999999", backfill_id="999999999",
                      alert_id="999999999")
    for name, value in values.items():
        path = path.replace("{" + name + "}", value).replace("{" + name + ":path}", value)
    assert "{" not in path, f"no value for a parameter of {path}: add one to fill()"
    return path


def call(c: httpx.Client, world: World, method: str, path: str, key: str | None,
         **params: str) -> httpx.Response:
    body = {} if method in ("post", "patch", "put") else None
    return c.request(method.upper(), world.http + path, headers=bearer(key), json=body,
                     params=params)


def test_every_rest_route_refuses_missing_invalid_and_revoked_keys(world: World) -> None:
    wrong = [("no key", None, "API key is required"),
             ("revoked", world.revoked, "revoked"),
             ("never issued", "thk_0123456789ab_" + "x" * 43, "not valid"),
             ("not a key", "hunter2", "not valid")]
    with httpx.Client(timeout=30) as c:
        for method, template in operations(world):
            path = fill(world, template)
            for what, key, says in wrong:
                r = call(c, world, method, path, key)
                assert r.status_code == 401, (method, path, what, r.text)
                assert says in r.json()["detail"], (method, path, what, r.text)
                assert r.headers["www-authenticate"] == "Bearer"
                assert world.marker not in r.text
            # a scheme other than Bearer names the problem too
            r = c.request(method.upper(), world.http + path,
                          headers={"authorization": f"Basic {world.read}"})
            assert r.status_code == 401 and "Bearer" in r.json()["detail"], (method, path)


def test_every_rest_route_refuses_a_key_of_another_project(world: World) -> None:
    with httpx.Client(timeout=30) as c:
        for method, template in operations(world):
            path = fill(world, template)
            # naming A explicitly, by parameter or header: 403 naming both projects
            r = call(c, world, method, path, world.other_admin, project=world.project)
            assert r.status_code == 403, (method, path, r.text)
            assert world.project in r.json()["detail"] and world.other in r.json()["detail"]
            r = c.request(method.upper(), world.http + path,
                          headers={**bearer(world.other_admin), "trajhub-project": world.project},
                          json={} if method in ("post", "patch") else None)
            assert r.status_code == 403, (method, path, r.text)
            # naming nothing: the request works in B, where none of A's objects are
            r = call(c, world, method, path, world.other_admin)
            assert r.status_code < 500, (method, path, r.text)
            assert world.marker not in r.text and world.project not in r.text, (method, path)
    assert_a_intact(world)


def test_every_rest_route_refuses_too_small_a_scope(world: World) -> None:
    with httpx.Client(timeout=30) as c:
        for method, template in operations(world):
            path = fill(world, template)
            if (method, template) in INGEST_ROUTES:
                # the ingest key passes the door, a read key does not
                r = call(c, world, method, path, world.ingest)
                assert r.status_code not in (401, 403), (method, path, r.text)
                r = call(c, world, method, path, world.read)
                assert r.status_code == 403, (method, path, r.text)
                assert "needs 'ingest'" in r.json()["detail"], r.text
                r = call(c, world, method, path, world.admin)
                assert r.status_code not in (401, 403), (method, path, r.text)
                continue
            # an ingest key reads nothing
            r = call(c, world, method, path, world.ingest)
            assert r.status_code == 403, (method, path, r.text)
            assert "'ingest'" in r.json()["detail"], r.text
            admin_only = method == "delete" or (method, template) in ADMIN_ONLY
            r = call(c, world, method, fill(world, template, existing=False), world.read)
            if admin_only:
                assert r.status_code == 403, (method, path, r.text)
                assert "needs 'admin'" in r.json()["detail"], r.text
            else:  # the read key passes the door (what the route answers is its own business)
                assert r.status_code not in (401, 403), (method, path, r.text)
            # an admin key passes every door; deletes aim at objects that do not exist
            r = call(c, world, method, fill(world, template, existing=False), world.admin)
            assert r.status_code not in (401, 403), (method, path, r.text)
    assert_a_intact(world)


def test_openapi_declares_the_scope_of_every_operation(world: World) -> None:
    doc = httpx.get(f"{world.http}/openapi.json", timeout=30).json()
    assert doc["components"]["securitySchemes"]["HTTPBearer"]["scheme"] == "bearer"
    for path, ops in doc["paths"].items():
        if not path.startswith("/api/"):
            continue
        for method, op in ops.items():
            expected = ("ingest" if (method, path) in INGEST_ROUTES else
                        "admin" if method == "delete" or (method, path) in ADMIN_ONLY else "read")
            assert op["x-trajhub-scope"] == expected, (method, path)
            assert {"HTTPBearer": []} in op["security"], (method, path)


def test_the_read_key_reads_its_project_without_naming_it(world: World) -> None:
    with httpx.Client(timeout=30, headers=bearer(world.read)) as c:
        traj = c.get(f"{world.http}/api/v1/trajectories/{world.trace_id}")
        assert traj.status_code == 200 and world.marker in traj.text
        projects = c.get(f"{world.http}/api/v1/projects").json()["items"]
        assert [p["name"] for p in projects] == [world.project]
        # naming its own project is fine too
        r = c.get(f"{world.http}/api/v1/datasets", params={"project": world.project})
        assert r.status_code == 200 and world.dataset in r.text
    with httpx.Client(timeout=30, headers=bearer(world.other_admin)) as c:
        projects = c.get(f"{world.http}/api/v1/projects").json()["items"]
        assert world.project not in [p["name"] for p in projects]


def test_open_routes_stay_open(world: World) -> None:
    with httpx.Client(timeout=30) as c:
        for path in OPEN:
            assert c.get(world.http + path).status_code == 200, path


def assert_a_intact(world: World) -> None:
    """A's objects are all still there, unchanged, and no key of B wrote into A."""
    with httpx.Client(timeout=30, headers=bearer(world.bootstrap),
                      params={"project": world.project}) as c:
        sets = c.get(f"{world.http}/api/v1/datasets").json()
        assert [s["name"] for s in sets["items"]] == [world.dataset], sets
        assert sets["items"][0]["description"] == world.marker
        items = c.get(f"{world.http}/api/v1/datasets/{world.dataset}/items").json()["items"]
        assert [(str(i["id"]), i["input"]) for i in items] == [(world.item_id, world.marker)]
        traces = c.get(f"{world.http}/api/v1/traces").json()["items"]
        assert world.trace_id in [t["trace_id"] for t in traces]
        assert c.get(f"{world.http}/api/v1/files/{world.file_key}").content == world.marker.encode()
        keys = c.get(f"{world.http}/api/v1/keys").json()["items"]
        assert sorted(k["scope"] for k in keys) == ["admin", "admin", "ingest", "read"]
        assert sum(k["revoked_time"] is not None for k in keys) == 1
        assert c.get(f"{world.http}/api/v1/evaluations").json()["items"] == []


# ---------------------------------------------------------------------------------- ingest


@dataclass
class Answer:
    status: int  # the HTTP status, or the gRPC code as the status it maps to
    message: str


def otlp_json(req: Any) -> bytes:
    """OTLP/JSON: protobuf's JSON mapping, with trace and span ids as hex (docs/otlp.md A2)."""
    doc = json_format.MessageToDict(req)
    for resource_spans in doc["resourceSpans"]:
        for scope_spans in resource_spans["scopeSpans"]:
            for item in scope_spans["spans"]:
                for name in ("traceId", "spanId"):
                    item[name] = base64.b64decode(item[name]).hex()
    return json.dumps(doc).encode()


def otlp_http(path: str, json_body: bool) -> Callable[..., Answer]:
    def send(world: World, key: str | None, trace_id: bytes, header: str | None,
             resource_project: str | None) -> Answer:
        req = request([span(trace_id)],
                      resource={"trajhub.project": resource_project} if resource_project else {})
        headers = {**bearer(key), **({"trajhub-project": header} if header else {})}
        if json_body:
            headers["content-type"] = "application/json"
            content = otlp_json(req)
        else:
            headers["content-type"] = "application/x-protobuf"
            content = req.SerializeToString()
        r = httpx.post(world.http + path, content=content, headers=headers, timeout=30)
        if r.status_code == 200:
            return Answer(200, "")
        # the error keeps the request's encoding: a google.rpc.Status
        status = status_pb2.Status()
        if json_body:
            assert r.headers["content-type"] == "application/json"
            json_format.Parse(r.content, status)
        else:
            assert r.headers["content-type"] == "application/x-protobuf"
            status.ParseFromString(r.content)
        expected = {401: 16, 403: 7}.get(r.status_code)
        assert status.code == expected, (r.status_code, status)
        return Answer(r.status_code, status.message)
    return send


def otlp_grpc(world: World, key: str | None, trace_id: bytes, header: str | None,
              resource_project: str | None) -> Answer:
    req = request([span(trace_id)],
                  resource={"trajhub.project": resource_project} if resource_project else {})
    metadata = []
    if key:
        metadata.append(("authorization", f"Bearer {key}"))
    if header:
        metadata.append(("trajhub-project", header))
    with grpc.insecure_channel(world.server.grpc) as channel:
        stub = trace_service_pb2_grpc.TraceServiceStub(channel)
        try:
            stub.Export(req, metadata=metadata, timeout=30)
        except grpc.RpcError as error:
            codes = {grpc.StatusCode.UNAUTHENTICATED: 401,
                     grpc.StatusCode.PERMISSION_DENIED: 403}
            return Answer(codes.get(error.code(), 500), str(error.details()))
    return Answer(200, "")


def cozeloop_ingest(world: World, key: str | None, trace_id: bytes, header: str | None,
                    resource_project: str | None) -> Answer:
    extra = {"workspace_id": resource_project} if resource_project else {}
    headers = {**bearer(key), **({"cozeloop-workspace-id": header} if header else {})}
    r = httpx.post(f"{world.http}/v1/loop/traces/ingest", headers=headers, timeout=30,
                   json={"spans": [native_span(trace_id.hex(), **extra)]})
    reply = r.json()
    assert (reply["code"] == 0) == (r.status_code == 200), reply
    return Answer(r.status_code, reply["msg"])


def cozeloop_upload(world: World, key: str | None, trace_id: bytes, header: str | None,
                    resource_project: str | None) -> Answer:
    data = {"workspace_id": resource_project} if resource_project else {}
    headers = {**bearer(key), **({"cozeloop-workspace-id": header} if header else {})}
    r = httpx.post(f"{world.http}/v1/loop/files/upload", headers=headers, data=data,
                   files={"file": (f"up-{trace_id.hex()}", b"content")}, timeout=30)
    reply = r.json()
    assert (reply["code"] == 0) == (r.status_code == 200), reply
    return Answer(r.status_code, reply["msg"])


TRANSPORTS: dict[str, Callable[..., Answer]] = {
    "otlp-http-protobuf": otlp_http("/v1/traces", json_body=False),
    "otlp-http-json": otlp_http("/v1/traces", json_body=True),
    "cozeloop-otlp": otlp_http("/v1/loop/opentelemetry/v1/traces", json_body=False),
    "otlp-grpc": otlp_grpc,
    "cozeloop-ingest": cozeloop_ingest,
    "cozeloop-upload": cozeloop_upload,
}


def stored_in(world: World, project: str, transport: str, trace_id: bytes) -> bool:
    with httpx.Client(timeout=30, headers=bearer(world.bootstrap),
                      params={"project": project}) as c:
        if transport == "cozeloop-upload":
            return c.get(f"{world.http}/api/v1/files/up-{trace_id.hex()}").status_code == 200
        return c.get(f"{world.http}/api/v1/traces/{trace_id.hex()}").status_code == 200


@pytest.mark.parametrize("transport", list(TRANSPORTS))
def test_ingest_refuses_wrong_keys_and_stores_under_the_keys_project(world: World,
                                                                    transport: str) -> None:
    send = TRANSPORTS[transport]
    refused = [("no key", None, None, 401, "API key is required"),
               ("revoked", world.revoked, None, 401, "revoked"),
               ("never issued", "thk_0123456789ab_" + "y" * 43, None, 401, "not valid"),
               ("too small a scope", world.read, None, 403, "needs 'ingest'"),
               ("another project, named", world.other_ingest, world.project, 403,
                world.other)]
    written: list[bytes] = []
    for what, key, header, status, says in refused:
        trace_id = os.urandom(16)
        written.append(trace_id)
        answer = send(world, key, trace_id, header, None)
        assert answer.status == status, (transport, what, answer)
        assert says in answer.message, (transport, what, answer)
    # B's key with A in a resource attribute or span field: the key's project wins
    trace_id = os.urandom(16)
    answer = send(world, world.other_ingest, trace_id, None, world.project)
    if transport == "cozeloop-upload":  # workspace_id is the request's own project field
        assert answer.status == 403 and world.other in answer.message, answer
    else:
        assert answer.status == 200, answer
        assert wait_for(lambda: stored_in(world, world.other, transport, trace_id) or None,
                        what="stored under the key's project")
    written.append(trace_id)
    # A's ingest key, naming nothing: stored in A
    good = os.urandom(16)
    assert send(world, world.ingest, good, None, None).status == 200
    assert stored_in(world, world.project, transport, good)
    # an admin key may ingest too
    by_admin = os.urandom(16)
    assert send(world, world.admin, by_admin, world.project, None).status == 200
    assert stored_in(world, world.project, transport, by_admin)
    for trace_id in written:
        assert not stored_in(world, world.project, transport, trace_id), transport


@pytest.mark.parametrize("path", ["/v1/traces", "/v1/loop/opentelemetry/v1/traces",
                                  "/v1/loop/traces/ingest", "/v1/loop/files/upload"])
def test_ingest_honours_the_project_query_parameter_as_rest_does(world: World,
                                                                 path: str) -> None:
    """`?project=` on an ingest route is read as on a REST route: another project than the
    key's is a 403 and stores nothing; the key's own is stored there."""
    def send(project: str) -> tuple[httpx.Response, bytes]:
        trace_id = os.urandom(16)
        params = {"project": project}
        headers = bearer(world.other_ingest)
        if path == "/v1/loop/traces/ingest":
            r = httpx.post(world.http + path, params=params, headers=headers, timeout=30,
                           json={"spans": [native_span(trace_id.hex())]})
        elif path == "/v1/loop/files/upload":
            r = httpx.post(world.http + path, params=params, headers=headers, timeout=30,
                           files={"file": (f"up-{trace_id.hex()}", b"content")})
        else:
            r = httpx.post(world.http + path, params=params, timeout=30,
                           headers={**headers, **PB},
                           content=request([span(trace_id)]).SerializeToString())
        return r, trace_id

    transport = "cozeloop-upload" if path.endswith("upload") else "otlp-http-protobuf"
    refused, trace_id = send(world.project)
    assert refused.status_code == 403, refused.content
    assert world.other.encode() in refused.content
    assert not stored_in(world, world.project, transport, trace_id)
    taken, trace_id = send(world.other)
    assert taken.status_code == 200, taken.content
    assert wait_for(lambda: stored_in(world, world.other, transport, trace_id) or None,
                    what="stored under the named project, the key's")


def test_otel_sdk_exporters_send_the_key_from_the_environment(
        world: World, monkeypatch: pytest.MonkeyPatch) -> None:
    from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import (
        OTLPSpanExporter as GrpcExporter,
    )
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import (
        OTLPSpanExporter as HttpExporter,
    )
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor

    monkeypatch.setenv("OTEL_EXPORTER_OTLP_HEADERS", f"authorization=Bearer%20{world.ingest}")
    names = {}
    for name, exporter in [("grpc", GrpcExporter(endpoint=world.server.grpc, insecure=True)),
                           ("http", HttpExporter(endpoint=f"{world.http}/v1/traces"))]:
        provider = TracerProvider(resource=Resource.create({"service.name": "sdk"}))
        provider.add_span_processor(SimpleSpanProcessor(exporter))
        with provider.get_tracer("t").start_as_current_span(f"sdk-{name}") as current:
            names[name] = format(current.get_span_context().trace_id, "032x")
        provider.shutdown()
    with httpx.Client(timeout=30, headers=bearer(world.read)) as c:
        for name, trace_id in names.items():
            r = c.get(f"{world.http}/api/v1/traces/{trace_id}")
            assert r.status_code == 200 and f"sdk-{name}" in r.text, name


# ------------------------------------------------------------------------------ key storage


def run_db(url: str, query: str) -> list[asyncpg.Record]:
    async def fetch() -> list[asyncpg.Record]:
        conn = await asyncpg.connect(url)
        try:
            return await conn.fetch(query)
        finally:
            await conn.close()
    return asyncio.run(fetch())


def trajhub_cli(*args: str, database: TestDatabase) -> subprocess.CompletedProcess[str]:
    return run_cli(*args, "--database-url", database.url, keep_trajhub_env=True)


def test_cli_creates_lists_and_revokes_keys(world: World, database: TestDatabase) -> None:
    created = trajhub_cli("keys", "create", "--project", world.project, "--scope", "ingest",
                          "--name", "from the cli", database=database)
    assert created.returncode == 0, created.stderr
    key = created.stdout.strip()
    key_id = key.split("_")[1]
    assert "shown only now" in created.stderr and key not in created.stderr
    assert otlp_grpc(world, key, os.urandom(16), None, None).status == 200
    listed = trajhub_cli("keys", "list", "--project", world.project, database=database)
    assert listed.returncode == 0 and key_id in listed.stdout and "from the cli" in listed.stdout
    assert key not in listed.stdout
    revoked = trajhub_cli("keys", "revoke", key_id, "--project", world.project,
                          database=database)
    assert revoked.returncode == 0 and key_id in revoked.stdout, revoked.stderr
    as_json = {k["key_id"]: k for k in json.loads(trajhub_cli(
        "keys", "list", "--json", "--project", world.project, database=database).stdout)}
    assert as_json[key_id]["revoked_time"] is not None  # the API's names
    assert as_json[key_id]["created_at"] == as_json[key_id]["created_time"]
    answer = otlp_grpc(world, key, os.urandom(16), None, None)
    assert answer.status == 401 and "revoked" in answer.message
    unknown = trajhub_cli("keys", "revoke", "000000000000", database=database)
    assert unknown.returncode == 2 and "no API key" in unknown.stderr
    # the REST list shows the CLI's key as revoked; its admin key sees only its project
    with httpx.Client(timeout=30, headers=bearer(world.admin)) as c:
        keys = {k["key_id"]: k for k in c.get(f"{world.http}/api/v1/keys").json()["items"]}
        assert keys[key_id]["revoked_time"] is not None
        assert {k["project"] for k in keys.values()} == {world.project}
        assert "key" not in keys[key_id]
        # an admin key of A cannot revoke B's keys
        other_id = world.other_admin.split("_")[1]
        assert c.delete(f"{world.http}/api/v1/keys/{other_id}").status_code == 404


def test_keys_are_stored_hashed_and_never_logged(world: World, database: TestDatabase) -> None:
    rows = run_db(database.url, "SELECT key_id, digest, row_to_json(k)::text AS text "
                                "FROM api_keys k")
    stored = {r["key_id"]: r for r in rows}
    for key in (world.ingest, world.read, world.admin, world.revoked, world.other_admin):
        key_id, secret = key.split("_")[1], key.split("_", 2)[2]
        assert bytes(stored[key_id]["digest"]) == hashlib.sha256(key.encode()).digest()
        assert all(secret not in r["text"] for r in rows)
    log = world.server.log_path.read_text()
    assert "api_keys=required" in log
    for key in (world.ingest, world.read, world.admin, world.revoked, world.other_admin,
                world.other_ingest, world.bootstrap):
        assert key not in log


# ------------------------------------------------------------------------------- auth modes


def test_auto_is_off_on_loopback(server: ServerProcess) -> None:
    """The shared server listens on 127.0.0.1 with the default TRAJHUB_AUTH=auto."""
    assert httpx.get(f"{server.http}/api/v1/projects").status_code == 200
    r = httpx.post(f"{server.http}/v1/traces", content=request([span(os.urandom(16))])
                   .SerializeToString(), headers=PB)
    assert r.status_code == 200


def test_auto_is_on_beyond_loopback(database: TestDatabase, tmp_path: Path) -> None:
    wide = ServerProcess.start(database.url, tmp_path, extra_env={"TRAJHUB_HOST": "0.0.0.0"})
    try:
        r = httpx.get(f"{wide.http}/api/v1/projects")
        assert r.status_code == 401 and "API key" in r.json()["detail"]
        assert otlp_grpc_at(wide.grpc).status == 401
        assert httpx.get(f"{wide.http}/healthz").status_code == 200
    finally:
        wide.stop()


def otlp_grpc_at(target: str) -> Answer:
    with grpc.insecure_channel(target) as channel:
        try:
            trace_service_pb2_grpc.TraceServiceStub(channel).Export(
                request([span(os.urandom(16))]), timeout=30)
        except grpc.RpcError as error:
            return Answer(401 if error.code() == grpc.StatusCode.UNAUTHENTICATED else 500,
                          str(error.details()))
    return Answer(200, "")


def test_auth_setting_decides_per_listening_address() -> None:
    from trajhub.service.auth import auth_enabled
    from trajhub.service.config import Settings

    assert not auth_enabled(Settings(host="0.0.0.0", auth="off"))
    assert auth_enabled(Settings(host="127.0.0.1", auth="on"))
    for host, on in [("127.0.0.1", False), ("::1", False), ("localhost", False),
                     ("127.0.0.2", False), ("0.0.0.0", True), ("::", True),
                     ("10.1.2.3", True), ("trajhub.internal", True)]:
        assert auth_enabled(Settings(host=host)) is on, host


def test_client_and_cli_send_the_key(world: World) -> None:
    from trajhub.service.client.api import ApiError, TrajhubClient

    with TrajhubClient(world.http, api_key=world.read) as client:
        assert [p.name for p in client.list_projects()] == [world.project]
        assert client.get_trajectory(world.trace_id).trace_id == world.trace_id
    with TrajhubClient(world.http) as client, pytest.raises(ApiError) as refused:
        client.list_projects()
    assert refused.value.status == 401 and "API key" in refused.value.detail
    with TrajhubClient(world.http, project=world.project, api_key=world.other_admin) as client, \
            pytest.raises(ApiError) as foreign:
        client.list_datasets()
    assert foreign.value.status == 403
    cli = ["traces", "list", "--url", world.http]
    listed = run_cli(*cli, env={"TRAJHUB_API_KEY": world.read})
    assert listed.returncode == 0 and world.trace_id in listed.stdout, listed.stderr
    flagged = run_cli(*cli, "--api-key", world.other_admin)
    assert flagged.returncode == 0 and world.trace_id not in flagged.stdout, flagged.stderr
    bare = run_cli(*cli)
    assert bare.returncode == 2 and "API key is required" in bare.stderr and "401" in bare.stderr


def test_a_key_of_an_empty_project_learns_its_project(world: World) -> None:
    empty = f"keys-empty-{uuid.uuid4().hex[:8]}"
    with httpx.Client(timeout=30) as c:
        key = create_key(c, world.http, world.bootstrap, empty, "read")
        projects = c.get(f"{world.http}/api/v1/projects", headers=bearer(key)).json()
    only = [{"name": empty, "trace_count": 0, "span_count": 0, "first_span_time": None,
             "last_span_time": None, "first_span_at": None, "last_span_at": None}]
    # the old item key is still sent beside `items` (deprecated)
    assert projects == {"items": only, "next_cursor": None, "projects": only}


# ----------------------------------------------------------------------------------- metrics


def scrape_with(world: World, key: str | None) -> httpx.Response:
    return httpx.get(f"{world.http}/metrics", headers=bearer(key), timeout=30)


def metrics_key(world: World, project: str) -> str:
    """A `metrics` key, made by the bootstrap key (a project's admin key may not make one)."""
    with httpx.Client(timeout=30) as c:
        return create_key(c, world.http, world.bootstrap, project, "metrics")


def test_metrics_refuses_missing_bogus_and_revoked_keys(world: World) -> None:
    ops = f"keys-ops-{uuid.uuid4().hex[:8]}"
    revoked = metrics_key(world, ops)
    r = httpx.delete(f"{world.http}/api/v1/keys/{revoked.split('_')[1]}",
                     headers=bearer(world.bootstrap), params={"project": ops}, timeout=30)
    assert r.status_code == 200 and r.json()["revoked_time"], r.text
    assert r.json()["revoked_at"] == r.json()["revoked_time"]
    for what, key, says in [("no key", None, "API key is required"),
                            ("never issued", "thk_0123456789ab_" + "z" * 43, "not valid"),
                            ("not a key", "hunter2", "not valid"),
                            ("revoked metrics key", revoked, "revoked"),
                            ("revoked admin key", world.revoked, "revoked")]:
        r = scrape_with(world, key)
        assert r.status_code == 401, (what, r.text)
        assert says in r.json()["detail"], (what, r.text)
        assert r.headers["www-authenticate"] == "Bearer", what
        assert "trajhub_requests_total" not in r.text, what


def test_metrics_refuses_keys_of_other_scopes(world: World) -> None:
    # a project's admin key too: the figures count every project's traffic
    for what, key, scope in [("ingest", world.ingest, "ingest"), ("read", world.read, "read"),
                             ("admin", world.admin, "admin"),
                             ("another project's admin", world.other_admin, "admin"),
                             ("another project's ingest", world.other_ingest, "ingest")]:
        r = scrape_with(world, key)
        assert r.status_code == 403, (what, r.text)
        assert r.json()["detail"].endswith(f"has scope '{scope}'; this needs 'metrics'"), what
        assert "trajhub_requests_total" not in r.text, what


def test_metrics_answers_a_metrics_key_with_the_metrics_text(world: World) -> None:
    key = metrics_key(world, f"keys-ops-{uuid.uuid4().hex[:8]}")
    for what, scraper in [("metrics key", key), ("bootstrap key", world.bootstrap)]:
        r = scrape_with(world, scraper)
        assert r.status_code == 200, (what, r.text)
        assert r.headers["content-type"].startswith("text/plain"), what
        names = {family.name for family in text_string_to_metric_families(r.text)}
        assert {"trajhub_requests", "trajhub_spans_accepted",
                "trajhub_derivation_backlog"} <= names, (what, names)


def test_a_metrics_key_reads_and_writes_nothing(world: World) -> None:
    ops = f"keys-ops-{uuid.uuid4().hex[:8]}"
    key = metrics_key(world, ops)
    r = httpx.get(f"{world.http}/api/v1/traces", headers=bearer(key), timeout=30)
    assert r.status_code == 403 and "this needs 'read'" in r.json()["detail"], r.text
    answer = otlp_grpc(world, key, os.urandom(16), None, None)
    assert answer.status == 403 and "this needs 'ingest'" in answer.message, answer
    r = httpx.get(f"{world.http}/api/v1/keys", headers=bearer(key), timeout=30)
    assert r.status_code == 403 and "this needs 'admin'" in r.json()["detail"], r.text


def test_only_the_bootstrap_key_makes_a_metrics_key_over_rest(world: World) -> None:
    name = f"metrics by a project admin {uuid.uuid4().hex[:8]}"
    r = httpx.post(f"{world.http}/api/v1/keys", headers=bearer(world.admin),
                   json={"scope": "metrics", "name": name}, timeout=30)
    assert r.status_code == 403, r.text
    assert "'metrics'" in r.json()["detail"] and "TRAJHUB_BOOTSTRAP_KEY" in r.json()["detail"]
    listed = httpx.get(f"{world.http}/api/v1/keys", headers=bearer(world.admin), timeout=30)
    assert name not in listed.text and "metrics" not in [k["scope"] for k in
                                                         listed.json()["items"]]


def test_openapi_documents_who_may_scrape_metrics(world: World) -> None:
    op = httpx.get(f"{world.http}/openapi.json", timeout=30).json()["paths"]["/metrics"]["get"]
    assert op["x-trajhub-scope"] == "metrics"
    assert {"HTTPBearer": []} in op["security"]
    assert {"200", "401", "403"} <= op["responses"].keys()
    assert "TRAJHUB_METRICS_PUBLIC" in op["description"]
    assert "`metrics`" in op["responses"]["403"]["description"]


def test_metrics_public_serves_metrics_without_a_key_and_nothing_else(
        database: TestDatabase, tmp_path: Path) -> None:
    public = ServerProcess.start(database.url, tmp_path, extra_env={
        "TRAJHUB_AUTH": "on", "TRAJHUB_METRICS_PUBLIC": "true"})
    try:
        r = httpx.get(f"{public.http}/metrics", timeout=30)
        assert r.status_code == 200, r.text
        assert "trajhub_requests_in_flight" in r.text
        # the other routes still need a key
        r = httpx.get(f"{public.http}/api/v1/projects", timeout=30)
        assert r.status_code == 401 and "API key is required" in r.json()["detail"]
        assert otlp_grpc_at(public.grpc).status == 401
    finally:
        public.stop()


# ------------------------------------------------------------------- key management, auth off


def api_key_rows(database: TestDatabase, name: str) -> list[asyncpg.Record]:
    async def fetch() -> list[asyncpg.Record]:
        conn = await asyncpg.connect(database.url)
        try:
            return await conn.fetch("SELECT key_id, project, scope, digest, revoked_at "
                                    "FROM api_keys WHERE name = $1", name)
        finally:
            await conn.close()
    return asyncio.run(fetch())


def test_with_auth_off_the_cli_creates_a_key(server: ServerProcess,
                                             database: TestDatabase) -> None:
    """The shared server runs with auth off (auto on 127.0.0.1); `trajhub keys create` makes
    the first key on the database all the same."""
    name = f"first key {uuid.uuid4().hex[:8]}"
    created = trajhub_cli("keys", "create", "--project", "keys-first", "--scope", "admin",
                          "--name", name, database=database)
    assert created.returncode == 0, created.stderr
    key = created.stdout.strip()
    [row] = api_key_rows(database, name)
    assert key == f"thk_{row['key_id']}_{key.split('_', 2)[2]}"
    assert (row["project"], row["scope"], row["revoked_at"]) == ("keys-first", "admin", None)
    assert bytes(row["digest"]) == hashlib.sha256(key.encode()).digest()


def test_with_auth_off_rest_key_management_is_refused(server: ServerProcess,
                                                      database: TestDatabase) -> None:
    existing = f"existing {uuid.uuid4().hex[:8]}"
    made = trajhub_cli("keys", "create", "--project", "default", "--scope", "read", "--name",
                       existing, database=database)
    assert made.returncode == 0, made.stderr
    existing_id = made.stdout.strip().split("_")[1]
    name = f"made over rest {uuid.uuid4().hex[:8]}"
    with httpx.Client(timeout=30) as c:
        answers = {
            "create": c.post(f"{server.http}/api/v1/keys", json={"scope": "admin", "name": name}),
            "create in a project": c.post(f"{server.http}/api/v1/keys", params={"project": "p"},
                                          json={"scope": "ingest", "name": name}),
            "list": c.get(f"{server.http}/api/v1/keys"),
            "revoke": c.delete(f"{server.http}/api/v1/keys/{existing_id}"),
        }
    for what, r in answers.items():
        assert r.status_code == 403, (what, r.text)
        detail = r.json()["detail"]
        assert "auth on" in detail and "TRAJHUB_AUTH=on" in detail, (what, detail)
        assert "`trajhub keys create`" in detail, (what, detail)
        assert existing_id not in r.text, what
    assert api_key_rows(database, name) == []
    [row] = api_key_rows(database, existing)
    assert row["revoked_at"] is None


def test_openapi_lists_the_403_of_key_routes(server: ServerProcess) -> None:
    paths = httpx.get(f"{server.http}/openapi.json", timeout=30).json()["paths"]
    for method, path in [("post", "/api/v1/keys"), ("get", "/api/v1/keys"),
                         ("delete", "/api/v1/keys/{key_id}")]:
        forbidden = paths[path][method]["responses"]["403"]
        assert "auth off" in forbidden["description"], (method, path)
        assert "`trajhub keys create`" in forbidden["description"], (method, path)
        assert forbidden["content"]["application/json"]["schema"] == {
            "$ref": "#/components/schemas/ErrorDetail"}, (method, path)
