"""The web UI's interrupted runs (docs/trajectory-rules.md, "Interrupted runs"): the trajectory
list badges a run LangGraph's interrupt() ended and filters on it, its page names the
interrupting tool and its payload, and a session whose latest turn is interrupted shows it
waiting for a person, and the session list filters on it.

Data: the captured `interrupt_resume` thread under OpenInference (an interrupted run, then its
resumption: its session is not waiting) and one hand-built interrupted run in a session of its
own (waiting)."""

from __future__ import annotations

import pytest

from tests.captures import replay_run
from tests.harness import ServerProcess, final_trajectories
from tests.otlp_builders import interrupted_run_spans, new_trace_id, post_spans
from tests.ui_support import artifacts_dir, browser_page, require_browser

RUN = "openinference/interrupt_resume.prebuilt.stream"
WAITING = "s-waiting"
T0 = 1_700_000_000_000_000_000


@pytest.fixture(autouse=True)
def _browser() -> None:
    require_browser()


def _ingest(server: ServerProcess, project: str) -> None:
    traces = list(replay_run(RUN, server.http, server.grpc, project))
    tid = new_trace_id()
    post_spans(server.http, project, interrupted_run_spans(tid, "helper", WAITING, T0))
    final_trajectories(server.http, project, [*traces, tid.hex()])


def test_interrupted_badge_filter_page_and_waiting_session(server: ServerProcess,
                                                           project: str) -> None:
    from playwright.sync_api import expect

    _ingest(server, project)
    with browser_page(server.http, artifacts_dir("interrupts")) as ui:
        page = ui.page
        ui.open(f"#/trajectories?project={project}")
        rows = page.locator("table tbody tr[data-trace-id]")
        expect(rows).to_have_count(3)
        expect(page.locator("tbody .badge-interrupted")).to_have_count(2)
        page.locator("#f-interrupted").select_option("true")
        page.get_by_role("button", name="Apply").click()
        expect(rows).to_have_count(2)
        page.locator("#f-interrupted").select_option("false")
        page.get_by_role("button", name="Apply").click()
        expect(rows).to_have_count(1)
        expect(page.locator("tbody .badge-interrupted")).to_have_count(0)
        ui.shot("01-list")

        page.locator("#f-interrupted").select_option("true")
        page.get_by_role("button", name="Apply").click()
        page.get_by_role("link", name="assistant").click()
        box = page.locator("#interrupt")
        expect(box).to_contain_text("book_flight")
        expect(box.locator(".interrupt-payload")).to_contain_text("Book a flight to Paris?")
        expect(page.locator("h1 .badge-interrupted")).to_have_text("interrupted")
        ui.shot("02-page")

        ui.open(f"#/sessions?project={project}")
        waiting = page.locator(f'#session-table tr[data-session-id="{WAITING}"]')
        expect(waiting.locator(".badge-waiting")).to_have_text("waiting for a person")
        expect(page.locator("#session-table .badge-waiting")).to_have_count(1)
        session_rows = page.locator("#session-table tbody tr[data-session-id]")
        expect(session_rows).to_have_count(2)
        page.locator("#s-waiting").select_option("true")
        page.get_by_role("button", name="Apply").click()
        expect(session_rows).to_have_count(1)
        expect(waiting).to_have_count(1)
        ui.shot("03-sessions")
        page.locator("#s-waiting").select_option("false")
        page.get_by_role("button", name="Apply").click()
        expect(session_rows).to_have_count(1)
        expect(waiting).to_have_count(0)
        ui.assert_clean()
