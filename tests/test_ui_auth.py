"""The UI against a server that requires API keys.

trajhub has no API keys yet (a later issue), so a stub in the browser stands in for the server's
key check: every /api/v1 request without `Authorization: Bearer <key>` gets 401, the project list
answers only the key's project, and a request for another project gets 403. Behind the stub is
the real server. What is tested is the UI's side of the contract: it asks for the key once,
sends it on every request, keeps it for the session, and shows only the key's project.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import parse_qs, urlsplit

import httpx
import pytest

from tests.captures import replay_run
from tests.harness import ServerProcess, final_trajectory
from tests.ui_support import artifacts_dir, browser_page, require_browser

KEY = "thk_test_0123456789"
RUN = "openinference/react.prebuilt.stream"


@pytest.fixture(autouse=True)
def _browser() -> None:
    require_browser()


def test_asks_for_the_key_once_sends_it_and_shows_only_its_project(
        server: ServerProcess, project: str) -> None:
    from playwright.sync_api import expect

    spans = replay_run(RUN, server.http, server.grpc, project)
    trace_id = max(spans, key=lambda t: spans[t])
    with httpx.Client() as client:
        final_trajectory(client, server.http, project, trace_id)

    seen: list[tuple[str, str | None]] = []

    def key_check(route: Any, request: Any) -> None:
        url = urlsplit(request.url)
        auth = request.headers.get("authorization")
        seen.append((url.path, auth))
        if auth != f"Bearer {KEY}":
            route.fulfill(status=401, json={"detail": "an API key is required"})
        elif url.path == "/api/v1/projects":
            route.fulfill(json={"projects": [{"name": project, "trace_count": 1,
                                              "span_count": sum(spans.values()),
                                              "first_span_at": None, "last_span_at": None}]})
        elif parse_qs(url.query).get("project") != [project]:
            route.fulfill(status=403, json={"detail": "this key belongs to another project"})
        else:
            route.continue_()

    with browser_page(server.http, artifacts_dir("auth")) as ui:
        page = ui.page
        page.route("**/api/v1/**", key_check)
        ui.open("")  # no project chosen: the UI starts on `default`
        dialog = page.get_by_role("dialog", name="API key required")
        expect(dialog).to_be_visible()
        ui.shot("01-key-prompt")
        dialog.get_by_label("API key").fill(KEY)
        dialog.get_by_role("button", name="Use key").click()

        # the key's project, and only it, is shown
        rows = page.locator("#trajectory-table tbody tr")
        expect(rows).to_have_count(1)
        expect(rows.first).to_have_attribute("data-trace-id", trace_id)
        switcher = page.get_by_label("Project")
        expect(switcher).to_be_disabled()
        expect(switcher.locator("option")).to_have_count(1)
        expect(switcher.locator("option")).to_have_text(project)
        ui.shot("02-key-project")
        asked = len([1 for _, auth in seen if auth is None])

        # further pages, and a reload, use the kept key without asking again
        rows.first.get_by_role("link").click()
        expect(page.locator("#totals")).to_contain_text(trace_id)
        page.get_by_role("link", name="Datasets").click()
        expect(page.locator("#dataset-table")).to_be_visible()
        page.reload()
        expect(page.locator("#dataset-table")).to_be_visible()
        expect(page.get_by_role("dialog")).to_have_count(0)
        assert len([1 for _, auth in seen if auth is None]) == asked
        after_key = seen[asked:]
        assert after_key and all(auth == f"Bearer {KEY}" for _, auth in after_key)
        ui.assert_clean({(401, "/api/v1/trajectories"), (401, "/api/v1/projects")})
