"""Large trajectories in pages (docs/large-traces.md): a run of 1,250 steps (stored in
chunks) and one of 3 (paged from its document) read through GET /trajectories/{id}/steps,
/traces/{id}/spans and the paged /trajectories/{id}/events: every step, span and event once, in
order, the same as the whole document and the whole playback; totals and cursors that lead to
the end (and the deprecated offsets, which lead to the same pages); and a 4xx naming the
parameter for bad input. The expected ids and
names are the script's own."""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

import httpx
import orjson
import pytest

from tests.harness import ServerProcess, final_trajectory
from tests.otlp_builders import PB, new_span_id, new_trace_id, request, span
from trajhub.client import TrajhubClient
from trajhub.normalizers.playback import step_events

T0 = 1_700_000_000_000_000_000
MS = 1_000_000
#: above the size from which a trajectory is stored in chunks (1,000), across three chunks
STEPS = 1_250


def agent_run(steps: int) -> tuple[bytes, list[Any], list[str], list[str]]:
    """An agent's run: its root, then `steps` steps alternating a model call and a tool call,
    one a millisecond; every 100th tool call fails. Returns the trace id, the spans, the step
    span ids in the order they started and the root's span id first then the steps'."""
    tid, root = new_trace_id(), new_span_id()
    spans = [span(tid, "invoke_agent worker", span_id=root, start=T0,
                  duration=(steps + 2) * MS,
                  attributes={"gen_ai.operation.name": "invoke_agent",
                              "gen_ai.agent.name": "worker"})]
    ids: list[str] = []
    for i in range(steps):
        sid = new_span_id()
        ids.append(sid.hex())
        if i % 2 == 0:
            spans.append(span(tid, "chat gpt-4o", parent=root, span_id=sid,
                              start=T0 + (i + 1) * MS, duration=MS // 2, attributes={
                                  "gen_ai.operation.name": "chat",
                                  "gen_ai.request.model": "gpt-4o",
                                  "gen_ai.usage.input_tokens": 100 + i,
                                  "gen_ai.usage.output_tokens": 10}))
        else:
            spans.append(span(tid, f"execute_tool tool_{i}", parent=root, span_id=sid,
                              start=T0 + (i + 1) * MS, duration=MS // 2,
                              error=i % 200 == 199, attributes={
                                  "gen_ai.operation.name": "execute_tool",
                                  "gen_ai.tool.name": f"tool_{i}",
                                  "gen_ai.tool.call.id": f"call_{i}",
                                  "gen_ai.tool.call.arguments": f'{{"n": {i}}}'}))
    return tid, spans, ids, [root.hex(), *ids]


@pytest.fixture(scope="module")
def runs(server: ServerProcess) -> dict[str, Any]:
    """The large run and a small one, final, in a project of their own."""
    project = "large-runs"
    out: dict[str, Any] = {"project": project}
    with httpx.Client(timeout=60) as c:
        for name, steps in (("large", STEPS), ("small", 3)):
            tid, spans, ids, span_ids = agent_run(steps)
            r = c.post(f"{server.http}/v1/traces", content=request(spans).SerializeToString(),
                       headers={**PB, "trajhub-project": project})
            assert r.status_code == 200, r.text
            out[name] = {"trace_id": tid.hex(), "steps": ids, "spans": span_ids}
        for name in ("large", "small"):
            doc = final_trajectory(c, server.http, project, out[name]["trace_id"]).json()
            out[name]["document"] = doc
    return out


def _get(server: ServerProcess, runs: dict[str, Any], path: str, **params: Any
         ) -> httpx.Response:
    return httpx.get(f"{server.http}{path}", params={"project": runs["project"], **params},
                     timeout=60)


