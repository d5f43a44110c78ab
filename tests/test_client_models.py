"""The Python client reads every answer into the model the API declares for it (trajhub.records),
and imports nothing of the server: what it imports is what the `trajhub-client` distribution
(clients/python) holds and depends on."""

from __future__ import annotations

import ast
import json
import sys
import tomllib
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest
from pydantic import BaseModel

from trajhub.client import TrajhubClient, TrajhubError
from trajhub.normalizers.atif import SCHEMA_VERSION
from trajhub.records.documents import (
    ATIF_SCHEMA_VERSION,
    AtifImported,
    AtifTrajectory,
    TrajectoryExplanation,
    TrajectoryStepPage,
)
from trajhub.records.graphs import AgentGraphView
from trajhub.records.queues import ExportOutcome, ItemsAdded
from trajhub.records.regressions import RegressionReport
from trajhub.records.replay import (
    ComparisonView,
    RunContract,
    RunCostView,
    StepEventView,
    ToolResults,
)
from trajhub.records.retention import Retention
from trajhub.records.spans import CozeLoopTrace, OtlpTrace, TraceSpans
from trajhub.records.timeseries import TimeSeries
from trajhub.service.client.replay import RecordedTools

ROOT = Path(__file__).parent.parent
CLIENT = ROOT / "clients" / "python"
DISTRIBUTION = tomllib.loads((CLIENT / "pyproject.toml").read_text())
TRACE = "4bf92f3577b34da6a3ce929d0e0e4736"


def _example(model: type[BaseModel]) -> Any:
    [example] = model.model_json_schema()["examples"]
    return json.loads(json.dumps(example))


def _hub(answer: Callable[[httpx.Request], httpx.Response]) -> TrajhubClient:
    return TrajhubClient("http://trajhub.test", transport=httpx.MockTransport(answer))


#: each typed method, the route it asks and the model of its answer
CALLS: list[tuple[Callable[[TrajhubClient], Any], str, str, type[BaseModel]]] = [
    (lambda h: h.get_trace(TRACE), "GET", f"/traces/{TRACE}", TraceSpans),
    (lambda h: h.get_trace(TRACE, format="otlp"), "GET", f"/traces/{TRACE}", OtlpTrace),
    (lambda h: h.get_trace(TRACE, format="cozeloop"), "GET", f"/traces/{TRACE}", CozeLoopTrace),
    (lambda h: h.trajectory_steps(TRACE), "GET", f"/trajectories/{TRACE}/steps",
     TrajectoryStepPage),
    (lambda h: h.trajectory_atif(TRACE), "GET", f"/trajectories/{TRACE}/atif", AtifTrajectory),
    (lambda h: h.import_atif({}), "POST", "/trajectories/import/atif", AtifImported),
    (lambda h: h.explain_trajectory(TRACE), "GET", f"/trajectories/{TRACE}/explain",
     TrajectoryExplanation),
    (lambda h: h.trajectory_graph(TRACE), "GET", f"/trajectories/{TRACE}/graph",
     AgentGraphView),
    (lambda h: h.agent_graph(agent="a"), "GET", "/graph", AgentGraphView),
    (lambda h: h.add_review_items("q", [TRACE]), "POST", "/review-queues/q/items", ItemsAdded),
    (lambda h: h.export_review_queue("q", "set"), "POST", "/review-queues/q/export-to-dataset",
     ExportOutcome),
    (lambda h: h.contract(TRACE), "GET", f"/trajectories/{TRACE}/contract", RunContract),
    (lambda h: h.tool_results(TRACE), "GET", f"/trajectories/{TRACE}/tool-results",
     ToolResults),
    (lambda h: h.cost(TRACE), "GET", f"/trajectories/{TRACE}/cost", RunCostView),
    (lambda h: h.compare(TRACE, TRACE), "GET", "/trajectories/compare", ComparisonView),
    (lambda h: h.regression({"run": "v1"}, {"run": "v2"}, "set"), "POST", "/regressions",
     RegressionReport),
    (lambda h: h.get_retention(), "GET", "/retention", Retention),
    (lambda h: h.set_retention(30), "PUT", "/retention", Retention),
    (lambda h: h.clear_retention(), "DELETE", "/retention", Retention),
    (lambda h: h.timeseries("0", "1"), "GET", "/timeseries", TimeSeries),
]


@pytest.mark.parametrize(("call", "method", "path", "model"), CALLS,
                         ids=[f"{m} {p} {c.__name__}" for _, m, p, c in CALLS])
def test_each_answer_is_read_into_its_declared_model(
        call: Callable[[TrajhubClient], Any], method: str, path: str,
        model: type[BaseModel]) -> None:
    asked: list[tuple[str, str]] = []

    def answer(request: httpx.Request) -> httpx.Response:
        asked.append((request.method, request.url.path.removeprefix("/api/v1")))
        return httpx.Response(200, json=_example(model))

    with _hub(answer) as hub:
        out = call(hub)
    assert asked == [(method, path)]
    assert type(out) is model
    assert out == model.model_validate(_example(model))
    # what the server sent, field for field (the CLI's --json prints this)
    assert out.model_dump(mode="json", exclude_unset=True) == _example(model)


