"""Interrupted runs (docs/trajectory-rules.md, "Interrupted runs") over REST, against a real
server: the captured `interrupt_resume` thread (an interrupted run, then its resumption) lands
as two trajectories, the list's `interrupted` filter selects the first, and the session shows
whether its latest turn waits for a person. The client and the CLI show the same, and an
online rule filtered on `interrupted` scores only the interrupted run.
"""

from __future__ import annotations

import json
from urllib.parse import quote

import httpx

from tests.capture import script
from tests.captures import replay_run
from tests.cli_runner import run_cli
from tests.harness import ServerProcess, final_trajectories, get_json, wait_for
from tests.otlp_builders import PB, interrupted_run_spans, new_trace_id, post_spans, request
from trajhub.client import TrajhubClient

RUN = "openinference/interrupt_resume.prebuilt.stream"
T0 = 1_700_000_000_000_000_000


def _ids(c: httpx.Client, server: ServerProcess, project: str, **params: object) -> list[str]:
    return [i["trace_id"] for i in get_json(c, f"{server.http}/api/v1/trajectories",
                                            project=project, has_steps="true",
                                            **params)["items"]]


def test_the_list_filters_interrupted_runs_and_the_session_is_not_waiting(
        server: ServerProcess, project: str) -> None:
    traces = list(replay_run(RUN, server.http, server.grpc, project))
    final_trajectories(server.http, project, traces)
    with httpx.Client() as c:
        (interrupted,) = _ids(c, server, project, interrupted="true")
        (resumed,) = _ids(c, server, project, interrupted="false")
        assert {interrupted, resumed} <= set(traces)
        assert _ids(c, server, project, interrupted="true", has_error="false") == [interrupted]
        doc = get_json(c, f"{server.http}/api/v1/trajectories/{interrupted}", project=project)
        assert doc["root_step"]["metadata"]["outcome"] == "interrupted"
        assert doc["root_step"]["metadata"]["interrupt_node"] == "book_flight"
        again = get_json(c, f"{server.http}/api/v1/trajectories/{resumed}", project=project)
        assert again["root_step"]["input"] == script.RESUME_VALUE
        # the resumed turn is the latest: the session no longer waits
        (session,) = get_json(c, f"{server.http}/api/v1/sessions", project=project)["items"]
        assert session["turns"] == 2 and session["waiting"] is False
        assert session["failed_turns"] == 0
        detail = get_json(c, f"{server.http}/api/v1/sessions/"
                          f"{quote(session['session_id'], safe='')}", project=project)
        assert [t["interrupted"] for t in detail["turns"]] == [True, False]


def test_a_session_whose_latest_turn_is_interrupted_is_waiting(
        server: ServerProcess, project: str) -> None:
    """A hand-built OTel GenAI run whose tool span records LangGraph's interrupt as the
    official LangChain instrumentation does (status ERROR, `error.type` GraphInterrupt)."""
    tid = new_trace_id()
    spans = interrupted_run_spans(tid, "assistant", "s-wait", T0)
    with httpx.Client() as c:
        r = c.post(f"{server.http}/v1/traces", content=request(spans).SerializeToString(),
                   headers={**PB, "trajhub-project": project})
        assert r.status_code == 200, r.text
        final_trajectories(server.http, project, [tid.hex()])
        (item,) = get_json(c, f"{server.http}/api/v1/trajectories", project=project)["items"]
        assert item["interrupted"] is True and item["has_error"] is False
        doc = get_json(c, f"{server.http}/api/v1/trajectories/{tid.hex()}", project=project)
        assert doc["root_step"]["metadata"]["interrupt_payload"] == '{"question":"Book it?"}'
        (session,) = get_json(c, f"{server.http}/api/v1/sessions", project=project)["items"]
        assert session["session_id"] == "s-wait" and session["waiting"] is True


def test_the_session_list_filters_on_waiting(server: ServerProcess, project: str) -> None:
    """The captured thread had an interrupted turn and was resumed, so it no longer waits; the
    hand-built session's only turn is interrupted, so it waits."""
    traces = list(replay_run(RUN, server.http, server.grpc, project))
    tid = new_trace_id()
    post_spans(server.http, project, interrupted_run_spans(tid, "assistant", "s-wait", T0))
    final_trajectories(server.http, project, [*traces, tid.hex()])
    with httpx.Client() as c:
        def sessions(**params: object) -> list[str]:
            return [s["session_id"] for s in get_json(
                c, f"{server.http}/api/v1/sessions", project=project, **params)["items"]]
        resumed = [s for s in sessions() if s != "s-wait"]
        assert len(resumed) == 1
        assert sessions(waiting="true") == ["s-wait"]
        assert sessions(waiting="false") == resumed


