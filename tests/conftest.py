"""Shared fixtures: a real PostgreSQL (embedded, or TRAJHUB_TEST_DATABASE_URL) and a real
`trajhub serve` process on free ports."""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest
from hypothesis import settings
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor

from tests.harness import ServerProcess, TestDatabase

# CI explores the same examples on every run (a red run must be reproducible); a developer's
# runs explore new ones each time.
settings.register_profile("ci", derandomize=True, database=None)
if os.environ.get("CI"):
    settings.load_profile("ci")

FIXTURES = Path(__file__).parent / "fixtures"


@pytest.fixture(scope="session")
def database(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TestDatabase]:
    db = TestDatabase.start(os.environ.get("TRAJHUB_TEST_DATABASE_URL", ""),
                            tmp_path_factory.mktemp("pg"))
    yield db
    db.stop()


@pytest.fixture(scope="session")
def server(database: TestDatabase, tmp_path_factory: pytest.TempPathFactory
           ) -> Iterator[ServerProcess]:
    proc = ServerProcess.start(database.url, tmp_path_factory.mktemp("server"),
                               settle_seconds=0.5)
    yield proc
    proc.stop()


@dataclass
class Secured:
    """A server with API keys on (TRAJHUB_AUTH=on), an admin key of one project, and a key of
    scope `metrics` (the only kind /metrics answers, besides the bootstrap key)."""

    server: ServerProcess
    project: str
    admin: str
    metrics: str

    @property
    def headers(self) -> dict[str, str]:
        return {"authorization": f"Bearer {self.admin}"}


@pytest.fixture(scope="session")
def secured(database: TestDatabase, tmp_path_factory: pytest.TempPathFactory
            ) -> Iterator[Secured]:
    """One server with keys on for the contract tests (test_rest_routes_live.py,
    test_rest_schemathesis.py): its admin key was made with the bootstrap key, as README's API
    keys section says an operator does."""
    bootstrap = "boot-" + uuid.uuid4().hex
    proc = ServerProcess.start(database.url, tmp_path_factory.mktemp("secured"),
                               settle_seconds=0.3,
                               extra_env={"TRAJHUB_AUTH": "on",
                                          "TRAJHUB_BOOTSTRAP_KEY": bootstrap})
    project = "sec-" + uuid.uuid4().hex[:10]
    try:
        r = httpx.post(f"{proc.http}/api/v1/keys", params={"project": project},
                       headers={"authorization": f"Bearer {bootstrap}"},
                       json={"scope": "admin", "name": "contract tests"}, timeout=60)
        assert r.status_code == 201, r.text
        m = httpx.post(f"{proc.http}/api/v1/keys", params={"project": project},
                       headers={"authorization": f"Bearer {bootstrap}"},
                       json={"scope": "metrics", "name": "contract tests' scrape"}, timeout=60)
        assert m.status_code == 201, m.text
        yield Secured(proc, project, r.json()["key"], m.json()["key"])
    finally:
        proc.stop()


@pytest.fixture
def project() -> str:
    """A fresh project per test, so tests never see each other's data."""
    return "t-" + uuid.uuid4().hex[:12]


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    """One line on the browser tests: where their screenshots are, or why they were skipped."""
    from tests import ui_support

    skipped = [r for r in terminalreporter.stats.get("skipped", []) if "test_ui_" in r.nodeid]
    if skipped:
        longrepr = skipped[0].longrepr
        reason = longrepr[2] if isinstance(longrepr, tuple) else str(longrepr)
        terminalreporter.write_line(
            f"browser tests: skipped {len(skipped)}: {reason.removeprefix('Skipped: ')}")
    for path in ui_support.artifacts_used:
        terminalreporter.write_line(f"browser test screenshots: {path}")


@pytest.fixture
def provider(server: ServerProcess, project: str) -> Iterator[TracerProvider]:
    """An OTel SDK tracer provider exporting to the session server over OTLP/HTTP, into
    `project` (the agent runs of the evaluation and replay tests trace through it)."""
    provider = TracerProvider()
    provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter(
        endpoint=f"{server.http}/v1/traces", headers={"trajhub-project": project})))
    yield provider
    provider.shutdown()
