"""REST for raw traces: listing with filters and cursors, one trace as tree/flat/trajectory,
one span, and errors that say what is wrong."""

from __future__ import annotations

import httpx
import pytest

from tests.harness import ServerProcess, get_json, wait_for
from tests.otlp_builders import PB, new_span_id, new_trace_id, request, span

T0 = 1_700_000_000_000_000_000
SECOND = 1_000_000_000


def send(c: httpx.Client, server: ServerProcess, project: str, spans: list, service: str
         ) -> None:
    r = c.post(f"{server.http}/v1/traces", content=request(spans, service).SerializeToString(),
               headers={**PB, "trajhub-project": project})
    assert r.status_code == 200, r.text


@pytest.fixture
def three_traces(server: ServerProcess, project: str) -> dict[str, str]:
    """a: svc-a, ok, 1 s, at T0; b: svc-b, an error, 3 s, at T0+10 s, span 'search';
    c: svc-a, ok, 2 s, at T0+20 s, attribute user.id=u7 and tokens=120."""
    ids = {}
    with httpx.Client() as c:
        a = new_trace_id()
        send(c, server, project, [span(a, "root a", start=T0, duration=SECOND)], "svc-a")
        b = new_trace_id()
        b_root = new_span_id()
        send(c, server, project, [
            span(b, "root b", span_id=b_root, start=T0 + 10 * SECOND, duration=3 * SECOND),
            span(b, "search", parent=b_root, start=T0 + 11 * SECOND, duration=SECOND,
                 error=True)], "svc-b")
        cc = new_trace_id()
        send(c, server, project, [span(cc, "root c", start=T0 + 20 * SECOND,
                                       duration=2 * SECOND,
                                       attributes={"user.id": "u7", "tokens": 120})], "svc-a")
        ids = {"a": a.hex(), "b": b.hex(), "c": cc.hex()}
        wait_for(lambda: len(get_json(c, f"{server.http}/api/v1/traces",
                                      project=project)["items"]) == 3, what="3 traces listed")
    return ids


def listed(c: httpx.Client, server: ServerProcess, project: str, **params: object) -> list[str]:
    return [i["trace_id"] for i in get_json(c, f"{server.http}/api/v1/traces", project=project,
                                            **params)["items"]]


def test_list_is_newest_first_with_summary_fields(server: ServerProcess, project: str,
                                                  three_traces: dict[str, str]) -> None:
    with httpx.Client() as c:
        items = get_json(c, f"{server.http}/api/v1/traces", project=project)["items"]
    assert [i["trace_id"] for i in items] == [three_traces[k] for k in "cba"]
    b = items[1]
    assert b["root_span_name"] == "root b"
    assert b["service_name"] == "svc-b"
    assert b["duration_ms"] == 3000
    assert b["span_count"] == 2 and b["error_count"] == 1
    assert b["start_time"] == "2023-11-14T22:13:30Z"


def test_list_filters(server: ServerProcess, project: str, three_traces: dict[str, str]) -> None:
    t = three_traces
    with httpx.Client() as c:
        assert listed(c, server, project, service="svc-a") == [t["c"], t["a"]]
        assert listed(c, server, project, has_error="true") == [t["b"]]
        assert listed(c, server, project, has_error="false") == [t["c"], t["a"]]
        assert listed(c, server, project, span_name="search") == [t["b"]]
        assert listed(c, server, project, min_duration_ms=1500) == [t["c"], t["b"]]
        assert listed(c, server, project, start=str(T0 + 5 * SECOND)) == [t["c"], t["b"]]
        assert listed(c, server, project, start="2023-11-14T22:13:25Z",
                      end="2023-11-14T22:13:35Z") == [t["b"]]
        assert listed(c, server, project, attribute="user.id=u7") == [t["c"]]
        assert listed(c, server, project, attribute="tokens=120") == [t["c"]]
        assert listed(c, server, project, attribute=["tokens=120", "user.id=u8"]) == []


def test_cursor_pagination_visits_each_trace_once(server: ServerProcess, project: str,
                                                  three_traces: dict[str, str]) -> None:
    seen: list[str] = []
    cursor = None
    with httpx.Client() as c:
        while True:
            params = {"project": project, "limit": 2, **({"cursor": cursor} if cursor else {})}
            page = get_json(c, f"{server.http}/api/v1/traces", **params)
            seen += [i["trace_id"] for i in page["items"]]
            cursor = page["next_cursor"]
            if not cursor:
                break
    assert seen == [three_traces[k] for k in "cba"]


def test_trace_as_tree_and_flat(server: ServerProcess, project: str,
                                three_traces: dict[str, str]) -> None:
    with httpx.Client() as c:
        tree = get_json(c, f"{server.http}/api/v1/traces/{three_traces['b']}",
                        project=project)["spans"]
        assert len(tree) == 1 and tree[0]["name"] == "root b"
        assert [ch["name"] for ch in tree[0]["children"]] == ["search"]
        assert tree[0]["children"][0]["status"]["code"] == "error"
        flat = get_json(c, f"{server.http}/api/v1/traces/{three_traces['b']}",
                        project=project, view="flat")["spans"]
        assert [s["name"] for s in flat] == ["root b", "search"]
        one = get_json(c, f"{server.http}/api/v1/traces/{three_traces['b']}/spans/"
                          f"{flat[1]['span_id']}", project=project)
        assert one["name"] == "search" and one["parent_span_id"] == flat[0]["span_id"]


