"""The OpenTelemetry Collector of deploy/otelcol-builder.yaml, for the tests and the benchmarks:
its binary (built by deploy/otelcol-build.sh, or the cached one), a config made from
deploy/otel-collector-replicas.yaml for replicas on this machine, and the running process.

Shared by tests/test_collector.py and bench/collector.py, so that both run the shipped config
with only its addresses and local paths changed (and, where a caller asks, shorter retry
intervals).
"""

from __future__ import annotations

import copy
import os
import signal
import socket
import subprocess
import time
from pathlib import Path
from typing import Any

import httpx
import yaml

ROOT = Path(__file__).resolve().parent.parent
DEPLOY = ROOT / "deploy"
BUILD_SCRIPT = DEPLOY / "otelcol-build.sh"
REPLICAS_CONFIG = DEPLOY / "otel-collector-replicas.yaml"
EXPORTER = "load_balancing/trajhub"


def collector_binary(timeout: float = 1800) -> Path:
    """The built Collector: deploy/otelcol-build.sh builds it when the manifest's build is not
    cached yet (minutes; needs Go), else only prints its path."""
    done = subprocess.run(["bash", str(BUILD_SCRIPT)], capture_output=True, text=True,
                          timeout=timeout)
    if done.returncode != 0:
        raise RuntimeError(f"{BUILD_SCRIPT.relative_to(ROOT)} failed ({done.returncode}):\n"
                           + done.stderr[-4000:])
    path = Path(done.stdout.strip().splitlines()[-1])
    assert path.is_file(), path
    return path


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def replicas_config(backends: list[str], queue_dir: Path, *, grpc_port: int, http_port: int,
                    health_port: int, max_retry_interval: str | None = None) -> dict[str, Any]:
    """deploy/otel-collector-replicas.yaml with its receivers and health check on loopback ports
    of ours, its persistent queue in `queue_dir`, `backends` (HOST:GRPC-PORT) as the static
    list, and the Collector's own metrics off (their default port, 8888, is one per machine).

    `max_retry_interval` caps the retry back-off at both levels of the exporter: the shipped
    30 s suits a replica that is down for minutes, while a test that restarts one within
    seconds would otherwise wait up to 30 s for the next attempt."""
    config: dict[str, Any] = copy.deepcopy(yaml.safe_load(REPLICAS_CONFIG.read_text()))
    protocols = config["receivers"]["otlp"]["protocols"]
    protocols["grpc"]["endpoint"] = f"127.0.0.1:{grpc_port}"
    protocols["http"]["endpoint"] = f"127.0.0.1:{http_port}"
    config["extensions"]["health_check"]["endpoint"] = f"127.0.0.1:{health_port}"
    config["extensions"]["file_storage/queue"]["directory"] = str(queue_dir)
    exporter = config["exporters"][EXPORTER]
    exporter["resolver"]["static"]["hostnames"] = list(backends)
    if max_retry_interval is not None:
        for retry in (exporter["retry_on_failure"],
                      exporter["protocol"]["otlp"]["retry_on_failure"]):
            retry["initial_interval"] = "100ms"
            retry["max_interval"] = max_retry_interval
    config["service"]["telemetry"] = {"metrics": {"level": "none"}}
    return config


class Collector:
    """The Collector binary running one config, its log in `workdir`/collector.log."""

    def __init__(self, binary: Path, config: dict[str, Any], workdir: Path,
                 health_port: int, env: dict[str, str] | None = None) -> None:
        self.config_path = workdir / "collector.yaml"
        self.config_path.write_text(yaml.safe_dump(config, sort_keys=False))
        self.log_path = workdir / "collector.log"
        self.health = f"http://127.0.0.1:{health_port}/"
        # appended to: a Collector restarted in the same directory keeps its predecessor's log
        log = open(self.log_path, "ab")  # noqa: SIM115 - the child writes to it for its life
        self.process = subprocess.Popen(
            [str(binary), "--config", str(self.config_path)], stdout=log, stderr=log,
            env={**os.environ, "TRAJHUB_API_KEY": "unused-with-auth-off", **(env or {})})
        log.close()

    def wait_ready(self, timeout: float = 60) -> None:
        """Until the health_check extension answers 200 (the pipelines are running)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"the Collector exited with {self.process.returncode}:\n"
                                   + self.log()[-4000:])
            try:
                if httpx.get(self.health, timeout=2).status_code == 200:
                    return
            except httpx.HTTPError:
                pass
            time.sleep(0.05)
        raise RuntimeError("the Collector did not become ready:\n" + self.log()[-4000:])

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")

    def stop(self, timeout: float = 60) -> int:
        """SIGTERM, which drains the pipelines, then the exit status."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        return self.process.returncode
