"""The OpenTelemetry Collector of deploy/otelcol-builder.yaml in front of trajhub, for real.

- `otelcol validate` accepts every Collector config in deploy/ (and rejects a broken one, so
  that the acceptance means something).
- Two trajhub replicas share one PostgreSQL behind the Collector, configured as
  deploy/otel-collector-replicas.yaml ships (persistent queue in file_storage, load_balancing by
  trace ID over a static list). The OTel SDK sends agent traces through it; one replica is
  killed with SIGKILL mid-load and restarted on the same ports. Every span the SDK was told was
  exported is stored, once, and every trace has exactly one trajectory, final.

The build (deploy/otelcol-build.sh) is cached by the manifest's hash outside the repository, so
only the first run after a manifest change pays for it. Without Go the build fails, and so do
these tests: they are the only check that the deploy files work with the Collector.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import threading
import time
from collections import Counter
from collections.abc import Sequence
from pathlib import Path

import asyncpg
import httpx
import psutil
import pytest
from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter, SpanExportResult

from bench._collector import (
    DEPLOY,
    Collector,
    collector_binary,
    free_port,
    replicas_config,
)
from tests.harness import ServerProcess, TestDatabase, run, separate_database, wait_for

pytestmark = pytest.mark.integration  # builds and runs the Collector

CONFIGS = sorted(DEPLOY.glob("otel-collector*.yaml"))
PROJECT = "collector"
#: agent runs sent, each a root agent span with model and tool steps under it
TRACES = 600
#: model turns per run; each but the last calls a tool, so a run has 2 * TURNS spans
TURNS = 4
#: runs started per second: the load lasts TRACES / RATE seconds, long enough to kill and
#: restart a replica in the middle of it
RATE = 40.0


@pytest.fixture(scope="module")
def otelcol() -> Path:
    return collector_binary()


def validate(binary: Path, config: Path) -> subprocess.CompletedProcess[str]:
    # the configs read these from the environment; validation needs them set, not real
    env = {**os.environ, "TRAJHUB_API_KEY": "x", "TRAJHUB_REPLICAS_DNS": "localhost"}
    return subprocess.run([str(binary), "validate", "--config", str(config)],
                          capture_output=True, text=True, timeout=120, env=env)


def test_the_deploy_dir_has_the_collector_configs() -> None:
    assert {p.name for p in CONFIGS} == {"otel-collector.yaml", "otel-collector-replicas.yaml"}


@pytest.mark.parametrize("config", CONFIGS, ids=lambda p: p.name)
def test_collector_validates_the_config(otelcol: Path, config: Path) -> None:
    done = validate(otelcol, config)
    assert done.returncode == 0, done.stderr


def test_validate_rejects_a_misspelled_key(otelcol: Path, tmp_path: Path) -> None:
    """The check above is a real check: an unknown key in an exporter fails it, by name."""
    broken = tmp_path / "broken.yaml"
    text = (DEPLOY / "otel-collector-replicas.yaml").read_text()
    broken.write_text(text.replace("routing_key:", "routing_kee:", 1))
    done = validate(otelcol, broken)
    assert done.returncode != 0 and "routing_kee" in done.stderr, done.stderr


class Recording(SpanExporter):
    """Passes batches to the real exporter and keeps the ids of every span in a batch it
    reported exported (SUCCESS): what the SDK's user was told was delivered."""

    def __init__(self, inner: SpanExporter) -> None:
        self.inner = inner
        self.exported: set[tuple[str, str]] = set()
        self.failed = 0
        self._lock = threading.Lock()

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        batch = list(spans)
        result = self.inner.export(batch)
        with self._lock:
            if result is SpanExportResult.SUCCESS:
                self.exported.update(ids(span) for span in batch)
            else:
                self.failed += len(batch)
        return result

    def shutdown(self) -> None:
        self.inner.shutdown()

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        return self.inner.force_flush(timeout_millis)


def ids(span: ReadableSpan) -> tuple[str, str]:
    assert span.context is not None
    return f"{span.context.trace_id:032x}", f"{span.context.span_id:016x}"


