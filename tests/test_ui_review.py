"""The review screen, in a real browser (Debian's Chromium via Playwright), by keyboard only: a
queue of 3 runs asking for a boolean (`correct`: y/n) and a number from 1 to 5 (`quality`:
digits) is walked with n (next), the score keys, c (comment), Esc and Enter (complete); the
scores stored on each run are then read over REST and compared with the keys pressed."""

from __future__ import annotations

import httpx
import pytest

from tests.harness import ServerProcess
from tests.test_review import T0, send_run
from tests.ui_support import artifacts_dir, browser_page, require_browser


@pytest.fixture(autouse=True)
def _browser() -> None:
    require_browser()


def test_a_queue_of_three_runs_is_reviewed_by_keyboard(server: ServerProcess,
                                                       project: str) -> None:
    from playwright.sync_api import expect

    with httpx.Client(timeout=30) as c:
        runs = [send_run(c, server.http, project, agent, T0 + i * 1_000_000_000)
                for i, agent in enumerate(["support", "billing", "support"])]
    with httpx.Client(base_url=server.http + "/api/v1", timeout=30,
                      headers={"trajhub-project": project}) as api:
        api.put("/score-configs/correct", json={"data_type": "boolean"})
        api.put("/score-configs/quality", json={"data_type": "number", "min": 1, "max": 5})
        r = api.post("/review-queues", json={"name": "walk", "description": "three runs",
                                             "score_names": ["correct", "quality"]})
        assert r.status_code == 201, r.text
        r = api.post("/review-queues/walk/items", json={"trace_ids": runs})
        assert r.json()["added"] == runs

    # what each run gets: (keys for correct, keys for quality, a comment or None)
    plan = [("y", "4", "names the right refund policy"), ("n", "2", None), ("y", "5", None)]
    with browser_page(server.http, artifacts_dir("review")) as ui:
        page = ui.page
        ui.open(f"#/review?project={project}")
        expect(page.locator('#queue-table tr[data-queue="walk"]')).to_be_visible()
        page.locator('#queue-table a', has_text="walk").click()
        expect(page.locator("#review-progress")).to_contain_text("3 items: 0 done")
        # without a key the server asks for the reviewer's name: type it once
        page.locator("#review-author").fill("rita")
        page.locator("#review-author").press("Tab")
        page.locator("body").click(position={"x": 5, "y": 5})

        for i, (correct, quality, comment) in enumerate(plan):
            page.keyboard.press("n")
            expect(page.locator("#review-trace")).to_have_text(runs[i])
            # the run's input, output and steps are shown
            expect(page.locator("#review-steps tr")).to_have_count(1)
            expect(page.locator("#review-steps")).to_contain_text("lookup")
            if i == 0:
                # Enter before every score is given names the missing ones
                page.keyboard.press("Enter")
                expect(page.locator("#review-message")).to_contain_text("correct, quality")
                ui.shot("01-item")
            page.keyboard.press(correct)
            page.keyboard.press(quality)
            expect(page.locator('[data-value-of="correct"]')).to_have_text(
                "true" if correct == "y" else "false")
            expect(page.locator('[data-value-of="quality"]')).to_have_text(quality)
            if comment:
                page.keyboard.press("c")
                expect(page.locator("#review-comment")).to_be_focused()
                page.keyboard.type(comment)
                page.keyboard.press("Escape")
            page.keyboard.press("Enter")
            expect(page.locator("#review-message")).to_contain_text(f"Completed {runs[i]}")
            expect(page.locator("#review-progress")).to_contain_text(f"{i + 1} done")

        page.keyboard.press("n")
        expect(page.locator("#review-item")).to_contain_text("Nothing left to review")
        expect(page.locator("#review-progress")).to_contain_text(
            "3 items: 3 done, 0 skipped, 0 in review, 0 waiting")
        ui.shot("02-done")
        ui.assert_clean()

    with httpx.Client(base_url=server.http + "/api/v1", timeout=30,
                      headers={"trajhub-project": project}) as api:
        for run, (correct, quality, _) in zip(runs, plan, strict=True):
            scores = api.get(f"/trajectories/{run}/scores").json()["items"]
            assert sorted((s["name"], s["value"], s["source"], s["author"]) for s in scores) == [
                ("correct", correct == "y", "human", "rita"),
                ("quality", float(quality), "human", "rita")]
        items = api.get("/review-queues/walk/items").json()["items"]
        assert [(i["trace_id"], i["status"], i["reviewer"], i["comment"]) for i in items] == [
            (run, "done", "rita", comment) for run, (_, _, comment) in zip(runs, plan,
                                                                          strict=True)]
