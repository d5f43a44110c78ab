"""`trajhub.client.TrajhubClient` against a real server: typed results for traces,
trajectories, datasets and evaluations, and errors carrying the server's message.

Ground truth: tests/fixtures/README.md's `react` scenario (graph `LangGraph`; tools get_weather,
add, divide; 3 model and 3 tool steps)."""

from __future__ import annotations

import json
import socket
import uuid
from collections.abc import Iterator

import httpx
import pytest

from tests.captures import replay_run
from tests.harness import ServerProcess, final_trajectory, wait_for
from trajhub.client import (
    ApiError,
    Dataset,
    Evaluation,
    Project,
    ServerUnreachable,
    TraceSummary,
    TrajectorySummary,
    TrajhubClient,
    TrajhubError,
)
from trajhub.service.cli import main as cli_main
from trajhub.service.cli import reads as cli_reads

REACT_TOOLS = {"get_weather", "add", "divide"}


@pytest.fixture(scope="module")
def react(server: ServerProcess) -> tuple[str, str]:
    """A project holding one final `react` run; (project, trace id)."""
    project = "client-" + uuid.uuid4().hex[:10]
    trace_id = replay_run("openinference/react.prebuilt.invoke", server.http, server.grpc,
                          project).most_common(1)[0][0]
    with httpx.Client() as c:
        final_trajectory(c, server.http, project, trace_id)
    return project, trace_id


@pytest.fixture
def hub(server: ServerProcess, react: tuple[str, str]) -> Iterator[TrajhubClient]:
    with TrajhubClient(server.http, project=react[0], timeout=30) as client:
        yield client


def test_traces_and_trajectories(hub: TrajhubClient, react: tuple[str, str]) -> None:
    _, trace_id = react
    traces = hub.list_traces()
    assert trace_id in {t.trace_id for t in traces.items}
    assert all(isinstance(t, TraceSummary) for t in traces.items)
    spans = hub.get_trace(trace_id, view="flat").spans
    assert {s.name for s in spans} >= REACT_TOOLS

    page = hub.list_trajectories(tool="divide", status="final")
    [summary] = page.items
    assert isinstance(summary, TrajectorySummary)
    assert summary.trace_id == trace_id and summary.status == "final"
    assert set(summary.tool_names) == REACT_TOOLS and summary.agent_names == ["LangGraph"]
    assert (summary.model_step_count, summary.tool_step_count) == (3, 3)
    assert hub.list_trajectories(tool="no-such-tool").items == []

    stored = hub.get_trajectory(trace_id)
    assert stored.final and stored.revision == 1
    assert stored.document["id"] == trace_id  # the raw document, as the schema has it
    explained = hub.explain_trajectory(trace_id)
    assert explained.trace_id == trace_id and len(explained.spans) == len(spans)


