"""Interrupted runs (docs/trajectory-rules.md, "Interrupted runs") over REST, against a real
server: the captured `interrupt_resume` thread (an interrupted run, then its resumption) lands
as two trajectories, the list's `interrupted` filter selects the first, and the session shows
whether its latest turn waits for a person.
"""

from __future__ import annotations

from urllib.parse import quote

import httpx

from tests.capture import script
from tests.captures import replay_run
from tests.harness import ServerProcess, final_trajectories, get_json
from tests.otlp_builders import PB, interrupted_run_spans, new_trace_id, post_spans, request

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
