"""A large trajectory in the web UI (docs/large-traces.md): a run of 2,500 steps opens
on its first rows, its step table holds only the rows in view, and scrolling to the end loads
and shows its last step, which opens with its payloads; a run of 400 sub-agents draws only the
lanes in view, and scrolling the lanes (or following a step to its agent's lane) draws the
others. The names and counts are the scripts' (tests/test_large_trajectories.py's run, and
`many_agents` here)."""

from __future__ import annotations

import re
from typing import Any

import httpx
import pytest

from tests.harness import ServerProcess, final_trajectory
from tests.otlp_builders import new_span_id, new_trace_id, request, span
from tests.test_large_trajectories import MS, PB, T0, agent_run
from tests.ui_support import artifacts_dir, browser_page, require_browser

STEPS = 2_500
#: sub-agents of `many_agents`: 400 agent steps and 800 model and tool steps, above the 1,000
#: steps from which the UI pages a run, and 401 lanes, above the 100 it draws all of
SUB_AGENTS = 400


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


def many_agents() -> tuple[str, list[Any]]:
    """A supervisor `boss` that runs SUB_AGENTS sub-agents `sub_0` … one after another, each a
    model call then a tool call. Returns the trace id and the spans."""
    tid, root = new_trace_id(), new_span_id()
    spans = [span(tid, "invoke_agent boss", span_id=root, start=T0,
                  duration=(3 * SUB_AGENTS + 1) * MS,
                  attributes={"gen_ai.operation.name": "invoke_agent",
                              "gen_ai.agent.name": "boss"})]
    for k in range(SUB_AGENTS):
        agent, start = new_span_id(), T0 + 3 * k * MS
        spans += [
            span(tid, f"invoke_agent sub_{k}", parent=root, span_id=agent, start=start,
                 duration=3 * MS, attributes={"gen_ai.operation.name": "invoke_agent",
                                              "gen_ai.agent.name": f"sub_{k}"}),
            span(tid, "chat gpt-4o", parent=agent, start=start + MS // 2, duration=MS // 2,
                 attributes={"gen_ai.operation.name": "chat", "gen_ai.request.model": "gpt-4o",
                             "gen_ai.usage.input_tokens": 10, "gen_ai.usage.output_tokens": 2}),
            span(tid, f"execute_tool lookup_{k}", parent=agent, start=start + 3 * MS // 2,
                 duration=MS // 2, attributes={"gen_ai.operation.name": "execute_tool",
                                               "gen_ai.tool.name": f"lookup_{k}",
                                               "gen_ai.tool.call.id": f"call_{k}"}),
        ]
    return tid.hex(), spans


def test_many_agents_draw_only_the_lanes_in_view(server: ServerProcess, project: str) -> None:
    from playwright.sync_api import expect

    tid, spans = many_agents()
    with httpx.Client(timeout=60) as c:
        r = c.post(f"{server.http}/v1/traces", content=request(spans).SerializeToString(),
                   headers={**PB, "trajhub-project": project})
        assert r.status_code == 200, r.text
        final_trajectory(c, server.http, project, tid)

    with browser_page(server.http, artifacts_dir("many-agents")) as ui:
        page = ui.page
        ui.open(f"#/trajectories/{tid}?project={project}")
        lanes = page.locator(".timeline .lane:not(.axis)")
        expect(lanes.first).to_contain_text("boss")
        expect(lanes.first).to_contain_text(f"{SUB_AGENTS} steps")
        expect(page.locator(".timeline")).to_have_attribute(
            "aria-label", f"Timeline, one lane per agent: {SUB_AGENTS + 1} lanes; lanes are "
                          "drawn as you scroll")
        # only the lanes in view are drawn, not one per agent
        assert lanes.count() < 30
        expect(page.locator("#lane-scroller")).to_be_visible()
        ui.shot("01-first-lanes")

        page.locator("#lane-scroller").evaluate("(box) => { box.scrollTop = box.scrollHeight; }")
        expect(lanes.last).to_contain_text(f"sub_{SUB_AGENTS - 1}")
        expect(lanes.last).to_contain_text("started by boss")
        expect(lanes.last).to_contain_text("2 steps")
        assert lanes.count() < 30
        names = page.locator(".timeline .lane-name strong")
        expect(names.filter(has_text=re.compile("^boss$"))).to_have_count(0)

        # the boss's second agent step opens its agent, whose lane comes into view
        page.locator("#step-table tr[data-step-id] .step-button").nth(1).click()
        expect(page.locator("#step-detail h2")).to_contain_text("sub_1")
        page.get_by_role("link", name="Go to the lane of sub_1").click()
        expect(names.filter(has_text=re.compile("^sub_1$"))).to_have_count(1)
        ui.shot("02-lane-of-a-step")
        ui.assert_clean()
