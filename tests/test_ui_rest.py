"""The REST endpoints the UI added: a trajectory's revision history (migrations 0010 and 0063)
and the dataset item a run would become."""

from __future__ import annotations

import re
from pathlib import Path

import asyncpg
import httpx

from tests import otlp_builders as b
from tests.captures import replay_run
from tests.harness import (
    ServerProcess,
    TestDatabase,
    final_trajectory,
    get_json,
    run,
    wait_for,
)

T0 = 1_700_000_000_000_000_000
MS = 1_000_000


def test_revisions_record_each_derivation_newest_first(server: ServerProcess, project: str,
                                                       database: TestDatabase) -> None:
    trace, root = b.new_trace_id(), b.new_span_id()
    b.post_spans(server.http, project, [
        b.span(trace, "invoke_agent helper", span_id=root, start=T0, duration=100 * MS,
               attributes={"gen_ai.operation.name": "invoke_agent",
                           "gen_ai.agent.name": "helper"}),
        b.span(trace, "chat m", parent=root, start=T0 + MS, duration=10 * MS,
               attributes={"gen_ai.operation.name": "chat", "gen_ai.request.model": "m",
                           "gen_ai.usage.input_tokens": 11, "gen_ai.usage.output_tokens": 2}),
    ])
    trace_id = trace.hex()
    url = f"{server.http}/api/v1/trajectories/{trace_id}/revisions"
    with httpx.Client() as client:
        final_trajectory(client, server.http, project, trace_id)
        first = get_json(client, url, project=project)["revisions"]
        assert [(r["revision"], r["status"], r["step_count"], r["input_tokens"],
                 r["output_tokens"]) for r in first] == [(1, "final", 1, 11, 2)]
        assert first[0]["derivation_error"] is None
        assert first[0]["derived_time"].endswith("Z")

        # a late span re-derives the trajectory: a second revision, the first kept as it was
        b.post_spans(server.http, project, [
            b.span(trace, "execute_tool lookup", parent=root, start=T0 + 20 * MS,
                   duration=5 * MS, error=True,
                   attributes={"gen_ai.operation.name": "execute_tool",
                               "gen_ai.tool.name": "lookup", "gen_ai.tool.call.id": "c1"}),
        ])

        def two_final() -> list | None:
            revisions = get_json(client, url, project=project)["revisions"]
            return revisions if revisions[0]["status"] == "final" and len(revisions) == 2 \
                else None

        revisions = wait_for(two_final, what="a second, final revision")
        assert [(r["revision"], r["status"], r["step_count"]) for r in revisions] == [
            (2, "final", 2), (1, "final", 1)]
    # the history table keeps the superseded revision only; the current one is the trajectory
    # row itself (migration 0063)
    stored = run(_fetch(database.url, "SELECT revision, status, step_count FROM "
                                      "trajectory_revisions WHERE project = $1 AND trace_id = $2",
                        project, trace_id))
    assert [tuple(r) for r in stored] == [(1, "final", 1)]


async def _fetch(url: str, sql: str, *args: object) -> list[asyncpg.Record]:
    conn = await asyncpg.connect(url)
    try:
        return list(await conn.fetch(sql, *args))
    finally:
        await conn.close()


def test_revisions_of_unknown_or_malformed_trace(server: ServerProcess, project: str) -> None:
    missing = httpx.get(f"{server.http}/api/v1/trajectories/{'ab' * 16}/revisions",
                        params={"project": project})
    assert missing.status_code == 404
    assert "no trajectory" in missing.json()["detail"]
    bad = httpx.get(f"{server.http}/api/v1/trajectories/xyz/revisions",
                    params={"project": project})
    assert bad.status_code == 400
    assert "32 hex digits" in bad.json()["detail"]


