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

import contextlib
import os
import re
import signal
import subprocess
import threading
import time
from collections import Counter
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

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
from tests.harness import (
    ServerProcess,
    TestDatabase,
    fetch_value,
    run,
    separate_database,
    wait_for,
)

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
        self.attempted: set[tuple[str, str]] = set()
        self.failed = 0
        self._lock = threading.Lock()

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        batch = list(spans)
        result = self.inner.export(batch)
        with self._lock:
            self.attempted.update(ids(span) for span in batch)
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
    return int(fetch_value(url, "SELECT count(*) FROM spans WHERE project = $1", PROJECT))


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


@dataclass
class Rig:
    """Two replicas on one database behind the Collector, and an OTel SDK sending to it."""

    url: str
    replicas: list[ServerProcess]
    collector: Collector
    collector_args: tuple[Path, dict[str, Any], Path, int]
    provider: TracerProvider
    recording: Recording
    sent: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.load = threading.Thread(target=send_runs, args=(self.provider, TRACES, self.sent))

    def restart_collector(self) -> None:
        self.collector = Collector(*self.collector_args)
        self.collector.wait_ready()

    def all_stored(self) -> bool:
        """Every span the SDK was told was exported is stored."""
        spans, _ = run(stored(self.url))
        return not self.recording.exported - {(s["trace_id"], s["span_id"]) for s in spans}

    def all_final(self) -> bool:
        """As many final trajectories (read over REST) as traces with stored spans."""
        spans, _ = run(stored(self.url))
        r = httpx.get(f"{self.replicas[0].http}/api/v1/trajectories", params={
            "project": PROJECT, "status": "final", "count": "true", "limit": 1}, timeout=30)
        return (r.status_code == 200
                and r.json()["total"] == len({s["trace_id"] for s in spans}))


@contextlib.contextmanager
def rig(otelcol: Path, database: TestDatabase, tmp_path: Path) -> Iterator[Rig]:
    """Yields the rig with the Collector ready and the load not started; stops everything
    afterwards, and checks that the replicas and the last Collector exited cleanly."""
    env = {"TRAJHUB_INGEST_WORKERS": "1", "TRAJHUB_DERIVATION_WORKERS": "1"}
    for name in ("a", "b", "collector", "queue"):
        (tmp_path / name).mkdir()
    with separate_database(database) as url:
        replicas = [ServerProcess.start(url, tmp_path / "a", extra_env=env)]
        replicas.append(ServerProcess.start(url, tmp_path / "b", extra_env=env))
        grpc_port, health_port = free_port(), free_port()
        config = replicas_config([r.grpc for r in replicas], tmp_path / "queue",
                                 grpc_port=grpc_port, http_port=free_port(),
                                 health_port=health_port, max_retry_interval="1s")
        args = (otelcol, config, tmp_path / "collector", health_port)
        provider = TracerProvider(resource=Resource.create({
            "service.name": "weather-agent", "trajhub.project": PROJECT}))
        recording = Recording(OTLPSpanExporter(endpoint=f"127.0.0.1:{grpc_port}",
                                               insecure=True))
        # a queue that holds the whole load: the SDK never drops a span for lack of room
        provider.add_span_processor(BatchSpanProcessor(
            recording, max_queue_size=TRACES * TURNS * 2, max_export_batch_size=256,
            schedule_delay_millis=100))
        the_rig = Rig(url, replicas, Collector(*args), args, provider, recording)
        try:
            the_rig.collector.wait_ready()
            yield the_rig
        finally:
            provider.shutdown()
            collector_exit = the_rig.collector.stop()
            for replica in the_rig.replicas:
                replica.stop()
        assert collector_exit == 0, the_rig.collector.log()[-3000:]
        assert [r.exit_code for r in the_rig.replicas] == [0, 0]


def check_stored(the_rig: Rig) -> None:
    """Every span the SDK was told was exported is stored, once; nothing else is; every trace
    with a stored span has exactly one trajectory, final."""
    spans, trajectories = run(stored(the_rig.url))
    exported = the_rig.recording.exported
    stored_ids = Counter((s["trace_id"], s["span_id"]) for s in spans)
    missing = exported - set(stored_ids)
    assert not missing, f"{len(missing)} exported spans are not stored, e.g. {sorted(missing)[:3]}"
    duplicates = [k for k, n in stored_ids.items() if n > 1]
    assert not duplicates, f"{len(duplicates)} spans stored twice, e.g. {duplicates[:3]}"
    # a span whose export the SDK saw fail may still have arrived; none that was never sent
    assert set(stored_ids) <= the_rig.recording.attempted, "spans stored that were never sent"

    by_trace = Counter(t["trace_id"] for t in trajectories)
    assert set(by_trace) == {trace_id for trace_id, _ in stored_ids}
    assert set(by_trace.values()) == {1}, "a trace with two trajectories"
    assert {(t["status"], t["derivation_error"]) for t in trajectories} == {("final", None)}


