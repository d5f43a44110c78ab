"""Runs with no steps (an instrumentation's side traces, such as Traceloop's `create_agent`)
are hidden from the trajectory list by default, behind a visible toggle: the list is the page
people open first, and runs without a step there only hide the ones they came for."""

from __future__ import annotations

import httpx
import pytest

from tests.captures import replay_run
from tests.harness import ServerProcess, final_trajectory, get_json
from tests.ui_support import artifacts_dir, browser_page, require_browser

#: Traceloop's capture of the ReAct run sends two traces: the run (26 spans) and the one
#: `create_agent react_agent` span it emits when the graph is built (tests/capture/README.md)
RUN = "traceloop/react.prebuilt.stream"


@pytest.fixture(autouse=True)
def _browser() -> None:
    require_browser()


def test_runs_without_steps_are_hidden_until_the_toggle_shows_them(
        server: ServerProcess, project: str) -> None:
    from playwright.sync_api import expect

    spans = replay_run(RUN, server.http, server.grpc, project)
    side, run = sorted(spans, key=lambda t: spans[t])
    assert spans[side] == 1 and spans[run] > 1
    with httpx.Client() as client:
        for trace_id in (side, run):
            final_trajectory(client, server.http, project, trace_id)
        # the filter the toggle uses, over REST
        without = get_json(client, f"{server.http}/api/v1/trajectories", project=project,
                           has_steps="false")
        assert [t["trace_id"] for t in without["items"]] == [side]

    with browser_page(server.http, artifacts_dir("empty-runs")) as ui:
        page = ui.page
        ui.open(f"#/trajectories?project={project}")
        rows = page.locator("#trajectory-table tbody tr")
        expect(rows).to_have_count(1)
        expect(rows.first).to_have_attribute("data-trace-id", run)
        toggle = page.get_by_label("Show runs without steps")
        expect(toggle).to_be_visible()
        expect(toggle).not_to_be_checked()
        ui.shot("01-hidden")
        toggle.check()
        page.get_by_role("button", name="Apply").click()
        expect(rows).to_have_count(2)
        expect(page.locator(f'#trajectory-table tbody tr[data-trace-id="{side}"]')).to_have_count(1)
        assert "empty=show" in page.url
        ui.shot("02-shown")
        ui.assert_clean()
