"""The web UI's sessions: the Sessions tab lists a project's sessions, and a session
reads as a chat transcript, oldest turn first, each turn linking to its trajectory.

Data: the two-turn conversation captured under OpenInference (tests/fixtures/sessions; its
questions and answers are the ground truth written from the script), and one hand-built run
whose session id holds a `/` and a space, so the links must encode it."""

from __future__ import annotations

import json
from pathlib import Path
from urllib.parse import quote

import httpx
import pytest

from tests.captures import Capture, replay
from tests.harness import ServerProcess, final_trajectory, get_json
from tests.normalize_support import load_file
from tests.otlp_builders import new_span_id, new_trace_id, request, span
from tests.ui_support import artifacts_dir, browser_page, require_browser

SESSIONS = Path(__file__).parent / "fixtures" / "sessions"
TRUTH = json.loads((SESSIONS / "ground_truth.json").read_text())
SLASHED = "team/chat 1"


@pytest.fixture(autouse=True)
def _browser() -> None:
    require_browser()


def _ingest(server: ServerProcess, project: str) -> None:
    folder = SESSIONS / "openinference" / "conversation"
    traces: set[str] = set()
    for body in sorted(folder.glob("http_*.bin")):
        meta = json.loads(body.with_suffix(".json").read_text())
        headers = {k.lower(): v for k, v in meta["headers"].items()
                   if k.lower() in ("content-type", "content-encoding")}
        capture = Capture(body, "http", meta["path"], headers)
        response = replay(capture, server.http, server.grpc, project)
        assert isinstance(response, httpx.Response) and response.status_code == 200
        traces.update(s.trace_id for s in load_file(body))
    tid, root = new_trace_id(), new_span_id()
    spans = [span(tid, "invoke_agent helper", span_id=root, error=True,
                  attributes={"gen_ai.operation.name": "invoke_agent",
                              "gen_ai.agent.name": "helper", "session.id": SLASHED})]
    with httpx.Client() as c:
        r = c.post(f"{server.http}/v1/traces", content=request(spans).SerializeToString(),
                   headers={"content-type": "application/x-protobuf",
                            "trajhub-project": project})
        assert r.status_code == 200
        for trace_id in (*traces, tid.hex()):
            final_trajectory(c, server.http, project, trace_id)


def test_sessions_tab_and_a_session_read_as_a_transcript(server: ServerProcess,
                                                         project: str) -> None:
    from playwright.sync_api import expect

    _ingest(server, project)
    session_id = TRUTH["session_id_by_client"]["openinference"]
    with httpx.Client() as c:
        turns = get_json(c, f"{server.http}/api/v1/sessions/{quote(session_id, safe='')}",
                         project=project)["turns"]
        for turn, value in zip(turns, (1.0, 0.5), strict=True):
            r = c.post(f"{server.http}/api/v1/trajectories/{turn['trace_id']}/scores",
                       json={"name": "correctness", "value": value},
                       headers={"trajhub-project": project})
            assert r.status_code in (200, 201), r.text
    with browser_page(server.http, artifacts_dir("sessions")) as ui:
        page = ui.page
        ui.open(f"#/trajectories?project={project}")
        page.get_by_role("link", name="Sessions", exact=True).click()
        rows = page.locator("#session-table tbody tr")
        # the session id with a slash has no turn after the conversation's (it was sent
        # later, but its run started at the fixed time otlp_builders gives)
        expect(rows).to_have_count(2)
        expect(page.locator("nav a[aria-current=page]")).to_have_text("Sessions")
        row = page.locator(f'#session-table tr[data-session-id="{session_id}"]')
        expect(row.locator("td").nth(1)).to_have_text("2")
        expect(row.locator("td").last).to_have_text(TRUTH["turns"][0]["question"])
        expect(page.locator(f'#session-table tr[data-session-id="{SLASHED}"]')) \
            .to_contain_text("1 failed turn")
        # the mean of the turns' scores, (1.0 + 0.5) / 2
        expect(row.locator("td.scores")).to_have_text("correctness 0.75")
        ui.shot("01-sessions")

        row.get_by_role("link", name=session_id).click()
        transcript = page.locator("#transcript > li")
        expect(transcript).to_have_count(2)
        for i, truth in enumerate(TRUTH["turns"]):
            expect(transcript.nth(i).locator(".msg.role-user .msg-text")) \
                .to_have_text(truth["question"])
            expect(transcript.nth(i).locator(".msg.role-assistant .msg-text")) \
                .to_have_text(truth["answer"])
            expect(transcript.nth(i)).to_have_attribute("data-trace-id", turns[i]["trace_id"])
        expect(page.locator("#session-summary")).to_contain_text("2 turns")
        expect(page.locator("#session-summary")).to_contain_text("correctness 0.75")
        expect(transcript.nth(0).locator(".turn-scores")).to_have_text("correctness 1")
        expect(transcript.nth(1).locator(".turn-scores")).to_have_text("correctness 0.5")
        ui.shot("02-session-transcript")

        transcript.nth(1).get_by_role("link", name="Turn 2").click()
        expect(page.locator("h1")).to_contain_text("assistant")
        assert f"#/trajectories/{turns[1]['trace_id']}" in page.url

        # the score filter: a session with a turn scored 0.9 or more
        ui.open(f"#/sessions?project={project}")
        page.locator("#s-score").fill("correctness>=0.9")
        page.get_by_role("button", name="Apply").click()
        expect(rows).to_have_count(1)
        expect(rows.first).to_have_attribute("data-session-id", session_id)

        # a session id with a slash and a space: its link and page work
        ui.open(f"#/sessions?project={project}")
        page.get_by_role("link", name=SLASHED).click()
        expect(page.locator("#transcript > li")).to_have_count(1)
        expect(page.locator("#transcript > li").first).to_contain_text("failed")
        ui.assert_clean()