def test_the_playback_and_the_recorded_tools_are_typed() -> None:
    event = {"seq": 0, "step_id": "a1", "parent_id": "", "type": "tool", "name": "add",
             "agent": "calc", "agent_step_id": "r", "agent_path": ["calc"],
             "start_time": "2026-11-22T10:00:00Z", "started_at_ms": 1795341600000,
             "duration_ms": 3, "input": '{"a": 1}', "output": "2", "error": None,
             "model": None, "tokens": None, "tool_call_id": "c1", "arguments_hash": None,
             "metadata": {}, "cost": None}
    results = _example(ToolResults)

    def answer(request: httpx.Request) -> httpx.Response:
        if request.url.path.endswith("/events"):
            return httpx.Response(200, content=(json.dumps(event) + "\n").encode() * 2,
                                  headers={"x-total-count": "2", "x-trajectory-status": "final",
                                           "x-trajectory-revision": "1"})
        return httpx.Response(200, json=results)

    with _hub(answer) as hub:
        run = hub.events(TRACE)
    assert [type(e) for e in run.events] == [StepEventView, StepEventView]
    assert (run.events[0].name, run.total, run.status, run.revision) == ("add", 2, "final", 1)

    recorded = RecordedTools(ToolResults.model_validate(results).results)
    assert recorded.answer("get_weather", {"city": "Paris"}) == "Sunny, 22C in Paris"


def test_an_answer_of_another_shape_is_a_trajhub_error() -> None:
    with _hub(lambda request: httpx.Response(200, json={"days": "many"})) as hub, \
            pytest.raises(TrajhubError, match=r"not a Retention .*trajhub server of this version"):
        hub.get_retention()


def test_the_atif_version_is_the_normalizers() -> None:
    assert ATIF_SCHEMA_VERSION == SCHEMA_VERSION


# --- what the client imports ----------------------------------------------------------------

def _module_file(name: str) -> Path | None:
    """The file of a trajhub module in this checkout (trajhub/ and its symlinked folders)."""
    base = ROOT.joinpath(*name.split("."))
    for path in (base.with_suffix(".py"), base / "__init__.py"):
        if path.exists():
            return path
    return None


def _imports(path: Path) -> tuple[set[str], set[str]]:
    """The absolute imports of a module run when it is imported, and those inside its
    functions (run when called), without those only type checkers read."""
    tree = ast.parse(path.read_text())
    typing_only = {id(n) for node in ast.walk(tree)
                   if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test)
                   for child in node.body for n in ast.walk(child)}
    in_functions = {id(n) for node in ast.walk(tree)
                    if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
                    for n in ast.walk(node) if n is not node}
    at_import: set[str] = set()
    when_called: set[str] = set()
    for node in ast.walk(tree):
        if id(node) in typing_only:
            continue
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names = [node.module] + [f"{node.module}.{a.name}" for a in node.names]
        else:
            continue
        (when_called if id(node) in in_functions else at_import).update(names)
    return at_import, when_called


def _client_imports() -> tuple[set[str], set[str], set[str]]:
    """From `trajhub.client`, following every trajhub module it imports: those modules, the
    third-party packages they import at import time, and those imported only when called."""
    seen: set[str] = set()
    third_party: set[str] = set()
    lazy: set[str] = set()
    todo = ["trajhub.client", "trajhub.service.client.replay", "trajhub.service.client.runner"]
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        path = _module_file(name)
        if path is None:  # `from package import name` of a name, not a module
            continue
        seen.add(name)
        at_import, when_called = _imports(path)
        for imported in at_import:
            top = imported.split(".")[0]
            if top == "trajhub":
                parts = imported.split(".")
                todo += [".".join(parts[:i]) for i in range(1, len(parts) + 1)]
            elif top not in sys.stdlib_module_names and top != "__future__":
                third_party.add(top)
        lazy |= {m.split(".")[0] for m in when_called} - set(sys.stdlib_module_names) \
            - {"trajhub"}
    return seen, third_party, lazy


def _requirement_names(requirements: list[str]) -> set[str]:
    return {r.split(">")[0].split("=")[0].split("[")[0].replace("-", "_")
            for r in requirements}


def test_the_client_imports_only_its_own_modules_and_its_declared_dependencies() -> None:
    modules, third_party, lazy = _client_imports()
    server = sorted(m for m in modules if not m.startswith(
        ("trajhub.records", "trajhub.service.client")) and m not in (
        "trajhub", "trajhub.client", "trajhub.service"))
    assert not server, f"the client imports server modules: {server}"
    assert third_party == _requirement_names(DISTRIBUTION["project"]["dependencies"]) \
        == {"httpx", "pydantic"}
    # imported when called: run_dataset's OpenTelemetry API, LangChain for hybrid replay's
    # LangChain tools; each an extra of the distribution
    assert lazy == {"opentelemetry", "langchain_core"}
    extras = DISTRIBUTION["project"]["optional-dependencies"]
    assert {name: _requirement_names(r) for name, r in extras.items()} == {
        "otel": {"opentelemetry_api"}, "langchain": {"langchain_core"}}


def test_the_client_distribution_holds_every_module_the_client_imports() -> None:
    modules, _, _ = _client_imports()
    packages = set(DISTRIBUTION["tool"]["setuptools"]["packages"])
    for name in modules:
        path = _module_file(name)
        assert path is not None
        package = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
        assert package in packages, name
        # the distribution's file is a link to this checkout's
        packaged = CLIENT.joinpath("src", *name.split("."))
        packaged = packaged / "__init__.py" if path.name == "__init__.py" \
            else packaged.with_suffix(".py")
        assert packaged.resolve() == path.resolve(), name