def test_datasets_and_evaluations(hub: TrajhubClient, react: tuple[str, str]) -> None:
    _, trace_id = react
    name = "client-" + uuid.uuid4().hex[:8]
    created = hub.create_dataset(name, "made by the client")
    assert created == Dataset(name=name, description="made by the client", item_count=0,
                              created_at=created.created_at, updated_at=created.updated_at)
    assert name in {d.name for d in hub.list_datasets()}

    filled = hub.fill_dataset(name, trace_ids=[trace_id])
    assert (filled.added, filled.skipped_duplicates) == (1, 0)
    assert hub.fill_dataset(name, trace_ids=[trace_id]).skipped_duplicates == 1
    manual = hub.add_item(name, input="2+3", reference_output="5", tags=["manual"],
                          metadata={"source": "hand"})
    assert hub.get_item(name, manual.id).tags == ["manual"]
    assert hub.get_item(name, manual.id).metadata == {"source": "hand"}
    assert hub.update_item(name, manual.id, tags=["edited"]).tags == ["edited"]
    assert hub.update_item(name, manual.id, metadata={"k": 1}).metadata == {"k": 1}
    first = hub.list_items(name, limit=1)
    assert len(first.items) == 1 and first.next_cursor
    items = list(hub.iter_items(name))
    assert len(items) == 2 and {i.id for i in items} >= {manual.id, first.items[0].id}
    from_trace = next(i for i in items if i.source_trace_id == trace_id)
    assert set((from_trace.expectations or {})["tool_order"]) == REACT_TOOLS
    assert from_trace.metadata["trace_id"] == trace_id
    hub.delete_item(name, manual.id)
    assert hub.get_dataset(name).item_count == 1

    with hub.export_dataset(name) as export:
        assert export.item_count == 1
        body = b"".join(export.iter_bytes())
    assert json.loads(body)["source_trace_id"] == trace_id
    copy = name + "-copy"
    assert hub.import_items(copy, body, create=True).added == 1
    assert hub.update_dataset(copy, new_name=copy + "2", description="renamed").description \
        == "renamed"
    hub.delete_dataset(copy + "2")
    with pytest.raises(ApiError) as gone:
        hub.get_dataset(copy + "2")
    assert gone.value.status == 404 and repr(copy + "2") in gone.value.detail

    started = hub.create_evaluation(name, ["expected_agents_tools", {
        "name": "trajectory_match", "config": {"mode": "unordered"}}])
    assert isinstance(started, Evaluation) and started.item_count == 1
    done = hub.wait_evaluation(started.id, timeout=60, poll=0.1)
    assert done.status == "done" and done.items is not None and done.items.passed == 1
    assert {a.evaluator: (a.passed, a.failed) for a in done.aggregates} == {
        "expected_agents_tools": (1, 0), "trajectory_match": (1, 0)}
    results = list(hub.iter_results(started.id))
    assert {(r.evaluator, r.passed, r.trace_id) for r in results} == {
        ("expected_agents_tools", True, trace_id), ("trajectory_match", True, trace_id)}
    assert list(hub.iter_results(started.id, failed=True)) == []
    assert started.id in {e.id for e in hub.list_evaluations(dataset=name).items}


def test_rederive(hub: TrajhubClient, react: tuple[str, str], server: ServerProcess) -> None:
    project, trace_id = react
    assert hub.rederive() == 1  # the project holds one trace
    with httpx.Client() as c:
        def revised() -> bool:
            r = final_trajectory(c, server.http, project, trace_id)
            return r.headers["x-trajectory-revision"] == "2"

        wait_for(revised, 30, what="revision 2")


def test_errors_carry_the_servers_message(hub: TrajhubClient) -> None:
    with pytest.raises(ApiError) as missing:
        hub.get_trajectory("0" * 32)
    assert missing.value.status == 404
    assert missing.value.detail.startswith(f"no trajectory for trace {'0' * 32}")
    assert str(missing.value) == f"{missing.value.detail} (HTTP 404)"
    with pytest.raises(ApiError) as invalid:
        hub.list_trajectories(limit=5000)
    # a bad query parameter is a 400 naming it (the REST contract)
    assert invalid.value.status == 400
    assert invalid.value.detail.startswith("query parameter 'limit': ")
    assert "1000" in invalid.value.detail
    with pytest.raises(ApiError) as conflict:
        name = "dup-" + uuid.uuid4().hex[:8]
        hub.create_dataset(name)
        hub.create_dataset(name)
    assert conflict.value.status == 409 and name in conflict.value.detail


def test_an_unreachable_server() -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    with TrajhubClient(f"http://127.0.0.1:{port}") as hub, \
            pytest.raises(ServerUnreachable) as down:
        hub.list_datasets()
    assert str(down.value).startswith(f"cannot reach the trajhub server at "
                                      f"http://127.0.0.1:{port}")


# --- projects: the contract of GET /api/v1/projects -------------------------------------------

PROJECTS = [
    {"name": "default", "trace_count": 12, "span_count": 340,
     "first_span_time": "2026-01-02T03:04:05.000000Z", "last_span_time": "2026-01-03T00:00:00Z",
     "first_span_at": "2026-01-02T03:04:05.000000Z", "last_span_at": "2026-01-03T00:00:00Z"},
    {"name": "empty-ish", "trace_count": 0, "span_count": 0, "first_span_time": None,
     "last_span_time": None, "first_span_at": None, "last_span_at": None},
]


