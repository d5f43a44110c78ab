"""Open trajectories refresh in the UI until they are final.

A trace whose root span has not arrived stays open (docs/trajectory-rules.md §6: final once the root
has ended and the settle period passed); when the root arrives, the trajectory is re-derived and
becomes final. The pages must show that without the user reloading them."""

from __future__ import annotations

import httpx
import pytest

from tests import otlp_builders as b
from tests.harness import ServerProcess, wait_for
from tests.ui_support import artifacts_dir, browser_page, require_browser

T0 = 1_700_000_000_000_000_000
MS = 1_000_000


@pytest.fixture(autouse=True)
def _browser() -> None:
    require_browser()


def chat(trace: bytes, parent: bytes, start: int) -> object:
    return b.span(trace, "chat m", parent=parent, start=start, duration=10 * MS, attributes={
        "gen_ai.operation.name": "chat", "gen_ai.request.model": "m",
        "gen_ai.usage.input_tokens": 10, "gen_ai.usage.output_tokens": 1})


def open_trace(server: ServerProcess, project: str) -> tuple[bytes, bytes]:
    """A sub-agent with one model call, whose root (the supervisor's run) has not arrived."""
    trace, root, helper = b.new_trace_id(), b.new_span_id(), b.new_span_id()
    b.post_spans(server.http, project, [
        b.span(trace, "invoke_agent helper", span_id=helper, parent=root, start=T0 + 10 * MS,
               duration=30 * MS, attributes={"gen_ai.operation.name": "invoke_agent",
                                            "gen_ai.agent.name": "helper"}),
        chat(trace, helper, T0 + 20 * MS)])

    def is_open() -> bool:
        r = httpx.get(f"{server.http}/api/v1/trajectories/{trace.hex()}",
                      params={"project": project})
        return r.status_code == 200 and r.headers["x-trajectory-status"] == "open"

    wait_for(is_open, what="an open trajectory")
    return trace, root


def finish(server: ServerProcess, project: str, trace: bytes, root: bytes) -> None:
    """The supervisor's run arrives, with a model call of its own."""
    b.post_spans(server.http, project, [
        b.span(trace, "invoke_agent supervisor", span_id=root, start=T0, duration=100 * MS,
               attributes={"gen_ai.operation.name": "invoke_agent",
                           "gen_ai.agent.name": "supervisor"}),
        chat(trace, root, T0 + 50 * MS)])


def test_list_and_trajectory_follow_an_open_run_until_final(server: ServerProcess,
                                                            project: str) -> None:
    from playwright.sync_api import expect

    listed_trace, listed_root = open_trace(server, project)
    with browser_page(server.http, artifacts_dir("live-refresh")) as ui:
        page = ui.page
        ui.open(f"#/trajectories?project={project}")
        row = page.locator(f'tr[data-trace-id="{listed_trace.hex()}"]')
        expect(row.locator(".badge")).to_have_text("open")
        expect(page.locator(".summary")).to_contain_text("1 open, refreshing")
        ui.shot("01-list-open")
        finish(server, project, listed_trace, listed_root)
        expect(row.locator(".badge")).to_have_text("final", timeout=20_000)
        expect(row).to_contain_text("2 model · 0 tool")
        ui.shot("02-list-final")

        trace, root = open_trace(server, project)
        ui.open(f"#/trajectories/{trace.hex()}?project={project}")
        expect(page.locator("h1 .badge")).to_have_text("open")
        lanes = page.locator(".timeline .lane-name")
        expect(lanes).to_have_text(["helper"])
        expect(page.locator("#totals")).to_contain_text("10 in → 1 out")
        finish(server, project, trace, root)
        expect(page.locator("h1 .badge")).to_have_text("final", timeout=20_000)
        # the supervisor's lane, with the helper nested under it; tokens of both model calls
        expect(lanes).to_have_text(["supervisor", "↳ helper"])
        expect(page.locator("#totals")).to_contain_text("20 in → 2 out")
        page.get_by_role("tab", name="Revisions").click()
        revisions = page.locator("#revisions tbody tr")
        expect(revisions).to_have_count(2)
        expect(revisions.first).to_contain_text("final")
        ui.shot("03-trajectory-final")
        ui.assert_clean()


def test_a_trajectory_page_waits_for_a_trace_that_has_not_arrived(server: ServerProcess,
                                                                   project: str) -> None:
    from playwright.sync_api import expect

    trace, root = b.new_trace_id(), b.new_span_id()
    with browser_page(server.http, artifacts_dir("live-refresh")) as ui:
        page = ui.page
        ui.open(f"#/trajectories/{trace.hex()}?project={project}")
        expect(page.locator(".notice")).to_contain_text("No trajectory for trace")
        ui.shot("04-not-yet")
        finish(server, project, trace, root)
        expect(page.locator(".timeline .lane-name")).to_have_text(["supervisor"],
                                                                  timeout=20_000)
        ui.assert_clean({(404, f"/api/v1/trajectories/{trace.hex()}/steps"),
                         (404, "/api/v1/projects")})
