"""Scores on the trajectory page, in a real browser (Debian's Chromium via Playwright): the
run's own scores in the header, a step's next to that step and in its detail, every score in
the Scores tab; and the trajectory list filtered by a score. The scores are added over REST
with the values written here."""

from __future__ import annotations

import httpx
import pytest

from tests.harness import ServerProcess
from tests.test_scores import agent_run
from tests.ui_support import artifacts_dir, browser_page, require_browser


@pytest.fixture(autouse=True)
def _browser() -> None:
    require_browser()


def test_the_trajectory_page_shows_every_score_and_a_steps_on_that_step(
        server: ServerProcess, project: str) -> None:
    from playwright.sync_api import expect

    trace_id, steps = agent_run(server, project)
    with httpx.Client(base_url=server.http + "/api/v1",
                      headers={"trajhub-project": project}) as api:
        r = api.post(f"/trajectories/{trace_id}/scores", json={"scores": [
            {"name": "correctness", "value": 0.75, "comment": "close enough"},
            {"name": "verdict", "value": "pass"},
            {"name": "tool_ok", "value": False, "step_id": steps["tool"], "source": "human",
             "author": "alice", "comment": "wrong city"},
            {"name": "judge", "source": "evaluator", "evaluator": "llm_judge",
             "error": "the judge answered nonsense"},
            {"name": "plan_ok", "value": 1, "step_id": steps["agent"]}]})
        assert r.status_code == 201, r.text

    with browser_page(server.http, artifacts_dir("scores")) as ui:
        page = ui.page
        ui.open(f"#/trajectories/{trace_id}?project={project}")
        # the header: the run's own scores (the step's is not among them)
        header = page.locator("#run-scores .score-chip")
        expect(header).to_have_count(3)
        assert [header.nth(i).inner_text() for i in range(3)] == [
            "correctness 0.75", "verdict pass", "judge error"]
        assert "close enough" in (header.nth(0).get_attribute("title") or "")

        # the step's score next to that step, and no other step has one
        tool_row = page.locator(f'#step-table tr[data-step-id="{steps["tool"]}"]')
        expect(tool_row.locator(".score-chip")).to_have_text("tool_ok false")
        # the agent's score on its lane's heading
        agent_chip = page.locator(f'#step-table tr.group [data-scores-of="{steps["agent"]}"] '
                                  '.score-chip')
        expect(agent_chip).to_have_text("plan_ok 1")
        expect(page.locator("#step-table .score-chip")).to_have_count(2)
        title = tool_row.locator(".score-chip").get_attribute("title") or ""
        assert "human (alice)" in title and "wrong city" in title
        ui.shot("01-header-and-step")

        # its detail lists it too
        tool_row.locator(".step-button").click()
        expect(page.locator("#step-detail-scores .score-chip")).to_have_text("tool_ok false")
        chat_row = page.locator(f'#step-table tr[data-step-id="{steps["chat"]}"]')
        chat_row.locator(".step-button").click()
        expect(page.locator("#step-detail-scores")).to_have_count(0)

        # the Scores tab: every score, the step's named by its step
        page.get_by_role("tab", name="Scores").click()
        rows = page.locator("#score-table tbody tr")
        expect(rows).to_have_count(5)
        cells = [rows.nth(i).locator("td") for i in range(5)]
        assert [(c.nth(0).inner_text(), c.nth(1).inner_text()) for c in cells] == [
            ("correctness", "0.75"), ("verdict", "pass"), ("tool_ok", "false"),
            ("judge", "error: the judge answered nonsense"), ("plan_ok", "1")]
        assert cells[2].nth(2).inner_text().splitlines() == ["get_weather", steps["tool"]]
        assert cells[0].nth(2).inner_text() == "the run"
        assert cells[3].nth(3).inner_text() == "evaluator llm_judge"
        assert cells[2].nth(3).inner_text() == "human (alice)"
        ui.shot("02-scores-tab")
        ui.assert_clean()


def test_the_trajectory_list_filters_by_a_score(server: ServerProcess, project: str) -> None:
    from playwright.sync_api import expect

    good, _ = agent_run(server, project, 1_700_000_000_000_000_000)
    bad, _ = agent_run(server, project, 1_700_000_001_000_000_000)
    with httpx.Client(base_url=server.http + "/api/v1",
                      headers={"trajhub-project": project}) as api:
        for trace_id, value in ((good, 0.9), (bad, 0.1)):
            assert api.post(f"/trajectories/{trace_id}/scores",
                            json={"name": "quality", "value": value}).status_code == 201

    with browser_page(server.http, artifacts_dir("scores")) as ui:
        page = ui.page
        ui.open(f"#/trajectories?project={project}")
        expect(page.locator("#trajectory-table tbody tr")).to_have_count(2)
        page.locator("#f-score").fill("quality<=0.5")
        page.get_by_role("button", name="Apply").click()
        rows = page.locator("#trajectory-table tbody tr")
        expect(rows).to_have_count(1)
        assert rows.first.get_attribute("data-trace-id") == bad
        # and sorted by it, from the address
        ui.open(f"#/trajectories?project={project}&sort=score:quality&order=asc")
        expect(page.locator("#trajectory-table tbody tr")).to_have_count(2)
        ids = [page.locator("#trajectory-table tbody tr").nth(i).get_attribute("data-trace-id")
               for i in range(2)]
        assert ids == [bad, good]
        ui.shot("03-list-by-score")
        ui.assert_clean()
