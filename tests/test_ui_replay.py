"""The replay views of the web UI in a real browser (Debian's Chromium via Playwright): a
trajectory's playback, contract and cost, the compare page of two runs that diverge at a known
step, and the regression report of two evaluated runs of one set, with links to the trajectories
and to the comparison of each item.

Ground truth is the scripted model's scripts: tests/fake_agent.py (`react`: model → get_weather
and add → model → divide(1, 0) fails → model, tokens 120/30, 180/18, 230/25), tests/replay_agent.py
(`no_divide`: the same first turn, then the answer — it never calls divide) and the calculator
of tests/test_replay_regressions.py (v2 asks the model again for "2+3": two extra steps, 16 extra
tokens, priced at gpt-4o-mini's list price).
"""

from __future__ import annotations

import hashlib
from typing import Any

import httpx
import pytest
from opentelemetry.sdk.trace import TracerProvider

from tests import fake_agent
from tests.harness import ServerProcess, final_trajectory
from tests.test_replay_api import SYSTEM_PROMPT, run_agent
from tests.test_replay_regressions import IN_USD, OUT_USD, two_runs
from tests.ui_support import EXPECTED_FAILURES, artifacts_dir, browser_page, require_browser

#: the model and tool steps of `react`, in order; the two tool calls of the first turn run in
#: parallel, so their order is compared as a set
REACT_STEPS = [("model", None), ("tool", {"add", "get_weather"}), ("tool", {"add", "get_weather"}),
               ("model", None), ("tool", {"divide"}), ("model", None)]


@pytest.fixture(autouse=True)
def _browser() -> None:
    require_browser()


def visible_events(page: Any) -> list[dict[str, str]]:
    """The playback as shown: each event's seq, type, name, agent and whether it is marked
    failed."""
    out = []
    items = page.locator("#playback > li")
    for i in range(items.count()):
        li = items.nth(i)
        out.append({"seq": li.get_attribute("data-seq") or "",
                    "type": li.locator(".type").inner_text(),
                    "name": li.locator(".event-name").inner_text(),
                    "agent": li.locator(".event-agent").inner_text(),
                    "failed": "failed" in (li.get_attribute("class") or "")})
    return out


