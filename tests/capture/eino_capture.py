"""Capture real Eino runs under each eino-ext tracing callback.

Builds the Go program in `tests/capture/eino/` and runs every shape of its script once per
tracing path, each against a local recording receiver:

- `cozeloop`: eino-ext `callbacks/cozeloop` through cozeloop-go, whose base URL alone points at
  `receiver.Receiver` (`COZELOOP_API_BASE_URL`); saved as `http_NNN_v1_loop_traces_ingest.*`.
- `apmplus`: eino-ext `callbacks/apmplus` (OTLP/gRPC, insecure) pointed at
  `grpc_receiver.GrpcReceiver`; saved as `grpc_NNN_v1_traces.*`.

It writes `tests/fixtures/eino-real/<shape>/<path>/` and each shape's `ground_truth.json`, which
the Go program writes from its script (`einocapture -truth`), not from a capture.

    .venv/bin/python -m tests.capture.eino_capture [--shapes a,b] [--paths cozeloop,apmplus]

Needs Go (the module pins every version in go.mod / go.sum; `go build` fetches them through the
Go module proxy the first time). Nothing else leaves the machine: the receivers listen on
127.0.0.1 and the chat model and tools are scripted.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from tests.capture.grpc_receiver import GrpcReceiver
from tests.capture.receiver import Receiver

HERE = Path(__file__).resolve().parent
MODULE = HERE / "eino"
OUT = HERE.parent / "fixtures" / "eino-real"
SHAPES = ("react_tools", "model_failure", "graph_fanout", "streaming", "supervisor", "adk_failure")
PATHS = ("cozeloop", "apmplus")
#: a run's own timeout: the program waits for its spans and flushes, which takes well under this
RUN_TIMEOUT_S = 60


def go_env() -> dict[str, str]:
    # -mod=readonly: go.mod and go.sum are the pinned versions, never rewritten by a build
    return {**os.environ, "GOFLAGS": "-mod=readonly -buildvcs=false"}


def build(binary: Path) -> None:
    subprocess.run(["go", "build", "-o", str(binary), "."], cwd=MODULE, env=go_env(), check=True)


def run(binary: Path, shape: str, path: str, *, endpoint: str,
        project: str = "") -> dict[str, object]:
    """One run of `shape` traced by `path`, sending to `endpoint` (a base URL for cozeloop, a
    host:port for apmplus); returns the program's summary line."""
    args = [str(binary), "-shape", shape, "-path", path]
    env = dict(os.environ)
    # a capture carries no OTel resource attributes from the caller's environment
    env.pop("OTEL_RESOURCE_ATTRIBUTES", None)
    if path == "cozeloop":
        env["COZELOOP_API_BASE_URL"] = endpoint
    else:
        args += ["-otlp", endpoint]
    if project:
        args += ["-project", project]
    done = subprocess.run(args, env=env, capture_output=True, text=True, timeout=RUN_TIMEOUT_S)
    if done.returncode != 0:
        raise RuntimeError(f"{shape}/{path} failed ({done.returncode}): {done.stderr}")
    summary: dict[str, object] = json.loads(done.stdout.strip().splitlines()[-1])
    return summary


def capture(binary: Path, shape: str, path: str) -> None:
    outdir = OUT / shape / path
    shutil.rmtree(outdir, ignore_errors=True)
    if path == "cozeloop":
        with Receiver(outdir) as receiver:
            summary = run(binary, shape, path, endpoint=receiver.endpoint)
    else:
        with GrpcReceiver(outdir) as grpc_receiver:
            summary = run(binary, shape, path, endpoint=grpc_receiver.endpoint)
    files = sorted(p.name for p in outdir.glob("*.bin"))
    print(f"{shape}/{path}: {len(files)} request(s); run error: {summary.get('error')}")
    if not files:
        raise RuntimeError(f"{shape}/{path}: nothing was sent")


def write_ground_truth(binary: Path) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        subprocess.run([str(binary), "-truth", tmp], check=True)
        for shape in SHAPES:
            (OUT / shape).mkdir(parents=True, exist_ok=True)
            shutil.copyfile(Path(tmp) / shape / "ground_truth.json",
                            OUT / shape / "ground_truth.json")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shapes", default=",".join(SHAPES))
    parser.add_argument("--paths", default=",".join(PATHS))
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        binary = Path(tmp) / "einocapture"
        build(binary)
        write_ground_truth(binary)
        for shape in args.shapes.split(","):
            for path in args.paths.split(","):
                capture(binary, shape, path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
