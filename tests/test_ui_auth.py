"""The UI against a real server that requires API keys (TRAJHUB_AUTH=on).

The server holds two projects; the UI gets a `read` key of one. It must ask for the key once
(on the first 401), send it as `Authorization: Bearer <key>` on every request, keep it for the
session, and show only the key's project, whose data the server alone decides to give it.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any
from urllib.parse import urlsplit

import httpx
import pytest

from tests.captures import replay_run
from tests.harness import ServerProcess, TestDatabase, final_trajectory
from tests.ui_support import artifacts_dir, browser_page, require_browser

RUN = "openinference/react.prebuilt.stream"


@pytest.fixture(autouse=True)
def _browser() -> None:
    require_browser()


@pytest.fixture(scope="module")
def secured(database: TestDatabase, tmp_path_factory: pytest.TempPathFactory
            ) -> Iterator[tuple[ServerProcess, str]]:
    bootstrap = "boot-" + uuid.uuid4().hex
    server = ServerProcess.start(database.url, tmp_path_factory.mktemp("ui-secured"),
                                 settle_seconds=0.3,
                                 extra_env={"TRAJHUB_AUTH": "on",
                                            "TRAJHUB_BOOTSTRAP_KEY": bootstrap})
    yield server, bootstrap
    server.stop()


def new_key(server: ServerProcess, bootstrap: str, project: str, scope: str) -> str:
    r = httpx.post(f"{server.http}/api/v1/keys", params={"project": project},
                   headers={"authorization": f"Bearer {bootstrap}"}, json={"scope": scope})
    assert r.status_code == 201, r.text
    return str(r.json()["key"])


def test_asks_for_the_key_once_sends_it_and_shows_only_its_project(
        secured: tuple[ServerProcess, str], project: str) -> None:
    from playwright.sync_api import expect

    server, bootstrap = secured
    other = project + "-other"
    # the run in the key's project, and another run in a project the key must not see
    spans = replay_run(RUN, server.http, server.grpc, project,
                       {"authorization": f"Bearer {new_key(server, bootstrap, project, 'ingest')}"})
    replay_run(RUN, server.http, server.grpc, other,
               {"authorization": f"Bearer {new_key(server, bootstrap, other, 'ingest')}"})
    trace_id = max(spans, key=lambda t: spans[t])
    key = new_key(server, bootstrap, project, "read")
    with httpx.Client(headers={"authorization": f"Bearer {key}"}) as client:
        # the key's project, whether named or not
        final_trajectory(client, server.http, project, trace_id)

    seen: list[tuple[str, str | None, int]] = []

    def record(response: Any) -> None:
        url = urlsplit(response.url)
        if url.path.startswith("/api/"):
            seen.append((url.path, response.request.headers.get("authorization"),
                         response.status))

    with browser_page(server.http, artifacts_dir("auth")) as ui:
        page = ui.page
        page.on("response", record)
        ui.open("")  # no project chosen: the UI starts on `default`
        dialog = page.get_by_role("dialog", name="API key required")
        expect(dialog).to_be_visible()
        expect(dialog).to_contain_text("API key is required")  # the server's own words
        ui.shot("01-key-prompt")
        dialog.get_by_label("API key").fill(key)
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
        asked = len([1 for _, auth, _ in seen if auth is None])
        assert asked and all(status == 401 for _, auth, status in seen if auth is None)

        # further pages, and a reload, use the kept key without asking again
        rows.first.get_by_role("link").click()
        expect(page.locator("#totals")).to_contain_text(trace_id)
        page.get_by_role("link", name="Datasets").click()
        expect(page.locator("#dataset-table")).to_be_visible()
        page.reload()
        expect(page.locator("#dataset-table")).to_be_visible()
        expect(page.get_by_role("dialog")).to_have_count(0)
        assert len([1 for _, auth, _ in seen if auth is None]) == asked
        after_key = [entry for entry in seen if entry[1] is not None]
        assert after_key and all(auth == f"Bearer {key}" and status < 400
                                 for _, auth, status in after_key), after_key
        ui.assert_clean({(401, "/api/v1/trajectories"), (401, "/api/v1/projects")})