def test_playback_contract_cost_and_compare_of_runs_diverging_at_a_known_step(
        server: ServerProcess, project: str) -> None:
    from playwright.sync_api import expect

    a = run_agent(server, project, "react")["trace_id"]
    b = run_agent(server, project, "no_divide")["trace_id"]
    unknown_price = f"unknown (no price for {fake_agent.MODEL_NAME})"
    with browser_page(server.http, artifacts_dir("replay-compare")) as ui:
        page = ui.page
        # the list shows each run's cost: the scripted model is in no price table
        ui.open(f"#/trajectories?project={project}")
        row = page.locator(f'#trajectory-table tr[data-trace-id="{a}"]')
        expect(row.locator("td.cost")).to_have_text(unknown_price)

        row.get_by_role("link").first.click()
        expect(page.locator("#totals")).to_contain_text(a)
        expect(page.locator("#total-cost")).to_have_text(unknown_price)

        # playback: every event in order, each naming its agent; the divide call failed
        page.get_by_role("tab", name="Playback").click()
        expect(page.locator("#playback-summary")).to_contain_text("1 failed")
        shown = visible_events(page)
        assert [e["seq"] for e in shown] == [str(i) for i in range(len(shown))]
        steps = [e for e in shown if e["type"] in ("model", "tool")]
        assert len(steps) == len(REACT_STEPS)
        for event, (kind, names) in zip(steps, REACT_STEPS, strict=True):
            assert event["type"] == kind
            assert names is None or event["name"] in names
            assert event["agent"] == "LangGraph"
        assert {steps[1]["name"], steps[2]["name"]} == {"add", "get_weather"}
        assert [e["failed"] for e in steps] == [False] * 4 + [True, False]
        assert not any(e["failed"] for e in shown if e["type"] not in ("model", "tool"))
        models = page.locator("#playback > li").filter(has=page.locator(".type-model"))
        expect(models).to_have_count(3)
        expect(models.nth(0).locator("summary")).to_contain_text("120 → 30 tok")
        expect(models.nth(2).locator("summary")).to_contain_text("230 → 25 tok")
        expect(models.nth(0).locator("summary")).to_contain_text("cost unknown")
        ui.shot("01-playback")

        # open the failed event: its error and its arguments
        divide = page.locator("#playback > li.failed")
        expect(divide).to_have_count(1)
        divide.locator("summary").click()
        expect(divide.locator(".error-box")).to_contain_text("ZeroDivisionError")
        expect(divide.locator("pre").first).to_contain_text('"b": 0')
        ui.shot("02-playback-failed-event")

        # contract: the model, the system prompt's hash and the temperature with their
        # sources; nothing recorded a seed
        page.get_by_role("tab", name="Contract").click()
        contract = page.locator("#contract-table")
        model = contract.locator('tr[data-field="model_names"]')
        expect(model).to_have_count(1)
        expect(model.locator("td").first).to_have_text(fake_agent.MODEL_NAME)
        assert model.locator("td").nth(1).inner_text().strip()
        prompt_hash = "sha256:" + hashlib.sha256(SYSTEM_PROMPT.encode()).hexdigest()
        expect(contract.locator('tr[data-field="system_prompt_hash"] td').first
               ).to_have_text(prompt_hash)
        expect(contract.locator('tr[data-field="sampling.temperature"] td').first).to_have_text("0")
        expect(contract.locator('tr[data-field="sampling.seed"]')).to_contain_text("unknown")
        expect(contract.locator('tr[data-field="framework"] td').first).to_have_text("langgraph")
        ui.shot("03-contract")

        # cost per agent and per model step: 3 model steps, none priced
        page.get_by_role("tab", name="Cost").click()
        expect(page.locator("#run-cost")).to_contain_text(unknown_price)
        expect(page.locator("#run-cost")).to_contain_text(f"{120 + 180 + 230} in → "
                                                          f"{30 + 18 + 25} out")
        expect(page.locator("#step-cost-table tbody tr")).to_have_count(3)
        expect(page.locator("#agent-cost-table tbody")).to_contain_text("LangGraph")
        # the script's cache reads (64 + 96) and writes (16), and reasoning (12 + 4)
        expect(page.locator("#run-cost")).to_contain_text(
            "of the input, 160 read from and 16 written to the prompt cache")
        expect(page.locator("#run-cost")).to_contain_text("of the output, 16 reasoning")
        # nothing priced: the view names the price source configured, with its date
        expect(page.locator("#price-sources")).to_contain_text(
            "genai-prices 0.2.3, data of 2026-11-10")
        ui.shot("04-cost")

        # compare with the run that never calls divide: the project's other runs are offered
        page.get_by_label("Compare with…").focus()
        expect(page.locator(f'#compare-candidates option[value="{b}"]')).to_have_count(1)
        expect(page.locator(f'#compare-candidates option[value="{a}"]')).to_have_count(0)
        page.get_by_label("Compare with…").fill(b)
        page.get_by_role("button", name="Compare", exact=True).click()
        expect(page.locator("#first-divergence")).to_contain_text(
            "First divergence at position 4: deleted")
        expect(page.locator("#first-divergence")).to_contain_text("tool divide")
        pairs = page.locator("#alignment tbody tr")
        expect(pairs).to_have_count(6)
        assert [pairs.nth(i).get_attribute("data-op") for i in range(6)] == (
            ["same"] * 4 + ["deleted"] * 2)
        first = page.locator("#alignment tr.first-divergence")
        expect(first).to_have_count(1)
        expect(first).to_have_attribute("data-position", "4")
        expect(first).to_contain_text("divide")
        expect(first).to_contain_text("first divergence")
        expect(page.locator("#compare-counts")).to_have_text(
            "4 same · 0 changed · 0 inserted · 2 deleted · edit distance 2")
        metrics = page.locator("#compare-metrics")
        expect(metrics.locator('tr[data-metric="path_length"] td.delta')).to_have_text("−2")
        expect(metrics.locator('tr[data-metric="tool_calls"] td.delta')).to_have_text("−1")
        expect(metrics.locator('tr[data-metric="failed_steps"] td.delta')).to_have_text("−1")
        expect(metrics.locator('tr[data-metric="input_tokens"] td.delta')).to_have_text("−230")
        expect(metrics.locator('tr[data-metric="output_tokens"] td.delta')).to_have_text(
            f"−{(30 + 18 + 25) - (30 + 16)}")
        expect(metrics.locator('tr[data-metric="cost_usd"] td.delta')).to_contain_text("unknown")
        # the keyboard reaches the divergence from its note
        page.get_by_role("link", name="Go to it in the alignment").press("Enter")
        expect(first).to_be_focused()
        ui.shot("05-compare")

        # the page by its address alone, the runs swapped: now b lacks nothing, a has more
        ui.open(f"#/compare?a={b}&b={a}&project={project}")
        expect(page.locator("#first-divergence")).to_contain_text("position 4: inserted")
        expect(page.locator("#compare-metrics tr[data-metric='path_length'] td.delta")
               ).to_have_text("+2")
        # a step of a run links to it on its trajectory page
        page.locator("#alignment tr.first-divergence").get_by_role("link", name="divide").click()
        expect(page.locator("#totals")).to_contain_text(a)
        expect(page.locator("#step-detail")).to_contain_text("divide")
        ui.assert_clean()


