"""Helpers for the dataset and evaluation tests: replay real-client captures into a project and
wait for their trajectories. (No tests here.)"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import httpx

from tests.harness import ServerProcess, final_trajectory, wait_for
from tests.normalize_support import REAL, by_trace, load_file

#: Captures whose traces have distinct trace ids (several clients reuse one id across runs),
#: so they can share a project. Per fixtures/README.md: three runs of the `react` scenario by
#: the prebuilt graph `LangGraph`, one `model_error` run of it, one `react` run of the manual
#: graph `weather_math_agent`.
LANGGRAPH_REACT = ("openinference/react.prebuilt.invoke", "cozeloop_python/react.prebuilt.invoke",
                   "cozeloop_js/react.prebuilt.stream")
LANGGRAPH_MODEL_ERROR = ("cozeloop_python/model_error.prebuilt.stream",)
MANUAL_REACT = ("cozeloop_python/react.manual.stream",)
ALL_CAPTURES = LANGGRAPH_REACT + LANGGRAPH_MODEL_ERROR + MANUAL_REACT

_FORWARDED = ("content-type", "content-encoding", "authorization", "cozeloop-workspace-id")


@dataclass(frozen=True)
class Ingested:
    project: str
    #: capture → trace ids of its traces that carry spans of the agent graph
    traces: dict[str, list[str]]

    def trace_ids(self, captures: tuple[str, ...]) -> set[str]:
        return {t for c in captures for t in self.traces[c]}


def replay(client: httpx.Client, base: str, project: str, capture: str) -> list[str]:
    """POST every captured HTTP request of a capture, as sent, into `project`; returns the
    trace ids in it."""
    directory = REAL / capture
    trace_ids: set[str] = set()
    for body_path in sorted(directory.glob("http_*.bin")):
        meta = json.loads(body_path.with_suffix(".json").read_text())
        headers = {k.lower(): v for k, v in meta["headers"].items() if k.lower() in _FORWARDED}
        headers["trajhub-project"] = project
        r = client.post(base + meta["path"], content=body_path.read_bytes(), headers=headers)
        assert r.status_code == 200, (capture, r.status_code, r.text)
        trace_ids.update(by_trace(load_file(body_path)))
    return sorted(trace_ids)


def ingest_all(server: ServerProcess, project: str) -> Ingested:
    traces: dict[str, list[str]] = {}
    with httpx.Client(timeout=30) as client:
        for capture in ALL_CAPTURES:
            traces[capture] = replay(client, server.http, project, capture)
        for trace_ids in traces.values():
            for trace_id in trace_ids:
                final_trajectory(client, server.http, project, trace_id)
    return Ingested(project, traces)


def wait_evaluation(client: httpx.Client, base: str, project: str, evaluation: int,
                    timeout: float = 30) -> dict:  # type: ignore[type-arg]
    def probe() -> dict | None:  # type: ignore[type-arg]
        r = client.get(f"{base}/api/v1/evaluations/{evaluation}", params={"project": project})
        assert r.status_code == 200, r.text
        return r.json() if r.json()["status"] != "running" else None

    return wait_for(probe, timeout, what=f"evaluation {evaluation}")


def capture_dir(capture: str) -> Path:
    return REAL / capture
