"""TRAJHUB_DERIVE_AT_INGEST=auto: the ingest pool derives at ingest while it has headroom and
queues for the derivation workers while it is saturated (service/ingest/pool.py,
DerivePolicy): the decisions with a fake clock, then a saturated server."""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx

from tests.harness import ServerProcess, TestDatabase, get_json, wait_for
from tests.otlp_builders import new_span_id, new_trace_id, request, span
from trajhub.service.ingest.pool import DerivePolicy, drainers


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def arrive(policy: DerivePolicy, inflight: int) -> bool:
    policy.changed(inflight)
    return policy.derive(inflight)


def test_fixed_modes_ignore_the_load() -> None:
    always, never = DerivePolicy("true", 4), DerivePolicy("false", 4)
    for inflight in (1, 4, 32):
        assert arrive(always, inflight)
        assert not arrive(never, inflight)


def test_one_request_at_a_time_is_derived() -> None:
    clock = Clock()
    policy = DerivePolicy("auto", 4, clock=clock)
    for _ in range(100):
        assert arrive(policy, 1)
        clock.now += 0.05
        policy.changed(0)
        clock.now += 0.05


def test_a_burst_is_queued_at_once_and_deriving_resumes_after_it() -> None:
    clock = Clock()
    policy = DerivePolicy("auto", 4, clock=clock)
    assert policy.high == 3
    assert arrive(policy, 1) and arrive(policy, 2)
    assert not arrive(policy, 3)          # the workers are nearly all busy: queue, at once
    # the burst: 4 senders, a request in flight per sender, brief gaps between them
    decisions = []
    for _ in range(200):
        clock.now += 0.05
        policy.changed(2)
        decisions.append(policy.derive(2))  # a dip between requests does not switch back
        clock.now += 0.001
        policy.changed(3)
        decisions.append(policy.derive(3))
    assert not any(decisions)
    # quiet: one request now and then; deriving resumes once the average has fallen
    resumed = None
    for step in range(100):
        clock.now += 0.1
        policy.changed(0)
        if arrive(policy, 1) and resumed is None:
            resumed = step * 0.1
        policy.changed(0)
    assert resumed is not None and 0.5 < resumed < 5


def test_a_load_near_the_threshold_does_not_flip_every_request() -> None:
    """Alternating 2 and 3 requests in flight: once saturated, it stays queueing (the
    average stays above half the threshold) instead of switching on every request."""
    clock = Clock()
    policy = DerivePolicy("auto", 4, clock=clock)
    switches, last = 0, True
    for i in range(400):
        clock.now += 0.02
        decision = arrive(policy, 3 if i % 2 else 2)
        switches += decision != last
        last = decision
    assert switches == 1


def test_one_worker_queues_only_when_requests_wait() -> None:
    policy = DerivePolicy("auto", 1, clock=Clock())
    assert policy.high == 2
    assert arrive(policy, 1)
    assert not arrive(policy, 2)


def test_idle_only_once_the_burst_is_over() -> None:
    clock = Clock()
    policy = DerivePolicy("auto", 4, clock=clock)
    assert policy.idle(0)
    assert not arrive(policy, 3)
    policy.changed(0)
    assert not policy.idle(0)            # a gap between a burst's requests
    assert not policy.idle(1)
    clock.now += 0.05
    assert not policy.idle(0)            # still within the burst's pace
    clock.now += 0.2
    assert policy.idle(0)                # the burst is over: queued derivation resumes
    assert not arrive(policy, 1)         # while deriving at ingest waits for the average


def test_drainers_are_half_the_ingest_workers_within_the_cores_left() -> None:
    # 2 cores: one derivation worker and one draining ingest worker, not two
    assert drainers(ingest_workers=4, derivation_workers=1, cores=2) == 1
    assert drainers(ingest_workers=4, derivation_workers=1, cores=3) == 2
    # enough cores: half of the ingest workers, as before
    assert drainers(ingest_workers=4, derivation_workers=1, cores=8) == 2
    assert drainers(ingest_workers=16, derivation_workers=2, cores=8) == 6
    # always one, even when the derivation workers take every core
    assert drainers(ingest_workers=4, derivation_workers=2, cores=2) == 1
    assert drainers(ingest_workers=1, derivation_workers=1, cores=1) == 1


