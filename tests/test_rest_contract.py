"""The REST API's contract: every body described in /openapi.json, offline docs, the packaged
trajectory schema, the project list, the trajectory summary's context fields and filters, and
the dry-run normalizer going through ingest's validation."""

from __future__ import annotations

import importlib
import pkgutil
import re
import time
from importlib import resources
from pathlib import Path
from typing import Any

import httpx
import jsonschema
import orjson
import pytest
from pydantic import BaseModel

import trajhub.records
import trajhub.service.api
from tests.harness import ServerProcess, final_trajectory, get_json
from tests.otlp_builders import PB, new_span_id, new_trace_id, request, span

PACKAGED_SCHEMA = resources.files("trajhub.normalizers").joinpath("trajectory.schema.json")


@pytest.fixture(scope="module")
def openapi(server: ServerProcess) -> dict[str, Any]:
    doc: dict[str, Any] = httpx.get(f"{server.http}/openapi.json", timeout=30).json()
    return doc


def _resolve(doc: dict[str, Any], schema: dict[str, Any]) -> dict[str, Any]:
    while "$ref" in schema:
        schema = doc["components"]["schemas"][schema["$ref"].rsplit("/", 1)[1]]
    return schema


def test_every_success_response_has_a_described_body(openapi: dict[str, Any]) -> None:
    undescribed = []
    for path, operations in openapi["paths"].items():
        for method, op in operations.items():
            for code, response in op["responses"].items():
                if not code.startswith("2") or code == "204":
                    continue
                content = response.get("content") or {}
                schemas = [c.get("schema") for c in content.values()]
                if not schemas or any(not s for s in schemas):
                    undescribed.append(f"{method} {path} {code}")
    assert undescribed == []


def test_every_json_success_body_has_an_example(openapi: dict[str, Any]) -> None:
    missing = []
    for path, operations in openapi["paths"].items():
        for method, op in operations.items():
            for code, response in op["responses"].items():
                schema = (response.get("content") or {}).get("application/json", {}).get(
                    "schema")
                if not code.startswith("2") or not schema:
                    continue
                schema = _resolve(openapi, schema)
                members = [_resolve(openapi, m) for m in schema.get("anyOf", [schema])]
                if not all("examples" in m or "example" in m for m in members):
                    missing.append(f"{method} {path} {code}")
    assert missing == []


def _api_models() -> dict[str, type[BaseModel]]:
    """Every pydantic model the API modules and the declarations (trajhub.records) define, by
    class name (the OpenAPI component name)."""
    found: list[dict[str, type[BaseModel]]] = []
    for package in (trajhub.records, trajhub.service.api):
        models: dict[str, type[BaseModel]] = {}
        for info in pkgutil.iter_modules(package.__path__):
            _add_models(importlib.import_module(f"{package.__name__}.{info.name}"), models)
        found.append(models)
    # an API subclass of a declaration (same name, its own example) is the component
    return {**found[0], **found[1]}


def _add_models(module: Any, models: dict[str, type[BaseModel]]) -> None:
    for value in vars(module).values():
        if isinstance(value, type) and issubclass(value, BaseModel) \
                and value.__module__ == module.__name__:
            assert models.setdefault(value.__name__, value) is value, value.__name__


def test_every_example_validates_against_its_model(openapi: dict[str, Any]) -> None:
    models = _api_models()
    checked = []
    for name, schema in openapi["components"]["schemas"].items():
        examples = schema.get("examples") or ([schema["example"]] if "example" in schema else [])
        if not examples:
            continue
        # a model used both as a body and a response appears as Name-Input and Name-Output
        model = models[name.removesuffix("-Input").removesuffix("-Output")]
        for example in examples:
            model.model_validate(example)
        checked.append(name)
    for name in ("ComparisonView", "RunCostView", "RunContract", "ToolResults",
                 "RegressionReport", "Revisions", "ItemDraft"):
        assert name in checked


def test_the_document_is_the_same_on_every_read(server: ServerProcess,
                                                openapi: dict[str, Any]) -> None:
    """/openapi.json is post-processed on every read; reading it again changes nothing (it
    once added another optional security requirement each time)."""
    again = httpx.get(f"{server.http}/openapi.json", timeout=30).json()
    assert again == openapi
    with_empty = [op["security"] for ops in openapi["paths"].values() for op in ops.values()
                  if {} in op.get("security", [])]
    assert with_empty and all(s.count({}) == 1 for s in with_empty)