def test_regression_report_from_the_evaluations_page(
        server: ServerProcess, project: str, provider: TracerProvider) -> None:
    from playwright.sync_api import expect

    ids, v1, v2 = two_runs(server, project, provider)
    # one model call at gpt-4o-mini's price: 12 × $0.15 + 4 × $0.60 per 1M tokens
    assert round(12 * IN_USD + 4 * OUT_USD, 12) == 0.0000042

    with browser_page(server.http, artifacts_dir("regression-report")) as ui:
        page = ui.page
        ui.open(f"#/evaluations?project={project}")
        expect(page.locator("#evaluation-table tbody tr")).to_have_count(2)
        # the newest run against the one before it
        expect(page.get_by_label("Baseline")).to_have_value(str(v1.evaluation.id))
        expect(page.get_by_label("Candidate")).to_have_value(str(v2.evaluation.id))
        ui.shot("01-evaluations")
        page.get_by_role("button", name="Show regression report").click()

        verdicts = page.locator("#verdict-table")
        path = verdicts.locator('tr[data-metric="path_length"]')
        expect(path.locator("td")).to_have_text(["worse", "0", "1", "1", "0"])
        expect(verdicts.locator('tr[data-metric="cost_usd"] td').first).to_have_text("worse")
        expect(verdicts.locator('tr[data-metric="failed_steps"] td')).to_have_text(
            ["same", "0", "2", "0", "0"])
        expect(verdicts.locator('tr[data-metric="efficiency.passed"] td').first
               ).to_have_text("worse")
        items = page.locator("#regression-items tbody tr")
        expect(items).to_have_count(2)
        assert [items.nth(i).get_attribute("data-item-id") for i in range(2)] == ids
        longer, same = items.nth(0), items.nth(1)
        cells = longer.locator("td")
        # item, baseline, candidate, Δ path, tool calls, retries, tokens, cost
        expect(cells.nth(3)).to_have_text("+2")
        expect(cells.nth(4)).to_have_text("+1")
        expect(cells.nth(5)).to_have_text("0")
        expect(cells.nth(6)).to_have_text("+16")
        expect(cells.nth(7)).to_have_text("+$0.0000042")
        expect(longer).to_contain_text("efficiency: pass → fail")
        expect(longer).to_contain_text("#2 inserted model")
        expect(same).to_contain_text("same steps")
        expect(same.locator("td").nth(3)).to_have_text("0")
        ui.shot("02-regression-report")

        # each item links to its two trajectories …
        longer.get_by_role("link", name=f"baseline trajectory {v1.items[0].trace_id}").click()
        expect(page.locator("#totals")).to_contain_text(v1.items[0].trace_id)
        expect(page.locator("#total-cost")).to_have_text("$0.0000042")
        ui.shot("03-baseline-trajectory")
        page.go_back()
        longer = page.locator(f'#regression-items tr[data-item-id="{ids[0]}"]')
        longer.get_by_role("link", name=f"candidate trajectory {v2.items[0].trace_id}").click()
        expect(page.locator("#totals")).to_contain_text(v2.items[0].trace_id)
        expect(page.locator("#total-cost")).to_have_text("$0.0000084")
        page.go_back()

        # … and to their comparison: the candidate asks the model again after `add`
        page.locator(f'#regression-items tr[data-item-id="{ids[0]}"]').get_by_role(
            "link", name="compare").click()
        expect(page.locator("#first-divergence")).to_contain_text(
            "First divergence at position 2: inserted")
        expect(page.locator("#alignment tbody tr")).to_have_count(4)
        expect(page.locator("#alignment tr.first-divergence")).to_have_attribute("data-op",
                                                                                 "inserted")
        ui.shot("04-item-compare")

        # the same report by run names over the set, through the form
        page.get_by_role("link", name="Evaluations", exact=True).first.click()
        page.get_by_role("link", name="By run name…").click()
        page.get_by_role("group", name="Baseline").get_by_label("Run name").fill("v1")
        page.get_by_role("group", name="Candidate").get_by_label("Run name").fill("v2")
        page.get_by_label("Dataset (for run names)").fill("sums")
        page.get_by_role("button", name="Compare").click()
        expect(page.locator("#regression-items tbody tr")).to_have_count(2)
        expect(page.locator('#verdict-table tr[data-metric="path_length"] td').first
               ).to_have_text("worse")
        expect(page.locator("#regression-sides")).to_contain_text("run v1")
        assert "baseline_run=v1" in page.url and "dataset=sums" in page.url

        # run names without their set: the API's reason, shown
        ui.open(f"#/regressions?baseline_run=v1&candidate_run=v2&project={project}")
        expect(page.get_by_role("alert")).to_contain_text("Cannot compare")
        expect(page.get_by_role("alert")).to_contain_text("dataset")
        ui.assert_clean(expected_failures=EXPECTED_FAILURES | {(422, "/api/v1/regressions")})


