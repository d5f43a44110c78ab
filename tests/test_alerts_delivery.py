"""Alert notifications on the durable queue (docs/alerts.md §5): two servers on one database
notify each change of state once; servers killed with SIGKILL mid-delivery leave the
notification to the next server, which sends it again with the same id, body and signature
(at least once: the receiver saw it twice, and dedupes by the id)."""

from __future__ import annotations

import os
import signal
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.harness import ServerProcess, TestDatabase, fetch_rows, separate_database, wait_for
from tests.webhook_receiver import Receiver, webhook_receiver

FAST = {"TRAJHUB_ALERT_INTERVAL_SECONDS": "0.2"}


def _events(url: str) -> list[Any]:
    return fetch_rows(url, "SELECT rule_id, delivery_id::text AS delivery_id, delivery "
                           "FROM alert_events ORDER BY id")


def _evaluations(url: str) -> int:
    """Evaluations recorded so far, as the rules' evaluated_ns moving tells (a sum of them)."""
    rows = fetch_rows(url, "SELECT coalesce(sum(evaluated_ns / 1000000), 0) AS n "
                           "FROM alert_rules")
    return int(rows[0]["n"])


def _more_evaluations(url: str, rounds: int) -> None:
    seen = {_evaluations(url)}

    def moved() -> bool:
        seen.add(_evaluations(url))
        return len(seen) > rounds

    wait_for(moved, timeout=60, what=f"{rounds} more rounds of evaluations")


def _start(url: str, workdir: Path) -> ServerProcess:
    workdir.mkdir()
    return ServerProcess.start(url, workdir, settle_seconds=0.3, extra_env=FAST)


def _silence_rule(server: ServerProcess, project: str, name: str, receiver: Receiver
                  ) -> dict[str, Any]:
    """A rule firing at once (fewer than 1 run in a window without runs)."""
    r = httpx.post(f"{server.http}/api/v1/alerts", headers={"trajhub-project": project},
                   json={"name": name, "metric": "runs", "condition": "below",
                         "alert_threshold": 1, "window_seconds": 60,
                         "webhook_url": receiver.url, "secret": "k" * 32})
    assert r.status_code == 201, r.text
    return dict(r.json())


@pytest.mark.slow  # several servers
def test_replicas_notify_once_and_a_kill_9_mid_delivery_sends_again_with_the_same_id(
        database: TestDatabase, tmp_path: Path) -> None:
    project = "alerts-kill"
    with separate_database(database) as url, webhook_receiver() as receiver:
        servers = [_start(url, tmp_path / name) for name in ("a", "b")]
        try:
            # two replicas evaluating every 0.2 s: each change is one event, one notification
            for i in range(4):
                _silence_rule(servers[i % 2], project, f"quiet-{i}", receiver)
            wait_for(lambda: len(_events(url)) == 4
                     and all(e["delivery"] == "delivered" for e in _events(url)),
                     timeout=60, what="four notifications delivered")
            _more_evaluations(url, 5)
            got = receiver.snapshot()
            assert len(got) == 4
            assert sorted(g.headers["x-trajhub-delivery"] for g in got) == sorted(
                e["delivery_id"] for e in _events(url))

            # the receiver holds its answer; both servers die while the POST is in flight
            receiver.hold.set()
            rule = _silence_rule(servers[0], project, "quiet-killed", receiver)
            wait_for(lambda: len(receiver.snapshot()) == 5, timeout=60,
                     what="the fifth notification to arrive")
            for server in servers:
                os.kill(server.process.pid, signal.SIGKILL)
                server.process.wait()
        finally:
            for server in servers:
                if server.process.poll() is None:
                    server.stop()
        receiver.hold.clear()
        receiver.release.set()
        first = receiver.snapshot()[4]
        [killed] = [e for e in _events(url) if e["rule_id"] == rule["id"]]
        assert killed["delivery"] == "pending"

        again = _start(url, tmp_path / "c")
        try:
            wait_for(lambda: [e["delivery"] for e in _events(url)
                              if e["rule_id"] == rule["id"]] == ["delivered"],
                     timeout=60, what="the notification sent again and delivered")
            _more_evaluations(url, 5)
        finally:
            again.stop()
        repeats = [g for g in receiver.snapshot()
                   if g.headers["x-trajhub-delivery"] == killed["delivery_id"]]
        # at least once, and here exactly twice: the same id, body and signature each time
        assert len(repeats) == 2
        assert repeats[0] == first and repeats[1].body == first.body
        assert repeats[1].headers["x-trajhub-signature-256"] == first.headers[
            "x-trajhub-signature-256"] and first.signed_by("k" * 32)
        assert len(receiver.snapshot()) == 6 and len(_events(url)) == 5