def test_item_draft_is_what_a_fill_stores(server: ServerProcess, project: str) -> None:
    spans = replay_run("openinference/react.prebuilt.stream", server.http, server.grpc, project)
    trace_id = max(spans, key=lambda t: spans[t])
    with httpx.Client(base_url=server.http, params={"project": project}) as api:
        final_trajectory(api, server.http, project, trace_id)
        draft = api.get(f"/api/v1/trajectories/{trace_id}/item-draft")
        assert draft.status_code == 200, draft.text
        doc = draft.json()
        assert doc["status"] == "final"
        assert doc["source_trace_id"] == trace_id
        # the react run called get_weather and add (in parallel), then divide
        assert sorted(doc["expectations"]["tool_order"]) == ["add", "divide", "get_weather"]
        assert doc["expectations"]["tool_order"][-1] == "divide"
        assert "What's the weather in Paris" in str(doc["input"])
        assert doc["metadata"]["trace_id"] == trace_id

        assert api.post("/api/v1/datasets", json={"name": "drafts"}).status_code == 201
        item_id = api.post("/api/v1/datasets/drafts/fill",
                           json={"trace_ids": [trace_id]}).json()["item_ids"][0]
        item = api.get(f"/api/v1/datasets/drafts/items/{item_id}").json()
        assert item["expectations"] == doc["expectations"]
        assert item["input"] == doc["input"]
        assert item["reference_output"] == doc["reference_output"]
        assert item["metadata"] == doc["metadata"]

        assert api.get(f"/api/v1/trajectories/{'cd' * 16}/item-draft").status_code == 404


STATIC = Path(__file__).parent.parent / "service" / "ui" / "static"
_EXTERNAL = re.compile(r"""(?:https?:)?//[a-z0-9.-]+\.[a-z]{2,}""", re.IGNORECASE)
VENDORED = STATIC / "vendor"
#: what a browser would fetch from another host: an import, a CSS url(), a src or href
_LOADED = re.compile(r"""(?:\bimport\b[^;\n]*?|\burl\(\s*|\b(?:src|href)\s*=\s*)["']?"""
                     r"""(?:https?:)?//[a-z0-9.-]+\.[a-z]{2,}""", re.IGNORECASE)


def test_ui_shell_and_assets_are_served_from_the_package(server: ServerProcess) -> None:
    with httpx.Client(base_url=server.http) as client:
        shell = client.get("/")
        assert shell.status_code == 200
        assert shell.headers["content-type"].startswith("text/html")
        # the browser may load scripts, styles and data from this origin only
        csp = shell.headers["content-security-policy"]
        assert "default-src 'self'" in csp and "script-src 'self'" in csp
        assets = re.findall(r'(?:src|href)="(ui/[^"]+)"', shell.text)
        assert "ui/js/app.js" in assets and "ui/style.css" in assets
        for asset in assets:
            response = client.get("/" + asset)
            assert response.status_code == 200, asset
            kind = "text/css" if asset.endswith(".css") else "text/javascript"
            assert response.headers["content-type"].startswith(kind), asset
        # every module on disk is preloaded by the shell (none is fetched late, none is missing)
        modules = sorted(str(p.relative_to(STATIC.parent)).replace("static/", "ui/", 1)
                         for p in STATIC.rglob("*.js"))
        assert sorted(a for a in assets if a.endswith(".js")) == modules
        assert client.get("/ui", follow_redirects=False).headers["location"] == "/"
        # the OpenAPI description stays the API's
        assert "/" not in client.get("/openapi.json").json()["paths"]


def test_ui_references_no_other_host() -> None:
    """Works offline: no CDN, font or script from another host in any shipped file. The
    vendored library's comments cite web pages, so in its files only what a browser would load
    counts: an import, a CSS url() or a src/href attribute."""
    for path in STATIC.rglob("*"):
        if path.is_file():
            pattern = _LOADED if VENDORED in path.parents else _EXTERNAL
            found = pattern.findall(path.read_text())
            assert found == [], f"{path.name} refers to another host: {found}"