def check_log(collector: Collector) -> int:
    """The number of retries the Collector logged; fails on any line saying it gave data up.

    A line that rejects data and suggests enabling `sending_queue` comes from a replica's own
    exporter inside the load balancer, which has no queue (deploy/otel-collector.yaml): when
    its retries outlast the balancer's timeout (a replica that takes long to come back, as on
    a loaded machine), it hands the batch back to the balancer, whose persistent queue retries
    it. That is a retry, not a loss; `check_stored` shows every span arrived."""
    log = collector.log()
    lines = re.findall(r".*(?:dropping data|rejecting data|no more retries).*", log, re.I)
    handed_back = [line for line in lines if "Try enabling sending_queue" in line]
    lost = [line for line in lines if line not in handed_back]
    assert not lost, lost[:3]
    return len(re.findall(r"Exporting failed\. Will retry", log)) + len(handed_back)


@pytest.mark.slow  # a Collector and three trajhub starts
def test_a_replica_killed_mid_load_loses_and_duplicates_nothing(
        otelcol: Path, database: TestDatabase, tmp_path: Path) -> None:
    with rig(otelcol, database, tmp_path) as r:
        r.load.start()
        # mid-load: spans are being stored, and most runs are still to come
        wait_for(lambda: len(r.sent) >= TRACES // 4 and stored_span_count(r.url) > 0,
                 timeout=60, interval=0.1, what="a quarter of the runs sent, spans stored")
        assert r.load.is_alive()
        killed_at, killed = len(r.sent), time.monotonic()
        victim = r.replicas[1]
        kill_9(victim)
        (tmp_path / "b-again").mkdir()
        r.replicas[1] = ServerProcess.start(r.url, tmp_path / "b-again", extra_env={
            "TRAJHUB_INGEST_WORKERS": "1", "TRAJHUB_DERIVATION_WORKERS": "1",
            "TRAJHUB_HTTP_PORT": str(victim.http_port),
            "TRAJHUB_GRPC_PORT": str(victim.grpc_port)})
        restarted_at, restarted = len(r.sent), time.monotonic()
        r.load.join()
        assert r.provider.force_flush(60_000)
        load_ended = time.monotonic()
        # on a slow machine the load may end before the restart: the rest waits in the queue
        assert killed_at < restarted_at, "the replica was not down while runs were being sent"

        every_span = TRACES * 2 * TURNS
        wait_for(r.all_stored, timeout=90, interval=0.2, what="every exported span stored")
        all_stored = time.monotonic()
        wait_for(r.all_final, timeout=60, interval=0.2, what="every trajectory final")
        # the figures bench/README.md reports (seen with `pytest -s`)
        print(f"\nreplica kill: down {restarted - killed:.1f} s, runs {killed_at} to "
              f"{restarted_at} of {TRACES} sent meanwhile; last span stored "
              f"{all_stored - load_ended:.1f} s and last trajectory final "
              f"{time.monotonic() - load_ended:.1f} s after the SDK's last export")
        check_stored(r)

    # the Collector was up all along: the SDK was told every span was delivered, whatever
    # happened behind it
    assert r.recording.failed == 0
    assert len(r.sent) == TRACES and len(r.recording.exported) == every_span
    # the replica's death was seen and ridden out by the Collector's retries, not missed
    retries = check_log(r.collector)
    print(f"replica kill: {every_span} spans exported, all stored once; the Collector "
          f"retried {retries} times")
    assert retries


@pytest.mark.slow  # a Collector twice and two trajhub starts
def test_the_collector_killed_with_spans_queued_loses_none_it_acknowledged(
        otelcol: Path, database: TestDatabase, tmp_path: Path) -> None:
    """Both replicas frozen (SIGSTOP), so that what the Collector acknowledges piles up in its
    persistent queue; the Collector killed with SIGKILL; the replicas resumed and the Collector
    restarted on the same queue directory: it sends what it had acknowledged."""
    with rig(otelcol, database, tmp_path) as r:
        r.load.start()
        # the Collector is taking spans (how fast the replicas store them does not matter here)
        wait_for(lambda: len(r.recording.exported) >= 500, timeout=60, interval=0.05,
                 what="the first spans exported")
        for replica in r.replicas:
            os.kill(replica.process.pid, signal.SIGSTOP)
        try:
            # what the SDK is told from now on was exported can reach no replica: it is in
            # the Collector's queue (or in a frozen replica's socket) when the Collector dies
            frozen = len(r.recording.exported)
            wait_for(lambda: len(r.recording.exported) >= frozen + 1000, timeout=60,
                     interval=0.05, what="a thousand spans acknowledged while frozen")
            r.collector.process.kill()
            r.collector.process.wait()
            queued = len(r.recording.exported) - frozen
        finally:
            for replica in r.replicas:
                os.kill(replica.process.pid, signal.SIGCONT)
        r.restart_collector()
        r.load.join()
        r.provider.force_flush(60_000)
        # on time-out check_stored says what is missing
        with contextlib.suppress(AssertionError):
            wait_for(r.all_stored, timeout=90, interval=0.2, what="every exported span stored")
            wait_for(r.all_final, timeout=60, interval=0.2, what="every trajectory final")
        print(f"\nCollector kill: {queued} acknowledged spans were only in its queue when it "
              f"was killed; {len(r.recording.exported)} exported, "
              f"{r.recording.failed} refused while it was down")
        check_stored(r)

    check_log(r.collector)