def test_every_bound_is_stated_in_json_schema_words(openapi: dict[str, Any]) -> None:
    """A bound pydantic could not place (e.g. on a union) lands under its own name (`ge`,
    `le`, ...), which no JSON Schema reader understands: every bound is `minimum`, `maximum`,
    `exclusiveMinimum`, `exclusiveMaximum`, `minLength` or `maxLength`."""
    found: list[str] = []

    def walk(node: Any, path: str) -> None:
        if isinstance(node, dict):
            for key, value in node.items():
                if key in ("ge", "le", "gt", "lt", "min_length", "max_length", "multiple_of"):
                    found.append(f"{path}/{key}")
                walk(value, f"{path}/{key}")
        elif isinstance(node, list):
            for i, value in enumerate(node):
                walk(value, f"{path}/{i}")

    walk(openapi, "")
    assert found == []


def test_every_api_route_documents_its_bad_parameter_answer(openapi: dict[str, Any]) -> None:
    for path, operations in openapi["paths"].items():
        if path.startswith("/api/v1/") and path != "/api/v1/schema/trajectory":
            for method, op in operations.items():
                assert "400" in op["responses"], f"{method} {path}"


@pytest.mark.parametrize("page", ["/docs", "/redoc"])
def test_docs_load_without_network(server: ServerProcess, page: str) -> None:
    with httpx.Client(base_url=server.http) as c:
        html = c.get(page)
        assert html.status_code == 200 and "text/html" in html.headers["content-type"]
        assert "//" not in re.sub(r"<!--.*?-->", "", html.text, flags=re.S).replace(
            "/openapi.json", ""), "the page names an external host"
        assets = re.findall(r"""(?:src|href)=["']([^"']+)["']""", html.text)
        assert assets and all(a.startswith("/") for a in assets)
        for asset in assets:
            r = c.get(asset)
            assert r.status_code == 200 and len(r.content) > 1000, asset


def test_trajectory_schema_is_served_from_the_package(server: ServerProcess) -> None:
    r = httpx.get(f"{server.http}/api/v1/schema/trajectory")
    assert r.status_code == 200
    served = orjson.loads(r.content)
    assert served == orjson.loads(PACKAGED_SCHEMA.read_bytes())
    jsonschema.Draft7Validator.check_schema(served)
    example = orjson.loads((Path(__file__).parent / "fixtures" / "spec" /
                            "trajectory.example.json").read_bytes())
    jsonschema.validate(example, served)


def _send(c: httpx.Client, server: ServerProcess, project: str, spans: list[Any],
          service: str = "test-service") -> None:
    r = c.post(f"{server.http}/v1/traces",
               content=request(spans, service=service).SerializeToString(),
               headers={**PB, "trajhub-project": project})
    assert r.status_code == 200, r.text


def _run(tid: bytes, root: bytes, t0: int, agent: str, tool: str,
         attributes: dict[str, Any]) -> list[Any]:
    return [
        span(tid, agent, span_id=root, start=t0, duration=5_000_000,
             attributes={"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": agent,
                         "gen_ai.input.messages": "what is  the\nweather " + "x" * 400,
                         **attributes}),
        span(tid, f"execute_tool {tool}", parent=root, start=t0 + 1000,
             attributes={"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": tool}),
    ]


def test_summary_context_filters_and_count(server: ServerProcess, project: str) -> None:
    t0 = 1_700_000_000_000_000_000
    first, second, third = new_trace_id(), new_trace_id(), new_trace_id()
    with httpx.Client() as c:
        _send(c, server, project, _run(first, new_span_id(), t0, "Planner", "Search",
                                       {"session.id": "s-1", "user.id": "u-1"}),
              service="svc-a")
        _send(c, server, project, _run(second, new_span_id(), t0 + 10**9, "Planner", "Lookup",
                                       {"gen_ai.session.id": "s-2", "gen_ai.user.id": "u-2"}),
              service="svc-b")
        _send(c, server, project, _run(third, new_span_id(), t0 + 2 * 10**9, "Writer",
                                       "Search", {}),
              service="svc-a")
        for tid in (first, second, third):
            final_trajectory(c, server.http, project, tid.hex())

        def ids(**params: Any) -> list[str]:
            return [i["trace_id"] for i in get_json(
                c, f"{server.http}/api/v1/trajectories", project=project, **params)["items"]]

        assert ids(service="svc-a") == [third.hex(), first.hex()]
        assert ids(session_id="s-2") == [second.hex()]
        assert ids(user_id="u-1") == [first.hex()]
        assert ids(user_id="u-3") == []
        assert ids(agent="planner") == [second.hex(), first.hex()]
        assert ids(tool="search", agent="WRITER") == [third.hex()]

        page = get_json(c, f"{server.http}/api/v1/trajectories", project=project, limit=1,
                        count="true", service="svc-a")
        assert page["total"] == 2 and len(page["items"]) == 1
        assert "total" not in get_json(c, f"{server.http}/api/v1/trajectories",
                                       project=project)

        item = get_json(c, f"{server.http}/api/v1/trajectories", project=project,
                        session_id="s-1")["items"][0]
        assert (item["service"], item["session_id"], item["user_id"]) == ("svc-a", "s-1", "u-1")
        preview = item["input_preview"]
        assert preview.startswith("what is the weather x") and len(preview) <= 200
        anonymous = get_json(c, f"{server.http}/api/v1/trajectories", project=project,
                             agent="writer")["items"][0]
        assert anonymous["session_id"] is None and anonymous["user_id"] is None