def send_runs(provider: TracerProvider, stop_at: int, sent: list[str]) -> None:
    """TRACES agent runs in the OTel GenAI conventions, RATE per second; each run's trace id
    goes to `sent` once the run ended (its spans are then in the SDK's queue)."""
    tracer = provider.get_tracer("collector-test")
    started = time.monotonic()
    for i in range(stop_at):
        # paced, not a burst: the load has to be still running when the replica dies
        delay = started + i / RATE - time.monotonic()
        if delay > 0:
            time.sleep(delay)
        with tracer.start_as_current_span("invoke_agent weather", attributes={
                "gen_ai.operation.name": "invoke_agent",
                "gen_ai.agent.name": "weather"}) as root:
            for turn in range(TURNS):
                with tracer.start_as_current_span("chat fake-model", attributes={
                        "gen_ai.operation.name": "chat", "gen_ai.request.model": "fake-model",
                        "gen_ai.usage.input_tokens": 100 + turn,
                        "gen_ai.usage.output_tokens": 10 + turn}):
                    pass
                if turn < TURNS - 1:
                    with tracer.start_as_current_span("execute_tool get_weather", attributes={
                            "gen_ai.operation.name": "execute_tool",
                            "gen_ai.tool.name": "get_weather",
                            "gen_ai.tool.call.arguments": f'{{"city": "city {i}"}}',
                            "gen_ai.tool.call.result": f"sunny, {turn} C"}):
                        pass
            sent.append(f"{root.get_span_context().trace_id:032x}")


async def stored(url: str) -> tuple[list[asyncpg.Record], list[asyncpg.Record]]:
    conn = await asyncpg.connect(url)
    try:
        spans = await conn.fetch(
            "SELECT trace_id, span_id FROM spans WHERE project = $1", PROJECT)
        trajectories = await conn.fetch(
            "SELECT trace_id, status, derivation_error FROM trajectories WHERE project = $1",
            PROJECT)
        return spans, trajectories
    finally:
        await conn.close()


def stored_span_count(url: str) -> int:
    async def count() -> int:
        conn = await asyncpg.connect(url)
        try:
            return int(await conn.fetchval(
                "SELECT count(*) FROM spans WHERE project = $1", PROJECT))
        finally:
            await conn.close()

    return int(run(count()))


def kill_9(server: ServerProcess) -> None:
    """SIGKILL to the replica's main process, as a crash or the OOM killer would; its workers
    die with it (PR_SET_PDEATHSIG, service/lifeline.py). Returns once all are gone, so that
    nothing of the old replica holds its ports."""
    family = [psutil.Process(server.process.pid),
              *psutil.Process(server.process.pid).children(recursive=True)]
    os.kill(server.process.pid, signal.SIGKILL)
    server.process.wait()
    psutil.wait_procs(family, timeout=30)
    assert not [p for p in family if p.is_running() and p.status() != psutil.STATUS_ZOMBIE]