def test_a_saturated_server_queues_and_every_trajectory_follows(
        database: TestDatabase, project: str, tmp_path: Path) -> None:
    """Two ingest workers: two requests in flight saturate them, so concurrent requests are
    queued for the derivation workers (counted in /metrics); every trace still gets its
    trajectory, each stored once."""
    server = ServerProcess.start(database.url, tmp_path,
                                 extra_env={"TRAJHUB_INGEST_WORKERS": "2"})
    try:
        traces = [new_trace_id() for _ in range(48)]
        bodies = []
        for i in range(0, len(traces), 4):
            spans = []
            for tid in traces[i:i + 4]:
                root = new_span_id()
                spans.append(span(tid, "agent", span_id=root, attributes={
                    "openinference.span.kind": "AGENT", "input.value": "q"}))
                spans.append(span(tid, "llm", parent=root, attributes={
                    "openinference.span.kind": "LLM", "output.value": "a"}))
            bodies.append(request(spans).SerializeToString())

        def send(body: bytes) -> int:
            r = httpx.post(f"{server.http}/v1/traces", content=body, timeout=30,
                           headers={"content-type": "application/x-protobuf",
                                    "trajhub-project": project})
            return r.status_code

        with ThreadPoolExecutor(8) as pool:
            assert set(pool.map(send, bodies)) == {200}
        metrics = httpx.get(f"{server.http}/metrics").text
        deferred = [line for line in metrics.splitlines()
                    if line.startswith("trajhub_ingest_deferred_total ")]
        assert deferred and float(deferred[0].split()[1]) > 0
        with httpx.Client() as c:
            def derived() -> list[dict[str, Any]] | None:
                items: list[dict[str, Any]] = get_json(
                    c, f"{server.http}/api/v1/trajectories", project=project,
                    limit=100)["items"]
                return items if len(items) == len(traces) else None

            listed = wait_for(derived, timeout=60, what="every trajectory")
        assert sorted(t["trace_id"] for t in listed) == sorted(t.hex() for t in traces)
    finally:
        assert server.stop() == 0


def test_a_steady_load_after_a_spike_gets_the_spikes_trajectories_while_it_lasts(
        database: TestDatabase, project: str, tmp_path: Path) -> None:
    """A spike saturates two ingest workers and is queued; then requests keep arriving one
    at a time, never leaving ingest idle. Once the pool derives at ingest again, the
    derivation worker resumes: the spike's traces get their trajectories while the requests
    still arrive, not after the worker's longest pause (MAX_PAUSE_SECONDS, 30 s)."""
    server = ServerProcess.start(database.url, tmp_path,
                                 extra_env={"TRAJHUB_INGEST_WORKERS": "2"})

    def body(traces: list[bytes]) -> bytes:
        spans = []
        for tid in traces:
            root = new_span_id()
            spans.append(span(tid, "agent", span_id=root, attributes={
                "openinference.span.kind": "AGENT", "input.value": "q"}))
            spans.append(span(tid, "llm", parent=root, attributes={
                "openinference.span.kind": "LLM", "output.value": "a"}))
        return request(spans).SerializeToString()

    try:
        spike = [new_trace_id() for _ in range(48)]
        with httpx.Client(timeout=30, headers={"content-type": "application/x-protobuf",
                                               "trajhub-project": project}) as c:
            def send(traces: list[bytes]) -> int:
                return c.post(f"{server.http}/v1/traces", content=body(traces)).status_code

            with ThreadPoolExecutor(8) as pool:
                assert set(pool.map(send, [spike[i:i + 4] for i in range(0, 48, 4)])) == {200}
            deferred = [line for line in c.get(f"{server.http}/metrics").text.splitlines()
                        if line.startswith("trajhub_ingest_deferred_total ")]
            assert deferred and float(deferred[0].split()[1]) > 0

            def listed() -> set[str]:
                items = get_json(c, f"{server.http}/api/v1/trajectories", project=project,
                                 limit=200)["items"]
                return {t["trace_id"] for t in items}

            wanted = {t.hex() for t in spike}
            # one request at a time, a few ms apart: ingest is never idle for QUIET_SECONDS
            deadline = time.monotonic() + 20
            while not wanted <= listed():
                assert time.monotonic() < deadline, "the spike's trajectories waited"
                assert send([new_trace_id()]) == 200
                time.sleep(0.02)
    finally:
        assert server.stop() == 0
