"""Shared fixtures: a real PostgreSQL (embedded, or TRAJHUB_TEST_DATABASE_URL) and a real
`trajhub serve` process on free ports; and the test tiers.

Every test belongs to exactly one tier, given here unless the test (or its module) names one:
- `browser`: tests/test_ui_*.py, which drive the web UI in Chromium;
- `integration`: a test that uses the `server` or `database` fixture (directly or through
  another fixture); a test that starts processes some other way says so with
  `pytest.mark.integration`;
- `unit`: the rest. They run in this process alone: a unit test that starts a process fails.
`slow` (fuzzers, soak tests, several servers) is given explicitly, on top of the tier.

The longest kinds of file run first (files with a `slow` test, then browser, integration and
unit files): pytest-xdist (`--dist loadfile --no-loadscope-reorder`) hands out whole files in
collection order (its default order, most tests first, put the one-test schemathesis file
last), so a long file collected last would run alone at the end while the other workers idle.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from unittest import mock

import httpx
import pytest
from hypothesis import settings
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor

from tests.harness import ServerProcess, TestDatabase, server_of_its_own
from trajhub.storage import compression, compression_dictionaries

# The suite caches bytecode (`__pycache__`, git-ignored) even where PYTHONDONTWRITEBYTECODE is
# set, for itself and for every process it starts: without it, each `trajhub serve` process
# (and each of its spawned workers) compiles trajhub's modules again, and each pytest process
# rewrites the asserts of every test module again, a large part of its collection
# (bench/README.md, "The test suite").
sys.dont_write_bytecode = False
os.environ.pop("PYTHONDONTWRITEBYTECODE", None)

# CI explores the same examples on every run (a red run must be reproducible); a developer's
# runs explore new ones each time.
settings.register_profile("ci", derandomize=True, database=None)
if os.environ.get("CI"):
    settings.load_profile("ci")

#: how long every HTTP call of the suite waits for an answer unless it says otherwise: on a
#: busy machine (another suite beside this one, Chromium installing) a request can wait seconds
#: for a core, and httpx's default of 5 s failed tests that only wanted an answer. A test waits
#: for conditions, not for time; a hung server still fails it, a minute later.
SUITE_HTTP_TIMEOUT = httpx.Timeout(60.0)
for _call in (httpx.Client.__init__, httpx.AsyncClient.__init__, httpx.request, httpx.get,
              httpx.post, httpx.put, httpx.patch, httpx.delete, httpx.head, httpx.options):
    assert _call.__kwdefaults__ is not None and "timeout" in _call.__kwdefaults__, _call
    _call.__kwdefaults__["timeout"] = SUITE_HTTP_TIMEOUT

FIXTURES = Path(__file__).parent / "fixtures"

TIERS = ("unit", "integration", "browser")
#: a test using one of these fixtures (directly or through another fixture) is `integration`
INTEGRATION_FIXTURES = frozenset({"server", "database"})


def tier_of(item: pytest.Item) -> str:
    """The tier a test gets when it names none."""
    if Path(str(item.fspath)).name.startswith("test_ui_"):
        return "browser"
    if INTEGRATION_FIXTURES.intersection(getattr(item, "fixturenames", ())):
        return "integration"
    return "unit"


def tier_problems(items: list[pytest.Item]) -> list[str]:
    """Each test that has no tier marker, or more than one."""
    problems = []
    for item in items:
        tiers = sorted({m.name for m in item.iter_markers() if m.name in TIERS})
        if len(tiers) != 1:
            problems.append(f"{item.nodeid}: {'none' if not tiers else ', '.join(tiers)}")
    return problems


@pytest.hookimpl(tryfirst=True)
def pytest_cmdline_main(config: pytest.Config) -> None:
    """`pytest -m unit` (alone or `unit and …`) runs in this one process, whatever addopts'
    `-n` says: the unit tests take seconds, and every xdist worker would collect the whole
    suite again first, which made the tier slower, not faster (bench/README.md, "The test
    suite")."""
    if (re.fullmatch(r"\s*unit(\s+and\s+.*)?", config.option.markexpr or "")
            and getattr(config.option, "numprocesses", None)):
        config.option.numprocesses = 0
        config.option.dist = "no"
    if config.option.basetemp is None and not hasattr(config, "workerinput"):
        # A base temp folder of this run's own, outside pytest's per-user folder: every pytest
        # run that starts makes that folder private again (mode 0700), which locks out the
        # `pgserver` user the embedded PostgreSQL runs as when the suite runs as root, so a
        # second test run on the same machine crashed the first one's database.
        config.option.basetemp = config.stash[OWN_BASETEMP] = tempfile.mkdtemp(
            prefix="trajhub-tests-")


OWN_BASETEMP = pytest.StashKey[str]()


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """The run's own base temp folder goes when the run passed (pytest's own rotation never
    sees it); a failed run keeps it, for the servers' logs."""
    own = session.config.stash.get(OWN_BASETEMP, None)
    if own and exitstatus == 0:
        shutil.rmtree(own, ignore_errors=True)


def _file_weight(items: list[pytest.Item]) -> dict[pytest.Item, int]:
    """Each test's file's place in the run, longest kind of file first: files with a `slow`
    test, then browser, integration and unit files (the unit files, seconds each, fill in at
    the end while the last long files finish)."""
    rank: dict[Path, int] = {}
    for item in items:
        slow = item.get_closest_marker("slow") is not None
        tier = next((TIERS.index(m.name) for m in item.iter_markers() if m.name in TIERS), 0)
        weight = -1 if slow else (2 - tier)  # unit 2, integration 1, browser 0
        rank[item.path] = min(rank.get(item.path, weight), weight)
    return {item: rank[item.path] for item in items}


@pytest.hookimpl(tryfirst=True)  # before `-m` deselects anything
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        if not any(m.name in TIERS for m in item.iter_markers()):
            item.add_marker(tier_of(item))
    items.sort(key=_file_weight(items).__getitem__)  # stable: a file's tests stay in order
    problems = tier_problems(items)
    if problems:
        raise pytest.UsageError("each test needs exactly one tier marker of "
                                f"{', '.join(TIERS)}; these have none or several:\n  "
                                + "\n  ".join(problems))


@contextlib.contextmanager
def _no_process(item: pytest.Item) -> Iterator[None]:
    """`pytest -m unit` must never start PostgreSQL, a server or any other process: a unit test
    that tries (in its setup, module fixtures included, or its body) fails, saying to mark it
    `integration`."""
    if item.get_closest_marker("unit") is None:
        yield
        return

    def refuse(self: subprocess.Popen[Any], args: Any, *more: Any, **kwargs: Any) -> None:
        raise AssertionError(f"{item.nodeid} is a unit test but starts a process ({args!r}): "
                             "mark it pytest.mark.integration")

    with mock.patch.object(subprocess.Popen, "__init__", refuse):
        yield


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_setup(item: pytest.Item) -> Iterator[None]:
    with _no_process(item):
        yield


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Iterator[None]:
    with _no_process(item):
        yield


@pytest.fixture(scope="session")
def database(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TestDatabase]:
    # under pytest-xdist each worker is a session of its own: its own database (and server),
    # on one embedded PostgreSQL shared by the run's workers (their base temp dirs are siblings)
    shared = (tmp_path_factory.getbasetemp().parent / "shared-pg"
              if os.environ.get("PYTEST_XDIST_WORKER") else None)
    db = TestDatabase.start(os.environ.get("TRAJHUB_TEST_DATABASE_URL", ""),
                            tmp_path_factory.mktemp("pg"), shared_dir=shared)
    # a test that reads stored values itself reads them as trajhub's processes do: a frame made
    # with the store's dictionary (storage/compression.py) fetches it from this database
    compression.set_loader(compression_dictionaries.loader(db.url))
    yield db
    db.stop()


@pytest.fixture(scope="session")
def server(database: TestDatabase, tmp_path_factory: pytest.TempPathFactory
           ) -> Iterator[ServerProcess]:
    proc = ServerProcess.start(database.url, tmp_path_factory.mktemp("server"),
                               settle_seconds=0.5)
    yield proc
    proc.stop()


@pytest.fixture(scope="module")
def alert_server(database: TestDatabase, tmp_path_factory: pytest.TempPathFactory
                 ) -> Iterator[ServerProcess]:
    """A server of the module's own that evaluates alert rules every 0.2 s (docs/alerts.md), on
    a database of its own: every server evaluates the due rules of its database and sets their
    next evaluation by its own interval, and the suite's other servers keep the default minute."""
    with server_of_its_own(database, tmp_path_factory.mktemp("alerts"), 0.3,
                           {"TRAJHUB_ALERT_INTERVAL_SECONDS": "0.2"}) as (proc, _):
        yield proc


@dataclass
class Secured:
    """A server with API keys on (TRAJHUB_AUTH=on), an admin key of one project, and a key of
    scope `metrics` (the only kind /metrics answers, besides the bootstrap key)."""

    server: ServerProcess
    project: str
    admin: str
    metrics: str
    #: the operator's key, for a test that needs a project of its own on this server
    bootstrap: str

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
        yield Secured(proc, project, r.json()["key"], m.json()["key"], bootstrap)
    finally:
        proc.stop()


@pytest.fixture
def project() -> str:
    """A fresh project per test, so tests never see each other's data."""
    return "t-" + uuid.uuid4().hex[:12]


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]
                              ) -> Iterator[None]:
    """Each report names the screenshot folders used so far, so that the summary can print them
    even when the browser tests ran in a pytest-xdist worker."""
    from tests import ui_support

    outcome = yield
    report = outcome.get_result()  # type: ignore[attr-defined]
    report.user_properties.extend(("trajhub-artifacts", str(path))
                                  for path in ui_support.artifacts_used)


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    """One line on the browser tests: where their screenshots are, or why they were skipped."""
    skipped = [r for r in terminalreporter.stats.get("skipped", []) if "test_ui_" in r.nodeid]
    if skipped:
        longrepr = skipped[0].longrepr
        reason = longrepr[2] if isinstance(longrepr, tuple) else str(longrepr)
        terminalreporter.write_line(
            f"browser tests: skipped {len(skipped)}: {reason.removeprefix('Skipped: ')}")
    used: dict[str, None] = {}
    for reports in terminalreporter.stats.values():
        for report in reports:
            for key, value in getattr(report, "user_properties", ()):
                if key == "trajhub-artifacts":
                    used[value] = None
    for path in used:
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


@pytest.fixture
def fresh_dictionaries(monkeypatch: pytest.MonkeyPatch) -> None:
    """This test's own dictionary state, as a new process has it (none loaded, none in use)."""
    monkeypatch.setattr(compression, "_dictionaries", {})
    monkeypatch.setattr(compression, "_current", None)
    monkeypatch.setattr(compression, "_local", threading.local())
    monkeypatch.setattr(compression, "_samples", None)
    monkeypatch.setattr(compression, "_document_pieces", None)
    monkeypatch.setattr(compression, "_loader", None)
