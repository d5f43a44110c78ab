"""The web UI in a real browser (Debian's Chromium via Playwright) over trajectories ingested
from the real-client captures in tests/fixtures/real-clients.

Ground truth is the captured runs' script (tests/fixtures/README.md): scenario `react` makes
3 model and 3 tool steps, 530 input / 73 output tokens, and its `divide` call (arguments
{"a": 1, "b": 0}) fails with ZeroDivisionError; scenario `model_error` calls no tool. The
multi-agent captures' ground truth is in tests/fixtures/real-clients/ground_truth/<shape>.json
(written from the scripted models' turns, tests/capture/script.py): `supervisor_subgraphs` runs
weather_agent then math_agent under the supervisor; in `tool_retry` the first `flaky_weather`
call fails.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.captures import CAPTURES, replay_run
from tests.harness import ServerProcess, final_trajectory, wait_for
from tests.ui_support import artifacts_dir, browser_page, require_browser

REACT = "openinference/react.prebuilt.stream"
REACT_OTHER_CLIENT = "cozeloop_js/react.prebuilt.invoke"
MODEL_ERROR = "cozeloop_python/model_error.prebuilt.stream"
SUPERVISOR = "openinference/supervisor_subgraphs.stategraph.stream"
TOOL_RETRY = "openinference/tool_retry.prebuilt.stream"


def ground_truth(shape: str) -> dict[str, Any]:
    return json.loads((CAPTURES / "ground_truth" / f"{shape}.json").read_text())


@pytest.fixture(autouse=True)
def _browser() -> None:
    require_browser()


def ingest(server: ServerProcess, project: str, runs: list[str]) -> dict[str, str]:
    """Replay each captured run into `project`; its trace id once its trajectory is final."""
    traces = {}
    with httpx.Client() as client:
        for run in runs:
            span_counts = replay_run(run, server.http, server.grpc, project)
            trace_id = max(span_counts, key=lambda t: span_counts[t])
            final_trajectory(client, server.http, project, trace_id)
            traces[run] = trace_id
    return traces


def test_list_filter_open_failed_step_and_add_to_dataset(server: ServerProcess,
                                                         project: str) -> None:
    from playwright.sync_api import expect

    runs = [REACT, REACT_OTHER_CLIENT, MODEL_ERROR, SUPERVISOR, TOOL_RETRY]
    traces = ingest(server, project, runs)
    # captures of different clients may share trace ids: these five must be five runs
    assert len(set(traces.values())) == len(runs)
    react, supervisor, retry = traces[REACT], traces[SUPERVISOR], traces[TOOL_RETRY]
    supervisor_truth = ground_truth("supervisor_subgraphs")
    retry_truth = ground_truth("tool_retry")
    with browser_page(server.http, artifacts_dir("trajectory-to-dataset")) as ui:
        page = ui.page
        ui.open(f"#/trajectories?project={project}")
        rows = page.locator("#trajectory-table tbody tr")
        expect(rows).to_have_count(5)
        ui.shot("01-trajectories")
        every = [rows.nth(i).get_attribute("data-trace-id") for i in range(5)]
        assert set(every) == set(traces.values())

        # server-side pages: 3 rows, then the other 2, then back
        ui.open(f"#/trajectories?project={project}&limit=3")
        expect(rows).to_have_count(3)
        assert [rows.nth(i).get_attribute("data-trace-id") for i in range(3)] == every[:3]
        page.get_by_role("button", name="Next page →").click()
        expect(rows).to_have_count(2)
        assert [rows.nth(i).get_attribute("data-trace-id") for i in range(2)] == every[3:]
        expect(page.get_by_role("button", name="Next page →")).to_have_count(0)
        page.get_by_role("button", name="← Previous page").click()
        expect(rows).to_have_count(3)
        expect(rows.first).to_have_attribute("data-trace-id", every[0])
        ui.open(f"#/trajectories?project={project}")
        expect(rows).to_have_count(5)

        # errors: only the model_error run has a failed model step
        page.get_by_label("Errors").select_option(label="failed model steps")
        page.get_by_role("button", name="Apply").click()
        expect(rows).to_have_count(1)
        expect(rows.first).to_have_attribute("data-trace-id", traces[MODEL_ERROR])
        # time range: nothing started after 2100
        page.get_by_role("link", name="Clear").click()
        expect(rows).to_have_count(5)
        page.get_by_label("From").fill("2100-01-01T00:00")
        page.get_by_role("button", name="Apply").click()
        expect(rows).to_have_count(1)
        expect(rows.first).to_contain_text("No trajectory matches these filters.")
        page.get_by_role("link", name="Clear").click()
        expect(rows).to_have_count(5)

        # filter: only the runs that called `divide` (no other scenario calls it)
        page.get_by_label("Tool", exact=True).fill("divide")
        page.get_by_role("button", name="Apply").click()
        expect(rows).to_have_count(2)
        shown = {rows.nth(i).get_attribute("data-trace-id") for i in range(2)}
        assert shown == {react, traces[REACT_OTHER_CLIENT]}
        row = page.locator(f'tr[data-trace-id="{react}"]')
        expect(row).to_contain_text("6 (3 model · 3 tool)")
        expect(row).to_contain_text("530 → 73")
        expect(row).to_contain_text("1 failed step")
        ui.shot("02-filtered")

        # the trajectory: totals, one failed step marked on the timeline and in the table
        row.get_by_role("link").click()
        totals = page.locator("#totals")
        expect(totals).to_contain_text("6 (3 model · 3 tool)")
        expect(totals).to_contain_text("530 in → 73 out")
        failed_bar = page.locator(".timeline .bar.failed")
        expect(failed_bar).to_have_count(1)
        assert "tool divide" in (failed_bar.get_attribute("aria-label") or "")
        expect(page.locator(".timeline .bar")).to_have_count(6)
        failed_row = page.locator("#step-table tbody tr.failed")
        expect(failed_row).to_have_count(1)
        expect(failed_row).to_contain_text("divide")
        ui.shot("03-trajectory")

        # the run as an ATIF file: the scenario's three tools, in the order the model asked
        with page.expect_download() as download:
            page.get_by_role("button", name="Download ATIF").click()
        atif = json.loads(Path(download.value.path()).read_text())
        assert atif["schema_version"] == "ATIF-v1.8"
        called = [call["function_name"] for step in atif["steps"]
                  for call in step.get("tool_calls", [])]
        assert called == ["get_weather", "add", "divide"], called

        # open the failed tool step: its error and its arguments, formatted
        failed_row.get_by_role("button").click()
        detail = page.locator("#step-detail")
        expect(page.locator("#step-error")).to_contain_text("ZeroDivisionError")
        expect(detail.locator("pre").first).to_contain_text('"b": 0')
        ui.shot("04-failed-step")

        # a model step's input reads as a conversation
        page.locator("#step-table .step-button").first.click()
        expect(detail.locator(".conversation .role-user")).to_contain_text(
            "What's the weather in Paris")

        # the tabs
        page.get_by_role("tab", name="Explanation").click()
        expect(page.locator("#explanation")).to_contain_text("dropped")
        ui.shot("05-explanation")
        page.get_by_role("tab", name="Span tree").click()
        expect(page.locator("#span-tree")).to_contain_text("divide")
        ui.shot("06-span-tree")
        page.get_by_role("tab", name="Revisions").click()
        expect(page.locator("#revisions tbody tr").first).to_contain_text("final")
        ui.shot("07-revisions")

        # back to the list; filter by a sub-agent: only the supervisor run has it
        page.go_back()
        expect(rows).to_have_count(2)
        page.get_by_role("link", name="Clear").click()
        expect(rows).to_have_count(5)
        page.get_by_label("Agent", exact=True).fill("weather_agent")
        page.get_by_role("button", name="Apply").click()
        expect(rows).to_have_count(1)
        expect(rows.first).to_have_attribute("data-trace-id", supervisor)
        ui.shot("08-filtered-by-agent")

        # the multi-agent run: one lane per agent activation, sub-agents nested under the root
        rows.first.get_by_role("link").click()
        activations = supervisor_truth["activations"]
        names = {a["index"]: a["agent"] for a in activations}
        lanes = page.locator(".timeline .lane:not(.axis)")
        expect(lanes.locator(".lane-name")).to_have_text(
            [("↳ " if a["parent"] is not None else "") + a["agent"] for a in activations])
        for i, activation in enumerate(activations):
            lane = lanes.nth(i)
            expect(lane).to_contain_text(f"{len(activation['steps'])} steps")
            expect(lane).to_contain_text(
                f"{activation['input_tokens']} → {activation['output_tokens']} tok")
            if activation["parent"] is not None:
                expect(lane).to_contain_text(f"started by {names[activation['parent']]}")
                assert "depth-1" in (lane.get_attribute("class") or "")
        root = supervisor_truth["root"]
        expect(totals).to_contain_text(f"{root['input_tokens']} in → {root['output_tokens']} out")
        expect(page.locator(".timeline .bar.failed")).to_have_count(0)
        # the supervisor's own steps list its sub-agents, in activation order
        expect(page.locator("#step-table tbody tr", has_text="nested agent")).to_have_text(
            [re.compile(s["agent"]) for s in activations[0]["steps"] if s["type"] == "agent"])
        ui.shot("09-multi-agent")

        # back; the run whose tool call failed: errors in tool steps, tool flaky_weather
        page.go_back()
        expect(rows).to_have_count(1)
        page.get_by_role("link", name="Clear").click()
        expect(rows).to_have_count(5)
        page.get_by_label("Errors").select_option(label="failed tool steps")
        page.get_by_label("Tool", exact=True).fill("flaky_weather")
        page.get_by_role("button", name="Apply").click()
        expect(rows).to_have_count(1)
        expect(rows.first).to_have_attribute("data-trace-id", retry)
        expect(rows.first).to_contain_text("1 failed step")
        rows.first.get_by_role("link").click()

        # its failed flaky_weather step (the first of the two calls) and its error message
        retry_steps = retry_truth["activations"][0]["steps"]
        tool_steps = [s for s in retry_steps if s["type"] == "tool"]
        failed_truth = [s for s in tool_steps if s["error"]]
        assert [s["name"] for s in failed_truth] == ["flaky_weather"]
        expect(page.locator(".timeline .bar")).to_have_count(len(retry_steps))
        expect(page.locator(".timeline .bar.failed")).to_have_count(1)
        failed_row = page.locator("#step-table tbody tr.failed")
        expect(failed_row).to_have_count(1)
        expect(failed_row).to_contain_text("flaky_weather")
        expect(page.locator("#step-table tbody tr:not(.failed)",
                            has_text="flaky_weather")).to_have_count(len(tool_steps) - 1)
        failed_row.get_by_role("button").click()
        error = failed_truth[0]["error"]
        expect(page.locator("#step-error")).to_contain_text(error["type"])
        expect(page.locator("#step-error")).to_contain_text(error["message"])
        expect(detail.locator("pre").first).to_contain_text('"city": "Paris"')
        ui.shot("10-failed-tool-step")

        # add the run to a new set, editing the pre-filled expectations before saving
        page.get_by_role("button", name="Add to dataset…").click()
        editor = page.locator("#expectations-editor")
        expect(editor).to_be_visible()
        prefilled = json.loads(editor.input_value())
        assert set(prefilled["tool_order"]) == {s["name"] for s in tool_steps}
        assert len(prefilled["agents"]) == 1
        agent = prefilled["agents"][0]
        edited = {**prefilled, "tools": {**prefilled["tools"],
                                         agent: [*prefilled["tools"][agent], "search_web"]}}
        editor.fill(json.dumps(edited, indent=2))
        # the rest of the run's state, read-only: where it came from
        draft_metadata = page.locator("#draft-metadata")
        draft_metadata.locator("summary").click()
        expect(draft_metadata.locator("pre")).to_contain_text(f'"trace_id": "{retry}"')
        page.get_by_label("Dataset", exact=True).select_option(label="New set…")
        page.get_by_label("New set name").fill("regressions")
        ui.shot("11-add-to-dataset")
        page.get_by_role("button", name="Save").click()
        expect(page.locator("#added-link")).to_have_text("regressions")
        page.locator("#added-link").click()

        # the set holds the run, with the edited expectations
        expect(page.locator("#item-count")).to_have_text("1")
        items = page.locator("#item-table tbody tr")
        expect(items).to_have_count(1)
        expect(items).to_contain_text(retry)
        expect(items).to_contain_text("search_web")
        expect(items).to_contain_text(retry_truth["user_request"])
        metadata = items.locator("td.metadata details")
        expect(metadata.locator("summary")).to_have_text("trace_id")
        metadata.locator("summary").click()
        expect(metadata.locator("pre")).to_contain_text(f'"trace_id": "{retry}"')
        ui.shot("12-dataset")

        # edit the item's expectations in place: expect flaky_weather only once
        items.get_by_role("button", name="Edit expectations").click()
        in_place = items.get_by_label("Expectations (JSON)")
        current = json.loads(in_place.input_value())
        assert current["tools"][agent] == edited["tools"][agent]
        order = ["flaky_weather"]
        assert current["tool_order"] != order
        in_place.fill(json.dumps({**current, "tool_order": order}))
        items.get_by_role("button", name="Save").click()
        expect(items).to_contain_text("tool order flaky_weather")
        saved = httpx.get(f"{server.http}/api/v1/datasets/regressions/items",
                          params={"project": project}).json()["items"]
        assert [i["source_trace_id"] for i in saved] == [retry]
        assert saved[0]["expectations"]["tools"][agent] == edited["tools"][agent]
        assert saved[0]["expectations"]["tool_order"] == order

        with page.expect_download() as download:
            page.get_by_role("button", name="JSONL").click()
        lines = Path(download.value.path()).read_text().splitlines()
        assert [json.loads(line)["source_trace_id"] for line in lines] == [retry]

        page.get_by_role("link", name="Datasets", exact=True).first.click()
        listed = page.locator("#dataset-table tbody tr")
        expect(listed).to_have_count(1)
        expect(listed).to_contain_text("regressions")
        expect(listed.locator("td.num")).to_have_text("1")
        ui.shot("13-datasets")
        ui.assert_clean()


def test_evaluation_failures_link_to_their_trajectory(server: ServerProcess,
                                                      project: str) -> None:
    from playwright.sync_api import expect

    react = ingest(server, project, [REACT])[REACT]
    with httpx.Client(base_url=server.http, params={"project": project}) as api:
        assert api.post("/api/v1/datasets", json={"name": "nightly"}).status_code == 201
        item_id = api.post("/api/v1/datasets/nightly/fill",
                           json={"trace_ids": [react]}).json()["item_ids"][0]
        expectations = api.get(f"/api/v1/datasets/nightly/items/{item_id}").json()["expectations"]
        agent = expectations["agents"][0]
        # the run never called search_web: expecting it makes the item fail
        expectations["tools"][agent] = [*expectations["tools"][agent], "search_web"]
        assert api.patch(f"/api/v1/datasets/nightly/items/{item_id}",
                         json={"expectations": expectations}).status_code == 200
        run = api.post("/api/v1/evaluations", json={
            "dataset": "nightly", "evaluators": ["expected_agents_tools"]}).json()
        wait_for(lambda: api.get(f"/api/v1/evaluations/{run['id']}").json()["status"] == "done",
                 what="evaluation done")

    with browser_page(server.http, artifacts_dir("evaluation-failures")) as ui:
        page = ui.page
        ui.open(f"#/evaluations?project={project}")
        listed = page.locator("#evaluation-table tbody tr")
        expect(listed).to_have_count(1)
        expect(listed).to_contain_text("expected_agents_tools pass 0.0%")
        ui.shot("01-evaluations")

        listed.get_by_role("link", name=f"#{run['id']}").click()
        expect(page.locator("#aggregate-table tbody tr")).to_contain_text("0.0%")
        expect(page.locator("#item-outcomes")).to_contain_text("1 of 1 items evaluated")
        failures = page.locator("#failure-table tbody tr")
        expect(failures).to_have_count(1)
        expect(failures).to_contain_text("missed")
        expect(failures).to_contain_text("search_web")
        ui.shot("02-evaluation-failures")

        failures.get_by_role("link", name="open trajectory").click()
        expect(page.locator("#totals")).to_contain_text(react)
        expect(page.locator(".timeline .bar.failed")).to_have_count(1)
        ui.shot("03-failed-item-trajectory")
        ui.assert_clean()