@pytest.mark.slow  # a Collector and three trajhub starts
def test_a_replica_killed_mid_load_loses_and_duplicates_nothing(
        otelcol: Path, database: TestDatabase, tmp_path: Path) -> None:
    env = {"TRAJHUB_INGEST_WORKERS": "1", "TRAJHUB_DERIVATION_WORKERS": "1"}
    for name in ("a", "b", "b-again", "collector", "queue"):
        (tmp_path / name).mkdir()
    with separate_database(database) as url:
        replicas = [ServerProcess.start(url, tmp_path / "a", extra_env=env)]
        replicas.append(ServerProcess.start(url, tmp_path / "b", extra_env=env))
        grpc_port, health_port = free_port(), free_port()
        config = replicas_config([r.grpc for r in replicas], tmp_path / "queue",
                                 grpc_port=grpc_port, http_port=free_port(),
                                 health_port=health_port, max_retry_interval="1s")
        collector = Collector(otelcol, config, tmp_path / "collector", health_port)
        provider = TracerProvider(resource=Resource.create({
            "service.name": "weather-agent", "trajhub.project": PROJECT}))
        recording = Recording(OTLPSpanExporter(endpoint=f"127.0.0.1:{grpc_port}",
                                               insecure=True))
        # a queue that holds the whole load: the SDK never drops a span for lack of room
        provider.add_span_processor(BatchSpanProcessor(
            recording, max_queue_size=TRACES * TURNS * 2, max_export_batch_size=256,
            schedule_delay_millis=100))
        sent: list[str] = []
        load = threading.Thread(target=send_runs, args=(provider, TRACES, sent))
        try:
            collector.wait_ready()
            load.start()
            # mid-load: both replicas have stored spans, and most runs are still to come
            wait_for(lambda: stored_span_count(url) > TRACES * TURNS // 4
                     and len(sent) < TRACES // 2,
                     timeout=60, interval=0.1, what="a quarter of the spans stored")
            assert load.is_alive()
            killed_at, killed = len(sent), time.monotonic()
            kill_9(replicas[1])
            replicas[1] = ServerProcess.start(url, tmp_path / "b-again", extra_env={
                **env, "TRAJHUB_HTTP_PORT": str(replicas[1].http_port),
                "TRAJHUB_GRPC_PORT": str(replicas[1].grpc_port)})
            restarted_at, restarted = len(sent), time.monotonic()
            load.join()
            assert provider.force_flush(60_000)
            load_ended = time.monotonic()
            assert killed_at < restarted_at < TRACES, (
                "the replica was not down while runs were being sent")

            every_span = TRACES * 2 * TURNS

            def all_final() -> bool:
                r = httpx.get(f"{replicas[0].http}/api/v1/trajectories", params={
                    "project": PROJECT, "status": "final", "count": "true", "limit": 1},
                    timeout=30)
                return r.status_code == 200 and r.json()["total"] == TRACES

            wait_for(lambda: stored_span_count(url) >= every_span, timeout=90, interval=0.2,
                     what="every span stored")
            all_stored = time.monotonic()
            wait_for(all_final, timeout=60, interval=0.2, what="every trajectory final")
            # the figures bench/README.md reports (seen with `pytest -s`)
            print(f"\nkill test: replica down {restarted - killed:.1f} s, runs {killed_at} to "
                  f"{restarted_at} of {TRACES} sent meanwhile; last span stored "
                  f"{all_stored - load_ended:.1f} s and last trajectory final "
                  f"{time.monotonic() - load_ended:.1f} s after the SDK's last export")
        finally:
            provider.shutdown()
            collector_exit = collector.stop()
            for replica in replicas:
                replica.stop()
        assert collector_exit == 0, collector.log()[-3000:]
        assert [r.exit_code for r in replicas] == [0, 0]

        spans, trajectories = run(stored(url))

    # the SDK was told every span was delivered: the Collector was up all along and never
    # refused one, whatever happened behind it
    assert recording.failed == 0
    assert len(sent) == TRACES and len(recording.exported) == every_span
    stored_ids = Counter((s["trace_id"], s["span_id"]) for s in spans)
    missing = recording.exported - set(stored_ids)
    assert not missing, f"{len(missing)} exported spans are not stored, e.g. {sorted(missing)[:3]}"
    duplicates = [k for k, n in stored_ids.items() if n > 1]
    assert not duplicates, f"{len(duplicates)} spans stored twice, e.g. {duplicates[:3]}"
    assert set(stored_ids) == recording.exported, "spans stored that were never sent"

    by_trace = Counter(t["trace_id"] for t in trajectories)
    assert set(by_trace) == set(sent) and set(by_trace.values()) == {1}
    assert {(t["status"], t["derivation_error"]) for t in trajectories} == {("final", None)}

    # the replica's death was seen and ridden out by the Collector's retries, not missed
    log = collector.log()
    retries = len(re.findall(r"Exporting failed\. Will retry", log))
    print(f"kill test: {len(recording.exported)} spans exported, all stored once; the "
          f"Collector retried {retries} times")
    assert retries, log[-3000:]
    lost = re.findall(r".*(?:dropping data|rejecting data|no more retries).*", log, re.I)
    assert not lost, lost[:3]