def test_the_client_and_the_cli_show_interrupted_runs_and_waiting_sessions(
        server: ServerProcess, project: str) -> None:
    """The captured thread (interrupted, then resumed) and a hand-built session whose only
    turn is interrupted, read through the client and the `trajhub` command."""
    traces = list(replay_run(RUN, server.http, server.grpc, project))
    tid = new_trace_id().hex()
    post_spans(server.http, project,
               interrupted_run_spans(bytes.fromhex(tid), "assistant", "s-wait", T0))
    final_trajectories(server.http, project, [*traces, tid])

    with TrajhubClient(server.http, project=project, timeout=30) as hub:
        interrupted = hub.list_trajectories(interrupted=True, has_steps=True).items
        # the hand-built run and the captured thread's first run
        assert len(interrupted) == 2 and tid in {t.trace_id for t in interrupted}
        assert {t.trace_id for t in interrupted} - {tid} <= set(traces)
        assert all(t.interrupted and not t.has_error for t in interrupted)
        (resumed,) = hub.list_trajectories(interrupted=False, has_steps=True).items
        assert resumed.trace_id in traces and not resumed.interrupted
        assert [s.session_id for s in hub.list_sessions(waiting=True).items] == ["s-wait"]
        (thread,) = hub.list_sessions(waiting=False).items
        session = hub.get_session(thread.session_id)
        assert [t.interrupted for t in session.turns] == [True, False]
        assert session.turns[1].input == script.RESUME_VALUE

    where = ["--url", server.http, "--project", project]
    listed = run_cli("trajectories", "list", "--interrupted", "true", "--has-steps", "true",
                     "--json", *where, keep_trajhub_env=True)
    assert listed.returncode == 0, listed.stderr
    assert {i["trace_id"] for i in json.loads(listed.stdout)["items"]} == {
        t.trace_id for t in interrupted}
    waiting = run_cli("sessions", "list", "--waiting", "true", "--json", *where,
                      keep_trajhub_env=True)
    assert [s["session_id"] for s in json.loads(waiting.stdout)["items"]] == ["s-wait"]
    shown = run_cli("sessions", "show", "s-wait", *where, keep_trajhub_env=True)
    assert shown.returncode == 0, shown.stderr
    first_line = shown.stdout.splitlines()[0]
    assert first_line.endswith("waiting for a person"), first_line
    assert "INTERRUPTED" in shown.stdout
    transcript = run_cli("sessions", "show", thread.session_id, *where, keep_trajhub_env=True)
    turns = [line for line in transcript.stdout.splitlines() if line.startswith("turn ")]
    assert ["INTERRUPTED" in line for line in turns] == [True, False]
    assert "waiting for a person" not in transcript.stdout.splitlines()[0]
    assert f"user: {script.RESUME_VALUE}" in transcript.stdout


def test_an_online_rule_filtered_on_interrupted_scores_only_interrupted_runs(
        server: ServerProcess, project: str) -> None:
    """A rule (the efficiency evaluator, no judge) whose filter is `interrupted: true`: of the
    captured thread's two runs, only the interrupted one gets its score."""
    with httpx.Client(base_url=server.http + "/api/v1", timeout=30,
                      headers={"trajhub-project": project}) as api:
        r = api.post("/rules", json={"name": "interrupted-only", "evaluator": "efficiency",
                                      "config": {"max_steps": 10},
                                      "filter": {"interrupted": True}})
        assert r.status_code == 201, r.text
        rule = r.json()
        assert rule["filter"] == {"interrupted": True}
        traces = list(replay_run(RUN, server.http, server.grpc, project))
        final_trajectories(server.http, project, traces)
        (interrupted,) = _ids(api, server, project, interrupted="true")
        (resumed,) = _ids(api, server, project, interrupted="false")

        def scores(trace_id: str) -> list[tuple[int, str]]:
            got = api.get(f"/trajectories/{trace_id}/scores")
            assert got.status_code == 200, got.text
            return [(s["rule_id"], s["name"]) for s in got.json()["items"]]

        wait_for(lambda: scores(interrupted), what="the rule's score of the interrupted run")
        wait_for(lambda: all(r["pending_runs"] == 0 for r in api.get("/rules").json()["items"]),
                 what="the rule's queue to drain")
        assert scores(interrupted) == [(rule["id"], "efficiency")]
        assert scores(resumed) == []