def test_projects_lists_counts_and_times(server: ServerProcess, project: str) -> None:
    other = project + "-b"
    t0 = 1_700_000_000_000_000_000
    with httpx.Client() as c:
        tids = []
        for i in range(2):
            tid, root = new_trace_id(), new_span_id()
            tids.append(tid)
            _send(c, server, project, [
                span(tid, "agent", span_id=root, start=t0 + i * 10**9, duration=3_000_000),
                span(tid, "chat", parent=root, start=t0 + i * 10**9 + 1000),
                span(tid, "tool", parent=root, start=t0 + i * 10**9 + 2000)])
        lone = new_trace_id()
        _send(c, server, other, [span(lone, "agent", start=t0, duration=1000)])
        for tid in tids:
            final_trajectory(c, server.http, project, tid.hex())
        final_trajectory(c, server.http, other, lone.hex())

        listed = {p["name"]: p for p in get_json(c, f"{server.http}/api/v1/projects")[
            "items"]}
        assert listed[project] == {
            "name": project, "trace_count": 2, "span_count": 6,
            "first_span_time": "2023-11-14T22:13:20Z",
            "last_span_time": "2023-11-14T22:13:21.003000Z",
            # the deprecated aliases, the same moments for one version
            "first_span_at": "2023-11-14T22:13:20Z",
            "last_span_at": "2023-11-14T22:13:21.003000Z"}
        assert listed[other]["trace_count"] == 1 and listed[other]["span_count"] == 1


def test_normalize_goes_through_ingest_validation(server: ServerProcess) -> None:
    good, root = new_trace_id(), new_span_id()
    spans = [span(good, "agent", span_id=root, duration=1000,
                  attributes={"gen_ai.operation.name": "invoke_agent"}),
             span(bytes(16), "zero trace id")]
    with httpx.Client() as c:
        r = c.post(f"{server.http}/api/v1/normalize",
                   content=request(spans).SerializeToString(), headers=PB)
        assert r.status_code == 200, r.text
        body = r.json()
        assert body["rejected_spans"] == 1 and "invalid trace_id" in body["error_message"]
        assert [t["trace_id"] for t in body["traces"]] == [good.hex()]
        only_bad = request([span(bytes(16), "zero")]).SerializeToString()
        r = c.post(f"{server.http}/api/v1/normalize", content=only_bad, headers=PB)
        assert r.status_code == 400 and "invalid trace_id" in r.json()["detail"]
        # nothing was stored
        time.sleep(0.2)
        assert c.get(f"{server.http}/api/v1/traces/{good.hex()}").status_code == 404


def test_no_route_is_hidden_behind_an_earlier_one() -> None:
    """Whatever order the modules are listed in, a literal path is matched before a parameter
    path that also fits it (`/trajectories/compare` before `/trajectories/{trace_id}`): no
    route's own path is taken by an earlier route with one of its methods."""
    from fastapi.routing import APIRoute

    from trajhub.service.api import routes

    def hidden(order: list[Any]) -> list[str]:
        api = [r for r in order if isinstance(r, APIRoute)]
        return [f"{sorted(later.methods)} {later.path} behind {earlier.path}"
                for i, later in enumerate(api) for earlier in api[:i]
                if earlier.path_regex.match(later.path) and earlier.path != later.path
                and earlier.methods & later.methods]

    modules = list(routes._MODULES)
    assert hidden(routes.ordered_routes(modules)) == []
    assert hidden(routes.ordered_routes(modules[::-1])) == []
    # the check itself sees a hidden route when the routes are not ordered
    assert hidden([r for m in modules for r in m.router.routes])


def test_the_routes_name_the_documented_operations() -> None:
    """The path table behind 405's `Allow` is read from the routes, not from /openapi.json (too
    slow to build at every server start): both list the same operations."""
    from trajhub.service.api.request_checks import documented_operations
    from trajhub.service.app import create_app
    from trajhub.service.config import Settings
    from trajhub.service.runtime import Runtime

    app = create_app(Runtime(Settings(), None, None))
    documented = {template: frozenset(m.upper() for m in operations)
                  for template, operations in app.openapi()["paths"].items()}
    assert documented_operations(app.routes) == documented
