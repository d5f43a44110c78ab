"""TRAJHUB_DERIVE_AT_INGEST=auto: the ingest pool derives at ingest while it has headroom and
queues for the derivation workers while it is saturated (service/ingest/pool.py,
DerivePolicy). Pure: a fake clock, no server."""

from __future__ import annotations

from trajhub.service.ingest.pool import DerivePolicy


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