def test_projects_are_isolated(server: ServerProcess, project: str,
                               three_traces: dict[str, str]) -> None:
    with httpx.Client() as c:
        r = c.get(f"{server.http}/api/v1/traces/{three_traces['a']}",
                  params={"project": project + "-other"})
        assert r.status_code == 404
        r = c.get(f"{server.http}/api/v1/traces/{three_traces['a']}",
                  headers={"trajhub-project": project})
        assert r.status_code == 200


def test_errors_say_what_is_wrong(server: ServerProcess, project: str) -> None:
    with httpx.Client() as c:
        r = c.get(f"{server.http}/api/v1/traces/{'0' * 31}f", params={"project": project})
        assert r.status_code == 404 and "not found" in r.json()["detail"]
        r = c.get(f"{server.http}/api/v1/traces/xyz")
        assert r.status_code == 400 and "32 hex" in r.json()["detail"]
        r = c.get(f"{server.http}/api/v1/traces/{'a' * 32}/spans/123")
        assert r.status_code == 400 and "16 hex" in r.json()["detail"]
        r = c.get(f"{server.http}/api/v1/traces", params={"start": "yesterday"})
        assert r.status_code == 400 and "start" in r.json()["detail"]
        r = c.get(f"{server.http}/api/v1/traces", params={"limit": 0})
        assert r.status_code == 400 and "'limit'" in r.json()["detail"]
        r = c.get(f"{server.http}/api/v1/traces", params={"cursor": "garbage"})
        assert r.status_code == 400 and "cursor" in r.json()["detail"]
        r = c.get(f"{server.http}/api/v1/traces", params={"attribute": "novalue"})
        assert r.status_code == 400 and "key=value" in r.json()["detail"]
        r = c.get(f"{server.http}/api/v1/traces/{'a' * 32}", params={"view": "sideways"})
        assert r.status_code == 400 and "'view'" in r.json()["detail"]


def test_health_and_docs(server: ServerProcess) -> None:
    with httpx.Client(timeout=30) as c:
        assert c.get(f"{server.http}/healthz").json() == {"status": "ok"}
        ready = c.get(f"{server.http}/readyz").json()
        assert ready["status"] == "ready"
        assert ready["derivation_backlog"] >= 0 and ready["derivation_backlog_oldest_seconds"] >= 0
        assert c.get(f"{server.http}/docs").status_code == 200
        spec = c.get(f"{server.http}/openapi.json").json()
        for path in ("/v1/traces", "/v1/loop/traces/ingest", "/v1/loop/files/upload",
                     "/v1/loop/opentelemetry/v1/traces", "/api/v1/traces",
                     "/api/v1/traces/{trace_id}", "/api/v1/trajectories",
                     "/api/v1/trajectories/{trace_id}", "/api/v1/normalize"):
            assert path in spec["paths"], path


def test_ids_in_any_case_name_the_same_trace(server: ServerProcess, project: str,
                                             three_traces: dict[str, str]) -> None:
    """A trace or span id in upper case reads what the lower-case id reads (ids are stored
    lower-cased; the path types lower-case what they receive)."""
    b = three_traces["b"]
    with httpx.Client() as c:
        lower = get_json(c, f"{server.http}/api/v1/traces/{b}", project=project)
        upper = get_json(c, f"{server.http}/api/v1/traces/{b.upper()}", project=project)
        assert upper == lower
        span_id = next(s["span_id"] for s in get_json(
            c, f"{server.http}/api/v1/traces/{b}/spans", project=project)["items"]
            if s["name"] == "search")
        one = get_json(c, f"{server.http}/api/v1/traces/{b.upper()}/spans/{span_id.upper()}",
                       project=project)
        assert (one["trace_id"], one["span_id"], one["name"]) == (b, span_id, "search")


def test_ingest_stores_under_the_project_query_parameter(server: ServerProcess,
                                                         project: str) -> None:
    """Without keys, `?project=` names the project as on the REST API, before the header;
    an invalid name is a 400 that says which parameter."""
    trace_id = new_trace_id()
    with httpx.Client(timeout=30) as c:
        r = c.post(f"{server.http}/v1/traces", params={"project": project},
                   headers={**PB, "trajhub-project": project + "-header"},
                   content=request([span(trace_id)]).SerializeToString())
        assert r.status_code == 200, r.content
        wait_for(lambda: c.get(f"{server.http}/api/v1/traces/{trace_id.hex()}",
                               params={"project": project}).status_code == 200,
                 what="stored under the query's project")
        assert c.get(f"{server.http}/api/v1/traces/{trace_id.hex()}",
                     params={"project": project + "-header"}).status_code == 404
        bad = c.post(f"{server.http}/v1/traces", params={"project": "no spaces"}, headers=PB,
                     content=request([span(new_trace_id())]).SerializeToString())
        assert bad.status_code == 400 and b"query parameter 'project'" in bad.content
