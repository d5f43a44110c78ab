"""A large trajectory in the web UI (issue 20, docs/large-traces.md): a run of 2,500 steps opens
on its first rows, its step table holds only the rows in view, and scrolling to the end loads
and shows its last step, which opens with its payloads. The names and counts are the script's
(tests/test_large_trajectories.py's run)."""

from __future__ import annotations

import httpx
import pytest

from tests.harness import ServerProcess, final_trajectory
from tests.otlp_builders import request
from tests.test_large_trajectories import PB, agent_run
from tests.ui_support import artifacts_dir, browser_page, require_browser

STEPS = 2_500


@pytest.fixture(autouse=True)
def _browser() -> None:
    require_browser()


def test_large_run_shows_its_first_rows_and_scrolls_to_its_last(server: ServerProcess,
                                                                project: str) -> None:
    from playwright.sync_api import expect

    tid, spans, ids, _ = agent_run(STEPS)
    with httpx.Client(timeout=60) as c:
        r = c.post(f"{server.http}/v1/traces", content=request(spans).SerializeToString(),
                   headers={**PB, "trajhub-project": project})
        assert r.status_code == 200, r.text
        final_trajectory(c, server.http, project, tid.hex())

    with browser_page(server.http, artifacts_dir("large-trajectory")) as ui:
        page = ui.page
        ui.open(f"#/trajectories/{tid.hex()}?project={project}")
        rows = page.locator("#step-table tbody tr[data-step-id]")
        expect(rows.first).to_have_attribute("data-step-id", ids[0])
        expect(page.locator("#totals")).to_contain_text(f"{STEPS} (1250 model · 1250 tool)")
        # the failed tool calls are counted without loading their steps (every 200th)
        expect(page.locator("#totals")).to_contain_text("Failed steps12")
        expect(page.locator(".timeline .lane:not(.axis)")).to_have_count(1)
        expect(page.locator(".timeline .lane:not(.axis) .lane-label")).to_contain_text(
            f"{STEPS} steps")
        # only the rows in view are drawn, not one per step
        assert rows.count() < 100
        ui.shot("01-first-rows")

        page.locator("#step-scroller").evaluate("(box) => { box.scrollTop = box.scrollHeight; }")
        last = page.locator(f'#step-table tr[data-step-id="{ids[-1]}"]')
        expect(last).to_contain_text(f"tool_{STEPS - 1}")
        expect(last.locator("td").first).to_have_text(str(STEPS))
        # the lane shows the bars of the rows in view
        expect(page.locator(f'.timeline .bar[data-step-id="{ids[-1]}"]')).to_have_count(1)
        last.locator(".step-button").click()
        expect(page.locator("#step-detail h2")).to_contain_text(f"tool_{STEPS - 1}")
        expect(page.locator("#step-detail")).to_contain_text(f'"n": {STEPS - 1}')
        # the keyboard walks up from there, the rows following
        page.keyboard.press("ArrowUp")
        expect(page.locator("#step-detail h2")).to_contain_text("chat")
        ui.shot("02-last-row")
        ui.assert_clean()