def _projects_server(request: httpx.Request) -> httpx.Response:
    # the list's one item key; the client reads no other (the server's deprecated
    # `projects` alias is left out here)
    assert request.url.path == "/api/v1/projects"
    return httpx.Response(200, json={"items": PROJECTS, "next_cursor": None})


def test_projects_follow_the_contract() -> None:
    with TrajhubClient("http://trajhub.test", transport=httpx.MockTransport(_projects_server)
                       ) as hub:
        projects = hub.list_projects()
    assert projects == [
        Project(name="default", trace_count=12, span_count=340,
                first_span_time="2026-01-02T03:04:05.000000Z",
                last_span_time="2026-01-03T00:00:00Z"),
        Project(name="empty-ish", trace_count=0, span_count=0, first_span_time=None,
                last_span_time=None)]


def test_projects_command(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
                          ) -> None:
    monkeypatch.setattr(cli_reads, "connect", lambda args: TrajhubClient(
        args.url, transport=httpx.MockTransport(_projects_server)))
    assert cli_main.main(["projects", "--url", "http://trajhub.test"]) == 0
    header, *rows = capsys.readouterr().out.splitlines()
    assert header.split() == ["PROJECT", "TRACES", "SPANS", "FIRST", "SPAN", "LAST", "SPAN"]
    assert rows[0].split() == ["default", "12", "340", "2026-01-02", "03:04:05", "2026-01-03",
                               "00:00:00"]
    assert rows[1].split() == ["empty-ish", "0", "0", "-", "-"]
    assert cli_main.main(["projects", "--json", "--url", "http://trajhub.test"]) == 0
    assert json.loads(capsys.readouterr().out) == {"projects": PROJECTS}


def test_a_server_that_is_not_trajhub() -> None:
    def html(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, text="<html>welcome</html>")

    with TrajhubClient("http://elsewhere.test", transport=httpx.MockTransport(html)) as hub, \
            pytest.raises(TrajhubError) as wrong:
        hub.list_datasets()
    assert str(wrong.value) == ("http://elsewhere.test answered GET /api/v1/datasets with "
                                "something other than JSON; is it a trajhub server?")


def test_trajectory_summaries_follow_the_contract(monkeypatch: pytest.MonkeyPatch,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    """The summary fields and `?count=true` of GET /api/v1/trajectories, as the README and
    /openapi.json document them."""
    seen: list[httpx.QueryParams] = []
    summary = {"trace_id": "ab" * 16, "status": "final", "agent_names": ["planner"],
               "tool_names": ["search"], "start_time": "2026-01-02T03:04:05Z",
               "duration_ms": 1500, "step_count": 4, "input_tokens": 10, "output_tokens": 5,
               "has_error": False, "service": "travel-agent", "session_id": "s-1",
               "user_id": "u-1", "input_preview": "plan a trip", "output_preview": "done",
               "a_field_from_a_newer_server": 1}

    def api(request: httpx.Request) -> httpx.Response:
        seen.append(request.url.params)
        return httpx.Response(200, json={"items": [summary], "next_cursor": None, "total": 7})

    monkeypatch.setattr(cli_reads, "connect", lambda args: TrajhubClient(
        args.url, transport=httpx.MockTransport(api)))
    assert cli_main.main(["trajectories", "list", "--count", "--service", "travel-agent",
                          "--url", "http://trajhub.test"]) == 0
    assert seen[-1]["count"] == "true" and seen[-1]["service"] == "travel-agent"
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == "7 trajectories match"
    assert lines[2].split()[:2] == ["ab" * 16, "final"]
    with TrajhubClient("http://trajhub.test", transport=httpx.MockTransport(api)) as hub:
        page = hub.list_trajectories(count=True, user_id="u-1")
    assert page.total == 7 and seen[-1]["user_id"] == "u-1"
    [t] = page.items
    assert (t.service, t.session_id, t.user_id, t.input_preview, t.output_preview) == (
        "travel-agent", "s-1", "u-1", "plan a trip", "done")