def test_playback_names_each_agent_and_cost_is_per_agent(server: ServerProcess,
                                                         project: str) -> None:
    """The supervisor of test_ui_nested_agents: supervisor chat gpt-4o (100 in / 10 out),
    researcher chat gpt-4o-mini (40 / 4) and a failed search_web, supervisor chat gpt-4o
    (50 / 5). List prices per 1M tokens: gpt-4o $2.50 in / $10 out, gpt-4o-mini $0.15 / $0.60."""
    from playwright.sync_api import expect

    from tests.test_ui_nested_agents import run_supervisor

    trace_id = run_supervisor(server, project)
    with httpx.Client() as c:
        final_trajectory(c, server.http, project, trace_id)
    supervisor = (150 * 2.50 + 15 * 10.00) / 1e6
    researcher = (40 * 0.15 + 4 * 0.60) / 1e6
    assert (supervisor, researcher) == pytest.approx((0.000525, 0.0000084))
    with browser_page(server.http, artifacts_dir("replay-multi-agent")) as ui:
        page = ui.page
        ui.open(f"#/trajectories/{trace_id}?tab=playback&project={project}")
        expect(page.locator("#playback-summary")).to_contain_text("1 failed")
        shown = [e for e in visible_events(page) if e["type"] in ("model", "tool")]
        assert [(e["type"], e["name"], e["agent"], e["failed"]) for e in shown] == [
            ("model", "chat gpt-4o", "supervisor", False),
            ("model", "chat gpt-4o-mini", "researcher", False),
            ("tool", "search_web", "researcher", True),
            ("model", "chat gpt-4o", "supervisor", False)]
        # one agent's events only
        page.get_by_label("Agent", exact=True).select_option("researcher")
        visible = page.locator("#playback > li:visible")
        expect(visible.filter(has=page.locator(".type-model, .type-tool"))).to_have_count(2)
        expect(visible.locator(".event-name")).to_contain_text(["chat gpt-4o-mini",
                                                                "search_web"])
        for name in visible.locator(".event-agent").all_inner_texts():
            assert name == "researcher"
        page.get_by_label("Agent", exact=True).select_option("")
        expect(page.locator("#playback > li:visible")).to_have_count(
            page.locator("#playback > li").count())
        failed = page.locator("#playback > li.failed")
        failed.locator("summary").click()
        expect(failed.locator(".error-box")).to_contain_text("search backend timed out")
        expect(failed.locator(".event-body")).to_contain_text("agent path: supervisor › researcher")
        ui.shot("01-playback")

        page.get_by_role("tab", name="Cost").click()
        expect(page.locator("#run-cost")).to_contain_text("$0.0005334")
        agents = page.locator("#agent-cost-table tbody tr")
        expect(agents).to_have_count(2)
        expect(agents.filter(has_text="supervisor").locator("td").last).to_have_text("$0.000525")
        expect(agents.filter(has_text="researcher").locator("td").last).to_have_text("$0.0000084")
        expect(page.locator("#step-cost-table tbody tr")).to_have_count(3)
        expect(page.locator("#total-cost")).to_have_text("$0.0005334")
        ui.shot("02-cost")
        ui.assert_clean()
