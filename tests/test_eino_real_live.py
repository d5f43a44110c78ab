"""Real Eino runs against a live server: the captures stay reproducible.

Builds the Go program in tests/capture/eino/ (`go build` with the module's pinned go.mod and
go.sum, GOFLAGS=-mod=readonly; the first build downloads the modules through the Go module proxy
into the module cache) and runs every shape once per tracing path, each into a project of its
own:

- `cozeloop`: eino-ext callbacks/cozeloop through cozeloop-go, with only its base URL
  (`COZELOOP_API_BASE_URL`) pointed at the server's HTTP port, a dummy workspace id (the
  project) and a dummy API token;
- `apmplus`: eino-ext callbacks/apmplus, OTLP/gRPC (insecure) at the server's gRPC port, the
  project as the resource attribute `trajhub.project`.

Then it polls the REST API until each project's run is a final trajectory and checks it against
the shape's ground truth (tests/eino_real_support.py), as tests/test_eino_real.py does for the
committed captures.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import uuid
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.eino_real_support import MODULE, cases, check_trajectory
from tests.harness import ServerProcess, final_trajectory, get_json, wait_for

pytestmark = [pytest.mark.integration, pytest.mark.slow]

#: a cold module and build cache builds the program in several minutes on this machine's two
#: cores (tests/capture/README.md); a warm one in seconds
BUILD_TIMEOUT_S = 900
RUN_TIMEOUT_S = 60


@pytest.fixture(scope="module")
def program(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    go = shutil.which("go")
    assert go is not None, "the Go toolchain is needed to build tests/capture/eino"
    binary = tmp_path_factory.mktemp("einocapture") / "einocapture"
    env = {**os.environ, "GOFLAGS": "-mod=readonly -buildvcs=false"}
    subprocess.run([go, "build", "-o", str(binary), "."], cwd=MODULE, env=env, check=True,
                   timeout=BUILD_TIMEOUT_S)
    yield binary


def _run(binary: Path, server: ServerProcess, shape: str, path: str, project: str) -> str:
    args = [str(binary), "-shape", shape, "-path", path, "-project", project]
    env = {k: v for k, v in os.environ.items() if k != "OTEL_RESOURCE_ATTRIBUTES"}
    if path == "cozeloop":
        env["COZELOOP_API_BASE_URL"] = server.http
    else:
        args += ["-otlp", server.grpc]
    done = subprocess.run(args, env=env, capture_output=True, text=True, timeout=RUN_TIMEOUT_S)
    assert done.returncode == 0, (shape, path, done.stderr)
    return done.stdout


def _trajectory(client: httpx.Client, server: ServerProcess, project: str) -> dict[str, Any]:
    def one_run() -> str | None:
        items = get_json(client, f"{server.http}/api/v1/trajectories", project=project)["items"]
        return str(items[0]["trace_id"]) if len(items) == 1 else None

    trace_id = wait_for(one_run, timeout=30, what=f"the run of project {project}")
    response = final_trajectory(client, server.http, project, trace_id)
    data: dict[str, Any] = response.json()
    # a run is one trace: nothing else arrived in its project meanwhile
    listed = get_json(client, f"{server.http}/api/v1/trajectories", project=project)["items"]
    assert [t["trace_id"] for t in listed] == [trace_id]
    return data


def test_every_shape_under_every_callback_against_a_live_server(
        program: Path, server: ServerProcess) -> None:
    tag = uuid.uuid4().hex[:8]
    runs = {(shape, path): f"eino-{shape}-{path}-{tag}".replace("_", "-")
            for shape, path in cases()}
    # the runs are independent processes, each into its own project
    with ThreadPoolExecutor(max_workers=4) as pool:
        for future in [pool.submit(_run, program, server, shape, path, project)
                       for (shape, path), project in runs.items()]:
            future.result()
    with httpx.Client(timeout=30) as client:
        for (shape, path), project in runs.items():
            check_trajectory(_trajectory(client, server, project), shape, path)