def _steps_by_pages(server: ServerProcess, runs: dict[str, Any], run: str, limit: int
                    ) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Every page from the first, following `next_cursor`; the pages and their steps."""
    pages: list[dict[str, Any]] = []
    steps: list[dict[str, Any]] = []
    cursor = None
    tid = runs[run]["trace_id"]
    while True:
        params = {"limit": limit, **({"cursor": cursor} if cursor else {})}
        r = _get(server, runs, f"/api/v1/trajectories/{tid}/steps", **params)
        assert r.status_code == 200, r.text
        page = r.json()
        pages.append(page)
        assert page["offset"] == len(steps)
        steps.extend(page["items"])
        cursor = page["next_cursor"]
        if cursor is None:
            return pages, steps
        assert len(page["items"]) == limit


def _steps_by_offsets(server: ServerProcess, runs: dict[str, Any], run: str, limit: int
                      ) -> list[dict[str, Any]]:
    """Every page from offset 0, following `next_offset` (the cursor's deprecated alias)."""
    pages, offset = [], 0
    tid = runs[run]["trace_id"]
    while True:
        r = _get(server, runs, f"/api/v1/trajectories/{tid}/steps", offset=offset, limit=limit)
        assert r.status_code == 200, r.text
        page = r.json()
        pages.append(page)
        if page["next_offset"] is None:
            return pages
        assert page["next_offset"] == offset + len(page["steps"]) == offset + limit
        offset = page["next_offset"]


@pytest.mark.parametrize("run", ["large", "small"])
def test_step_pages_hold_every_step_once_in_order(server: ServerProcess, runs: dict[str, Any],
                                                  run: str) -> None:
    expected = runs[run]["steps"]
    pages, steps = _steps_by_pages(server, runs, run, limit=300 if run == "large" else 2)
    assert [s["id"] for s in steps] == expected
    assert [s["offset"] for s in steps] == list(range(len(expected)))
    assert {p["total"] for p in pages} == {len(expected)}
    assert len(pages) == -(-len(expected) // (300 if run == "large" else 2))
    first = pages[0]
    assert first["trace_id"] == runs[run]["trace_id"] and first["status"] == "final"
    [agent] = first["agent_steps"]
    assert agent["name"] == "worker" and agent["step_offset"] == 0
    assert agent["step_count"] == len(expected)
    models = (len(expected) + 1) // 2
    assert agent["step_types"] == {"model": models, "tool": len(expected) - models}
    assert agent["failed_steps"] == sum(1 for i in range(len(expected)) if i % 200 == 199)
    assert agent["models"] == ["gpt-4o"]
    assert {s["agent_step_id"] for s in steps} == {agent["id"]}
    # the same steps as the whole document (the export), and the same rest of it
    doc = runs[run]["document"]
    assert [{k: v for k, v in s.items() if k not in ("offset", "agent_step_id")}
            for s in steps] == doc["agent_steps"][0]["steps"]
    assert first["root_step"] == doc["root_step"]
    assert {k: v for k, v in agent.items() if k not in (
        "step_offset", "step_count", "step_types", "failed_steps", "models")} == {
        k: v for k, v in doc["agent_steps"][0].items() if k != "steps"}


@pytest.mark.parametrize("run", ["large", "small"])
def test_the_cursor_walk_of_the_steps_is_the_offset_walk(server: ServerProcess,
                                                         runs: dict[str, Any], run: str) -> None:
    limit = 300 if run == "large" else 2
    by_cursor, _ = _steps_by_pages(server, runs, run, limit)
    by_offset = _steps_by_offsets(server, runs, run, limit)
    # the same answers, each with the deprecated aliases beside what replaces them
    assert by_cursor == by_offset
    for page in by_offset:
        assert page["steps"] == page["items"]
        assert (page["next_offset"] is None) == (page["next_cursor"] is None)


def test_a_page_anywhere_and_past_the_end(server: ServerProcess, runs: dict[str, Any]) -> None:
    tid, expected = runs["large"]["trace_id"], runs["large"]["steps"]
    # a page across the boundary of two stored chunks (500 steps each), asked for by position
    r = _get(server, runs, f"/api/v1/trajectories/{tid}/steps", offset=490, limit=20)
    page = r.json()
    assert [s["id"] for s in page["items"]] == expected[490:510]
    assert page["offset"] == 490 and page["limit"] == 20
    assert r.headers["etag"] == f'"{page["revision"]}"'
    assert r.headers["x-trajectory-status"] == "final"
    following = _get(server, runs, f"/api/v1/trajectories/{tid}/steps",
                     cursor=page["next_cursor"], limit=20).json()
    assert following["offset"] == 510
    assert [s["id"] for s in following["items"]] == expected[510:530]
    last = _get(server, runs, f"/api/v1/trajectories/{tid}/steps", offset=STEPS - 1).json()
    assert [s["id"] for s in last["items"]] == expected[-1:] and last["next_cursor"] is None
    past = _get(server, runs, f"/api/v1/trajectories/{tid}/steps", offset=STEPS + 5).json()
    assert past["items"] == [] and past["next_cursor"] is None and past["total"] == STEPS
    again = httpx.get(f"{server.http}/api/v1/trajectories/{tid}/steps",
                      params={"project": runs["project"]},
                      headers={"if-none-match": r.headers["etag"]})
    assert again.status_code == 304


def _ndjson(response: httpx.Response) -> list[dict[str, Any]]:
    assert response.status_code == 200, response.text
    return [orjson.loads(line) for line in response.content.splitlines() if line.strip()]


@pytest.mark.parametrize("run", ["large", "small"])
def test_event_pages_are_the_whole_playback_in_pieces(server: ServerProcess,
                                                      runs: dict[str, Any], run: str) -> None:
    tid = runs[run]["trace_id"]
    whole = _ndjson(_get(server, runs, f"/api/v1/trajectories/{tid}/events"))
    assert [e["step_id"] for e in whole] == runs[run]["steps"]
    limit = 400 if run == "large" else 2
    paged: list[dict[str, Any]] = []
    cursor: str | None = None
    while True:
        params = {"limit": limit, **({"cursor": cursor} if cursor else {})}
        r = _get(server, runs, f"/api/v1/trajectories/{tid}/events", **params)
        events = _ndjson(r)
        assert int(r.headers["x-total-count"]) == len(whole)
        paged.extend(events)
        cursor = r.headers.get("x-next-cursor")
        if cursor is None:
            break
    assert paged == whole
    # the deprecated offsets lead through the same pages
    by_offset: list[dict[str, Any]] = []
    offset: int | None = 0
    while offset is not None:
        r = _get(server, runs, f"/api/v1/trajectories/{tid}/events", offset=offset,
                 limit=limit)
        by_offset.extend(_ndjson(r))
        following = r.headers.get("x-next-offset")
        offset = int(following) if following is not None else None
        assert (offset is None) == ("x-next-cursor" not in r.headers)
        if offset is not None:
            assert offset == len(by_offset)
    assert by_offset == whole
    assert [e["seq"] for e in paged] == list(range(len(whole)))
    # the large run's events come from its chunks: the same as the document's playback
    from_document = step_events(runs[run]["document"])
    assert [(e["step_id"], e["agent"], e["agent_path"], e["arguments_hash"], e["tokens"])
            for e in whole] == [(e.step_id, e.agent, list(e.agent_path), e.arguments_hash,
                                 asdict(e.tokens) if e.tokens else None)
                                for e in from_document]


def test_span_pages_follow_the_cursor_to_the_last_span(server: ServerProcess,
                                                       runs: dict[str, Any]) -> None:
    tid, expected = runs["large"]["trace_id"], runs["large"]["spans"]
    seen: list[str] = []
    cursor = None
    while True:
        params = {"limit": 500, **({"cursor": cursor} if cursor else {})}
        r = _get(server, runs, f"/api/v1/traces/{tid}/spans", **params)
        assert r.status_code == 200, r.text
        page = r.json()
        assert page["total"] == len(expected) and page["trace_id"] == tid
        seen.extend(s["span_id"] for s in page["items"])
        cursor = page["next_cursor"]
        if cursor is None:
            break
    # the root starts first; the steps one a millisecond after it
    assert seen == expected
    # exactly a page's worth: no further, empty page is announced
    exact = _get(server, runs, f"/api/v1/traces/{runs['small']['trace_id']}/spans",
                 limit=len(runs["small"]["spans"])).json()
    assert [s["span_id"] for s in exact["items"]] == runs["small"]["spans"]
    assert exact["next_cursor"] is None


@pytest.mark.parametrize(("path", "params", "named"), [
    ("steps", {"limit": 0}, "limit"),
    ("steps", {"limit": 1001}, "limit"),
    ("steps", {"offset": -1}, "offset"),
    ("steps", {"offset": "x"}, "offset"),
    ("steps", {"offset": 2**31}, "offset"),
    ("steps", {"cursor": "bm90IG91cnM"}, "cursor"),
    ("events", {"limit": 0}, "limit"),
    ("events", {"offset": -3, "limit": 5}, "offset"),
    ("spans", {"cursor": "bm90IG91cnM"}, "cursor"),
    ("spans", {"limit": 1001}, "limit"),
])
def test_bad_page_parameters_are_a_4xx_naming_them(server: ServerProcess, runs: dict[str, Any],
                                                   path: str, params: dict[str, Any],
                                                   named: str) -> None:
    tid = runs["large"]["trace_id"]
    url = (f"/api/v1/traces/{tid}/spans" if path == "spans"
           else f"/api/v1/trajectories/{tid}/{path}")
    r = _get(server, runs, url, **params)
    assert 400 <= r.status_code < 500, r.text
    assert named in r.text


def test_a_cursor_overrides_the_deprecated_offset(server: ServerProcess,
                                                  runs: dict[str, Any]) -> None:
    """Both given is a request /openapi.json allows: the page starts at the cursor."""
    tid = runs["large"]["trace_id"]
    first = _get(server, runs, f"/api/v1/trajectories/{tid}/steps", limit=2).json()
    both = _get(server, runs, f"/api/v1/trajectories/{tid}/steps", limit=2, offset=7,
                cursor=first["next_cursor"]).json()
    assert [s["offset"] for s in both["items"]] == [2, 3]


def test_unknown_trace_is_a_404(server: ServerProcess, runs: dict[str, Any]) -> None:
    missing = "ab" * 16
    for url in (f"/api/v1/trajectories/{missing}/steps", f"/api/v1/traces/{missing}/spans"):
        assert _get(server, runs, url).status_code == 404
    assert _get(server, runs, f"/api/v1/trajectories/{missing}/events",
                limit=5).status_code == 404


def test_python_client_pages_steps_spans_and_events(server: ServerProcess,
                                                    runs: dict[str, Any]) -> None:
    large = runs["large"]
    with TrajhubClient(server.http, project=runs["project"], timeout=60) as hub:
        steps = list(hub.iter_trajectory_steps(large["trace_id"], page_size=400))
        assert [s.id for s in steps] == large["steps"]
        spans = list(hub.iter_trace_spans(large["trace_id"], page_size=700))
        assert [s.span_id for s in spans] == large["spans"]
        page = hub.events(large["trace_id"], offset=STEPS - 10, limit=50)
        assert [e.step_id for e in page.events] == large["steps"][-10:]
        assert page.total == STEPS and page.next_cursor is None and page.next_offset is None
        first = hub.events(large["trace_id"], limit=5)
        assert [e.seq for e in first.events] == list(range(5)) and first.next_offset == 5
        second = hub.events(large["trace_id"], cursor=first.next_cursor, limit=5)
        assert [e.seq for e in second.events] == list(range(5, 10))
        assert second.next_cursor is not None
        whole = hub.events(runs["small"]["trace_id"])
        assert [e.step_id for e in whole.events] == runs["small"]["steps"]
        assert whole.total == 3 and whole.next_cursor is None
