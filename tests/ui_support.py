"""Driving the web UI in a real browser: Debian's Chromium, headless, through Playwright.

Playwright's own browser download cannot work offline, so the system Chromium is launched by path.
Without a Chromium the browser tests skip (and the run says so in one line, see conftest.py),
unless TRAJHUB_REQUIRE_BROWSER=1 (CI), where a missing browser is a failure.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import httpx
import pytest

CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run"]
#: how long a page action or an `expect` waits for its condition
UI_TIMEOUT_MS = 30_000
#: Until the project list exists (GET /api/v1/projects), the UI asks for it, gets a 404 and falls
#: back to a free-text project field.
EXPECTED_FAILURES = {(404, "/api/v1/projects")}

#: where screenshots went in this run (printed by conftest.py's terminal summary)
artifacts_used: list[Path] = []


def chromium() -> str | None:
    for name in ("chromium", "chromium-browser"):
        found = shutil.which(name)
        if found:
            return found
    return None


def require_browser() -> str:
    """The Chromium executable, or skip (fail when TRAJHUB_REQUIRE_BROWSER=1)."""
    path = chromium()
    if path is None:
        reason = "no Chromium on PATH (install Debian's: apt-get install chromium)"
        if os.environ.get("TRAJHUB_REQUIRE_BROWSER") == "1":
            pytest.fail(f"browser tests are required here but {reason}")
        pytest.skip(reason)
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        reason = "the playwright package is not installed (pip install -e '.[test]')"
        if os.environ.get("TRAJHUB_REQUIRE_BROWSER") == "1":
            pytest.fail(reason)
        pytest.skip(reason)
    return path


_run_dir: list[str] = []


def artifacts_dir(name: str) -> Path:
    """Screenshots go outside the repository: $TRAJHUB_TEST_ARTIFACTS, else a new temporary
    folder per run."""
    base = os.environ.get("TRAJHUB_TEST_ARTIFACTS")
    if not base:
        if not _run_dir:
            _run_dir.append(tempfile.mkdtemp(prefix="trajhub-ui-"))
        base = _run_dir[0]
    path = Path(base) / name
    path.mkdir(parents=True, exist_ok=True)
    if path not in artifacts_used:
        artifacts_used.append(path)
    return path


@dataclass
class UiPage:
    """A browser page on the UI that records what would be JavaScript errors for a user."""

    page: Any
    base: str
    shots: Path
    errors: list[str] = field(default_factory=list)
    external_requests: list[str] = field(default_factory=list)
    #: (status, path) of every answer >= 400 the page received
    failed_loads: list[tuple[int, str]] = field(default_factory=list)
    #: (path, query parameter names) of every request the page sent to the API
    api_queries: list[tuple[str, frozenset[str]]] = field(default_factory=list)

    def open(self, fragment: str) -> None:
        self.page.goto(f"{self.base}/{fragment}")

    def shot(self, name: str) -> Path:
        path = self.shots / f"{name}.png"
        self.page.screenshot(path=str(path), full_page=True)
        return path

    def submit(self, form: str, text: dict[str, str],
               options: dict[str, str] | None = None) -> None:
        """Fills the controls of `form` named by selector in `text`, sets its selects named in
        `options` to the option of that value, then presses its submit button."""
        for selector, value in text.items():
            self.page.fill(selector, value)
        for selector, value in (options or {}).items():
            self.page.select_option(selector, value)
        self.page.click(f"{form} button[type=submit]")

    def assert_clean(self, expected_failures: set[tuple[int, str]] = EXPECTED_FAILURES) -> None:
        """No JavaScript error, nothing fetched from another host, no failed request but the
        expected ones, no query parameter that /openapi.json calls deprecated."""
        assert self.errors == [], "JavaScript errors in the console:\n" + "\n".join(self.errors)
        assert self.external_requests == [], ("requests to other hosts: "
                                             f"{self.external_requests}")
        unexpected = [f for f in self.failed_loads if f not in expected_failures]
        assert unexpected == [], f"failed requests: {unexpected}"
        deprecated = deprecated_parameters(self.base)
        uses = [(path, sorted(names & deprecated)) for path, names in self.api_queries
                if names & deprecated]
        assert uses == [], f"requests with deprecated query parameters: {uses}"


def deprecated_parameters(base: str) -> frozenset[str]:
    """The query parameters /openapi.json marks deprecated (each such name is deprecated
    wherever it is taken)."""
    document = httpx.get(f"{base}/openapi.json", timeout=30).json()
    return frozenset(parameter["name"] for operations in document["paths"].values()
                     for operation in operations.values()
                     for parameter in operation.get("parameters", ())
                     if parameter.get("deprecated") and parameter["in"] == "query")


@contextmanager
def browser_page(base: str, shots: Path, context_options: dict[str, Any] | None = None
                 ) -> Iterator[UiPage]:
    executable = require_browser()
    from playwright.sync_api import expect, sync_playwright

    # `expect` waits 5 s by default, apart from the page's timeout: a loaded machine renders
    # a page later than that, and a passing check waits only until it holds
    expect.set_options(timeout=UI_TIMEOUT_MS)

    origin = urlsplit(base).netloc
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=executable, args=CHROMIUM_ARGS)
        try:
            context = browser.new_context(viewport={"width": 1400, "height": 900},
                                          accept_downloads=True, **(context_options or {}))
            page = context.new_page()
            page.set_default_timeout(UI_TIMEOUT_MS)
            ui = UiPage(page, base, shots)

            def on_console(message: Any) -> None:
                # a failed request is logged as a console error too: those are checked by
                # status in assert_clean, the rest are the page's own errors
                if message.type == "error" and not message.text.startswith(
                        "Failed to load resource"):
                    url = (message.location or {}).get("url", "")
                    ui.errors.append(f"{message.text} ({url})")

            def on_response(response: Any) -> None:
                if response.status >= 400:
                    ui.failed_loads.append((response.status, urlsplit(response.url).path))

            def on_request(request: Any) -> None:
                parts = urlsplit(request.url)
                if parts.scheme in ("http", "https", "ws", "wss") and parts.netloc != origin:
                    ui.external_requests.append(request.url)
                elif parts.path.startswith("/api/"):
                    ui.api_queries.append((parts.path, frozenset(parse_qs(parts.query))))

            page.on("console", on_console)
            page.on("pageerror", lambda error: ui.errors.append(f"uncaught: {error}"))
            page.on("request", on_request)
            page.on("response", on_response)
            yield ui
        finally:
            browser.close()
