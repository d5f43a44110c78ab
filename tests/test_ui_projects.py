"""The project switcher over `GET /api/v1/projects`.

That endpoint is another helper's work (its contract: {"projects": [{"name", "trace_count",
"span_count", "first_span_at", "last_span_at"}]}); until it is in this branch a stub in the
browser answers it in that shape, listing the two projects this test fills through the real
server. Without the endpoint the UI falls back to a free-text project field (the other browser
tests run that way)."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from tests.captures import replay_run
from tests.harness import ServerProcess, final_trajectory
from tests.ui_support import artifacts_dir, browser_page, require_browser


@pytest.fixture(autouse=True)
def _browser() -> None:
    require_browser()


def ingest(server: ServerProcess, project: str, run: str) -> str:
    spans = replay_run(run, server.http, server.grpc, project)
    trace_id = max(spans, key=lambda t: spans[t])
    with httpx.Client() as client:
        final_trajectory(client, server.http, project, trace_id)
    return trace_id


def test_switching_project_shows_that_projects_trajectories(server: ServerProcess,
                                                             project: str) -> None:
    from playwright.sync_api import expect

    other = project + "-b"
    react = ingest(server, project, "openinference/react.prebuilt.stream")
    failed = ingest(server, other, "cozeloop_python/model_error.prebuilt.stream")

    def projects(route: Any) -> None:
        route.fulfill(json={"items": [
            {"name": name, "trace_count": 1, "span_count": 10,
             "first_span_at": None, "last_span_at": None} for name in (project, other)],
            "next_cursor": None})

    with browser_page(server.http, artifacts_dir("projects")) as ui:
        page = ui.page
        page.route("**/api/v1/projects", projects)
        ui.open(f"#/trajectories?project={project}")
        switcher = page.get_by_label("Project")
        expect(switcher.locator("option")).to_have_text([f"{project} (1 traces)",
                                                          f"{other} (1 traces)"])
        rows = page.locator("#trajectory-table tbody tr")
        expect(rows).to_have_count(1)
        expect(rows.first).to_have_attribute("data-trace-id", react)

        switcher.select_option(other)
        expect(rows.first).to_have_attribute("data-trace-id", failed)
        expect(rows).to_have_count(1)
        assert f"project={other}" in page.url
        ui.shot("01-project-switched")
        # the choice sticks: other pages use the chosen project
        page.get_by_role("link", name="Datasets").click()
        expect(page.locator("#dataset-table")).to_contain_text("No dataset yet")
        assert f"project={other}" in page.url
        ui.assert_clean()
