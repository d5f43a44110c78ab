"""Helpers for the dataset and evaluation tests: replay real-client captures into a project and
wait for their trajectories, and the fixtures both test modules import. (No tests here.)"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import httpx
import pytest

from tests.captures import replay_run
from tests.harness import ServerProcess, final_trajectory, wait_for

#: Captures whose traces have distinct trace ids (several clients reuse one id across runs),
#: so they can share a project. Per fixtures/README.md: three runs of the `react` scenario by
#: the prebuilt graph `LangGraph`, one `model_error` run of it, one `react` run of the manual
#: graph `weather_math_agent`.
LANGGRAPH_REACT = ("openinference/react.prebuilt.invoke", "cozeloop_python/react.prebuilt.invoke",
                   "cozeloop_js/react.prebuilt.stream")
LANGGRAPH_MODEL_ERROR = ("cozeloop_python/model_error.prebuilt.stream",)
MANUAL_REACT = ("cozeloop_python/react.manual.stream",)
ALL_CAPTURES = LANGGRAPH_REACT + LANGGRAPH_MODEL_ERROR + MANUAL_REACT


@dataclass(frozen=True)
class Ingested:
    project: str
    #: capture → trace ids of its traces that carry spans of the agent graph
    traces: dict[str, list[str]]

    def trace_ids(self, captures: tuple[str, ...]) -> set[str]:
        return {t for c in captures for t in self.traces[c]}


def ingest_all(server: ServerProcess, project: str) -> Ingested:
    traces: dict[str, list[str]] = {}
    with httpx.Client(timeout=30) as client:
        for capture in ALL_CAPTURES:
            traces[capture] = sorted(replay_run(capture, server.http, server.grpc, project))
        for trace_ids in traces.values():
            for trace_id in trace_ids:
                final_trajectory(client, server.http, project, trace_id)
    return Ingested(project, traces)


def project_fixtures() -> tuple[Any, Any]:
    """The fixtures `ingested` (every capture of ALL_CAPTURES in a project of the test module's
    own) and `api` (a client of the REST API in that project), for a test module to assign."""

    @pytest.fixture(scope="module")
    def ingested(server: ServerProcess, request: pytest.FixtureRequest) -> Ingested:
        module = request.module.__name__.rsplit(".", 1)[-1].removeprefix("test_")
        return ingest_all(server, f"t-{module}-{uuid.uuid4().hex[:10]}")

    @pytest.fixture
    def api(server: ServerProcess, ingested: Ingested) -> Iterator[httpx.Client]:
        with httpx.Client(base_url=server.http + "/api/v1", timeout=30,
                          headers={"trajhub-project": ingested.project}) as client:
            yield client

    return ingested, api


def wait_evaluation(client: httpx.Client, base: str, project: str, evaluation: int,
                    timeout: float = 30) -> dict:  # type: ignore[type-arg]
    def probe() -> dict | None:  # type: ignore[type-arg]
        r = client.get(f"{base}/api/v1/evaluations/{evaluation}", params={"project": project})
        assert r.status_code == 200, r.text
        return r.json() if r.json()["status"] != "running" else None

    return wait_for(probe, timeout, what=f"evaluation {evaluation}")
