"""The Rules page in a real browser (Debian's Chromium via Playwright): create a rule with the
form, see the server's message for a filter that does not parse, edit it, switch it off and on,
and delete it; REST confirms each change (docs/rules.md)."""

from __future__ import annotations

import httpx
import pytest

from tests.harness import ServerProcess
from tests.ui_support import EXPECTED_FAILURES, artifacts_dir, browser_page, require_browser


@pytest.fixture(autouse=True)
def _browser() -> None:
    require_browser()


def test_the_rules_page_creates_edits_switches_and_deletes_rules(
        server: ServerProcess, project: str) -> None:
    from playwright.sync_api import expect

    api = httpx.Client(base_url=server.http + "/api/v1", headers={"trajhub-project": project})
    with browser_page(server.http, artifacts_dir("rules")) as ui:
        page = ui.page
        ui.open(f"#/rules?project={project}")
        expect(page.locator("#rule-table tbody")).to_contain_text("No rule yet")

        # a filter that does not parse: the server's 400 names it, nothing is created
        ui.submit("#rule-form", {"#rule-name": "budget", "#rule-config": '{"max_steps": 20}',
                                 "#rule-filter": '{"agnt": "planner"}'},
                  options={"#rule-evaluator": "efficiency"})
        expect(page.locator("#rule-status")).to_contain_text("agnt")
        assert api.get("/rules").json()["items"] == []

        ui.submit("#rule-form", {"#rule-filter": '{"agent": "planner"}', "#rule-sample": "0.5"})
        expect(page.locator("#rule-status")).to_contain_text("Rule budget created")
        row = page.locator("#rule-table tbody tr", has_text="budget")
        expect(row).to_contain_text("efficiency")
        expect(row).to_contain_text('{"agent":"planner"}')
        expect(row).to_contain_text("0.5")
        (rule,) = api.get("/rules").json()["items"]
        assert (rule["name"], rule["config"], rule["filter"], rule["sample_rate"],
                rule["enabled"]) == ("budget", {"max_steps": 20}, {"agent": "planner"}, 0.5,
                                     True)
        ui.shot("01-created")

        # edit: the form takes the rule; saving changes what was changed
        assert api.post("/review-queues", json={"name": "triage"}).status_code == 201
        row.locator("button.rule-edit").click()
        expect(page.locator("#rule-name")).to_have_value("budget")
        expect(page.locator("#rule-form button[type=submit]")).to_have_text("Save rule")
        ui.submit("#rule-form", {"#rule-config": '{"max_steps": 12}', "#rule-queue": "triage",
                                 "#rule-fail-below": "0.5"})
        expect(page.locator("#rule-status")).to_contain_text("Rule budget saved")
        edited = api.get(f"/rules/{rule['id']}").json()
        assert (edited["config"], edited["filter"], edited["sample_rate"],
                edited["review_queue"], edited["fail_below"]) == (
            {"max_steps": 12}, {"agent": "planner"}, 0.5, "triage", 0.5)
        expect(page.locator("#rule-form button[type=submit]")).to_have_text("Create rule")
        assert len(api.get("/rules").json()["items"]) == 1

        toggle = row.locator("button.rule-toggle")
        toggle.click()
        expect(row.locator("button.rule-toggle")).to_have_attribute("aria-pressed", "false")
        assert api.get(f"/rules/{rule['id']}").json()["enabled"] is False
        row.locator("button.rule-toggle").click()
        expect(row.locator("button.rule-toggle")).to_have_attribute("aria-pressed", "true")
        assert api.get(f"/rules/{rule['id']}").json()["enabled"] is True
        ui.shot("02-switched")

        row.locator("button.rule-delete").click()
        expect(page.locator("#rule-status")).to_contain_text("deleted")
        expect(page.locator("#rule-table tbody")).to_contain_text("No rule yet")
        assert api.get("/rules").json()["items"] == []
        ui.assert_clean(EXPECTED_FAILURES | {(400, "/api/v1/rules")})
    api.close()
