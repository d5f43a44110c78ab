"""Monitoring alerts (docs/alerts.md) on a running server: a rule fires, warns and resolves once
per change of state, each change POSTed signed to a local webhook receiver; failed attempts are
retried with backoff; bad rules are a 4xx naming the problem; muting, paging and deleting; the
client and the CLI. Every wait is for a condition (tests.harness.wait_for)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import asyncpg
import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

from tests.cli_runner import run_cli
from tests.harness import (
    ServerProcess,
    TestDatabase,
    rolled_back,
    separate_database,
    wait_for,
)
from tests.otlp_builders import PB, new_span_id, new_trace_id, request, span
from tests.webhook_receiver import Receiver, webhook_receiver
from trajhub.client import TrajhubClient
from trajhub.service.workers import alerts as alert_worker
from trajhub.storage import alert_reads
from trajhub.storage import alerts as alert_store
from trajhub.storage.migrate import migrate


@pytest.fixture
def api(alert_server: ServerProcess, project: str) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=alert_server.http + "/api/v1",
                      headers={"trajhub-project": project}) as client:
        yield client


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    with webhook_receiver() as r:
        yield r


def add_alert(api: httpx.Client, **body: Any) -> dict[str, Any]:
    r = api.post("/alerts", json=body)
    assert r.status_code == 201, r.text
    return dict(r.json())


def alert(api: httpx.Client, alert_id: int) -> dict[str, Any]:
    r = api.get(f"/alerts/{alert_id}")
    assert r.status_code == 200, r.text
    return dict(r.json())


def events(api: httpx.Client, alert_id: int) -> list[dict[str, Any]]:
    r = api.get(f"/alerts/{alert_id}/events")
    assert r.status_code == 200, r.text
    return list(r.json()["items"])


def evaluated_since(api: httpx.Client, alert_id: int, times: int) -> None:
    """Wait until the rule has been evaluated `times` more times (its evaluated_time moved)."""
    seen = {alert(api, alert_id)["evaluated_time"]}

    def moved() -> bool:
        seen.add(alert(api, alert_id)["evaluated_time"])
        return len(seen) > times

    wait_for(moved, what=f"{times} more evaluations")


def send_runs(base: str, project: str, count: int, failed: bool) -> None:
    """`count` one-span agent runs starting now, failed or not."""
    now = time.time_ns()
    spans = []
    for _ in range(count):
        tid = new_trace_id()
        spans.append(span(tid, "invoke_agent planner", span_id=new_span_id(), start=now,
                          duration=5_000_000, error=failed,
                          attributes={"gen_ai.operation.name": "invoke_agent",
                                      "gen_ai.agent.name": "planner"}))
    r = httpx.post(f"{base}/v1/traces", content=request(spans).SerializeToString(),
                   headers={**PB, "trajhub-project": project})
    assert r.status_code == 200, r.text


def test_an_error_rate_rule_notifies_each_change_of_state_once_signed(
        alert_server: ServerProcess, project: str, api: httpx.Client,
        receiver: Receiver) -> None:
    rule = add_alert(api, name="errors", metric="error_rate", warning_threshold=0.3,
                     alert_threshold=0.6, window_seconds=900, webhook_url=receiver.url,
                     filter={"agent": "planner"})
    secret = rule.pop("secret")
    assert secret.startswith("whsec_") and rule["state"] == "resolved"
    assert "secret" not in alert(api, rule["id"])
    # no runs: nothing to measure, no breach, nothing sent
    evaluated_since(api, rule["id"], 2)
    assert alert(api, rule["id"])["last_value"] is None and receiver.snapshot() == []

    send_runs(alert_server.http, project, 2, failed=True)
    wait_for(lambda: receiver.snapshot(), what="the firing notification")
    got = receiver.snapshot()[0]
    body = got.json
    assert got.signed_by(secret)
    assert got.headers["x-trajhub-delivery"] == body["id"]
    assert got.headers["x-trajhub-event"] == "alert.firing"
    assert (body["type"], body["state"], body["previous_state"], body["value"],
            body["threshold"], body["project"]) == (
        "alert.firing", "firing", "resolved", 1.0, 0.6, project)
    assert body["rule"]["id"] == rule["id"] and body["window"]["seconds"] == 900
    ui = body["links"]["ui"]
    assert ui.startswith(alert_server.http + "/#/trajectories?project=" + project)
    assert "errors=has_error" in ui and "agent=planner" in ui and "start=" in ui
    # the API link lists exactly the window's failed runs
    listed = httpx.get(body["links"]["api"]).json()["items"]
    assert len(listed) == 2 and all(t["has_error"] for t in listed)

    # evaluated again and again, still firing: nothing more is sent
    evaluated_since(api, rule["id"], 3)
    assert len(receiver.snapshot()) == 1
    wait_for(lambda: events(api, rule["id"])[0]["delivery"] == "delivered",
             what="the event marked delivered")

    # the alert threshold out of reach: firing -> warning; the warning gone: -> resolved
    assert api.patch(f"/alerts/{rule['id']}", json={"alert_threshold": 1.0}).status_code == 200
    wait_for(lambda: len(receiver.snapshot()) == 2, what="the warning notification")
    assert api.patch(f"/alerts/{rule['id']}",
                     json={"warning_threshold": None}).status_code == 200
    wait_for(lambda: len(receiver.snapshot()) == 3, what="the resolved notification")
    bodies = [r.json for r in receiver.snapshot()]
    assert [(b["previous_state"], b["state"], b["threshold"]) for b in bodies] == [
        ("resolved", "firing", 0.6), ("firing", "warning", 0.3), ("warning", "resolved", None)]
    assert len({b["id"] for b in bodies}) == 3
    history = events(api, rule["id"])
    assert [(e["previous_state"], e["state"]) for e in history] == [
        ("warning", "resolved"), ("firing", "warning"), ("resolved", "firing")]
    assert [e["delivery_id"] for e in history] == [b["id"] for b in reversed(bodies)]


def test_a_failed_notification_is_retried_with_backoff_and_the_same_id(
        alert_server: ServerProcess, api: httpx.Client, receiver: Receiver) -> None:
    receiver.statuses.extend([500, 503])
    # runs below 1 in a window without runs: firing at once
    rule = add_alert(api, name="silence", metric="runs", condition="below", alert_threshold=1,
                     window_seconds=60, webhook_url=receiver.url, secret="s" * 20)
    wait_for(lambda: events(api, rule["id"]) and
             events(api, rule["id"])[0]["delivery"] == "delivered", timeout=60,
             what="the notification delivered after two failures")
    got = receiver.snapshot()
    assert len(got) == 3
    assert len({g.headers["x-trajhub-delivery"] for g in got}) == 1
    assert len({g.body for g in got}) == 1 and all(g.signed_by("s" * 20) for g in got)
    event = events(api, rule["id"])[0]
    assert (event["attempts"], event["last_error"], event["value"]) == (2, "HTTP 503", 0.0)
    counted = {sample.labels["outcome"]: sample.value
               for family in text_string_to_metric_families(
                   httpx.get(alert_server.http + "/metrics").text)
               for sample in family.samples
               if sample.name == "trajhub_alert_notifications_total"}
    # this server's other tests send too: at least this test's two retries and one success
    assert counted["retried"] >= 2 and counted["sent"] >= 1 and "failed" in counted


@pytest.mark.parametrize(("body", "status", "words"), [
    ({"metric": "median_mood"}, 422, "metric"),
    ({"window_seconds": 0}, 422, "window_seconds"),
    ({"window_seconds": 10**9}, 422, "window_seconds"),
    ({"warning_threshold": 0.5, "alert_threshold": 0.1}, 400,
     "warning_threshold (0.5) must be below alert_threshold (0.1)"),
    ({"condition": "below", "warning_threshold": 0.1, "alert_threshold": 0.5}, 400,
     "must be above alert_threshold"),
    ({"alert_threshold": 10}, 400, "an error rate is a share"),
    ({"metric": "score_mean"}, 400, "score_name"),
    ({"score_name": "helpful"}, 400, "only for the metric score_mean"),
    ({"metric": "cost_usd", "alert_threshold": -1}, 400, "never negative"),
    ({"webhook_url": "ftp://example.com/x"}, 422, "webhook_url"),
    ({"webhook_url": "http://"}, 422, "webhook_url"),
    ({"webhook_url": "http://exa mple.com/"}, 422, "webhook_url"),
    ({"webhook_url": "http://example.com:99999/"}, 422, "webhook_url"),
    ({"filter": {"service": "x"}}, 422, "filter"),
    ({"secret": "short"}, 422, "secret"),
])
def test_bad_alert_rules_get_a_4xx_naming_the_problem(
        api: httpx.Client, body: dict[str, Any], status: int, words: str) -> None:
    good = {"name": "n", "metric": "error_rate", "alert_threshold": 0.1, "window_seconds": 900,
            "webhook_url": "https://hooks.example.com/x"}
    r = api.post("/alerts", json={**good, **body})
    assert r.status_code == status, r.text
    assert words in r.text, r.text


def test_alert_rules_are_paged_muted_and_deleted(
        api: httpx.Client, receiver: Receiver) -> None:
    silent = {"metric": "runs", "condition": "below", "alert_threshold": 1,
              "window_seconds": 60, "webhook_url": receiver.url}
    muted = add_alert(api, name="muted", muted=True, **silent)
    loud = add_alert(api, name="loud", **silent)
    add_alert(api, name="third", enabled=False, **silent)
    assert api.post("/alerts", json={"name": "loud", **silent}).status_code == 409

    first = api.get("/alerts", params={"limit": 2}).json()
    assert [a["name"] for a in first["items"]] == ["muted", "loud"] and first["next_cursor"]
    rest = api.get("/alerts", params={"limit": 2, "cursor": first["next_cursor"]}).json()
    assert [a["name"] for a in rest["items"]] == ["third"] and rest["next_cursor"] is None
    assert api.get("/alerts", params={"cursor": "nope"}).status_code == 400

    # the loud rule fires and is evaluated on; the muted one is never evaluated
    wait_for(lambda: len(receiver.snapshot()) == 1, what="the loud rule's notification")
    evaluated_since(api, loud["id"], 2)
    assert alert(api, muted["id"])["evaluated_time"] is None
    assert [r.json["rule"]["name"] for r in receiver.snapshot()] == ["loud"]

    # unmuted, it fires once too
    r = api.patch(f"/alerts/{muted['id']}", json={"muted": False})
    assert r.status_code == 200 and r.json()["muted"] is False
    wait_for(lambda: len(receiver.snapshot()) == 2, what="the unmuted rule's notification")
    assert alert(api, muted["id"])["state"] == "firing"

    assert api.delete(f"/alerts/{loud['id']}").status_code == 204
    assert api.get(f"/alerts/{loud['id']}").status_code == 404
    assert api.get(f"/alerts/{loud['id']}/events").status_code == 404
    assert api.delete(f"/alerts/{loud['id']}").status_code == 404
    assert [a["name"] for a in api.get("/alerts").json()["items"]] == ["muted", "third"]


def test_the_client_and_the_cli_cover_alerts(alert_server: ServerProcess, project: str,
                                             receiver: Receiver, tmp_path: Path) -> None:
    with TrajhubClient(alert_server.http, project=project) as hub:
        created = hub.create_alert("costly", "cost_usd", alert_threshold=5.0,
                                   window_seconds=3600, webhook_url=receiver.url,
                                   warning_threshold=2.0, filter={"model": "gpt-4o"})
        assert created.secret and created.rule.metric == "cost_usd"
        assert [a.name for a in hub.list_alerts()] == ["costly"]
        assert hub.mute_alert(created.rule.id).muted is True
        assert hub.mute_alert(created.rule.id, muted=False).muted is False
        assert hub.alert_events(created.rule.id) == []

    def cli(*argv: str) -> str:
        done = run_cli("alerts", *argv, "--url", alert_server.http, "--project", project,
                       keep_trajhub_env=True)
        assert done.returncode == 0, done.stderr
        return done.stdout

    out = cli("create", "quiet", "runs", "--below", "1", "--window", "60",
              "--webhook", receiver.url)
    assert "alert rule" in out and "quiet" in out and "secret" in out
    listed = cli("list")
    assert "costly" in listed and "quiet" in listed
    quiet = next(a for a in TrajhubClient(alert_server.http, project=project).list_alerts()
                 if a.name == "quiet")
    wait_for(lambda: receiver.snapshot(), what="the quiet rule's notification")
    assert "firing" in cli("events", str(quiet.id))
    assert "muted" in cli("mute", str(quiet.id))
    assert "unmuted" in cli("unmute", str(quiet.id))
    cli("delete", str(quiet.id))
    assert "quiet" not in cli("list")
    bad = run_cli("alerts", "create", "x", "runs", "--above", "1", "--window", "0",
                  "--webhook", receiver.url, "--url", alert_server.http, "--project", project,
                  keep_trajhub_env=True)
    assert bad.returncode != 0 and "window_seconds" in bad.stderr


def test_each_metric_reads_the_windows_runs_that_match_the_filter(
        server: ServerProcess, database: TestDatabase) -> None:
    """storage/alert_reads.py over rollup_contributions (and scores), rows written by hand."""
    project, hour = "alerts-measure", 3_600_000_000_000

    async def case(conn: asyncpg.Connection) -> None:
        runs = [  # trace, start (s), failed, duration ms, usd, agents, model, release
            ("a", 10, False, 100, 0.5, ["planner"], "gpt-4o", "v1"),
            ("b", 20, True, 1000, 1.5, ["planner", "coder"], "gpt-4o", "v2"),
            ("c", 30, False, 20000, 2.0, ["coder"], "claude", "v2"),
            ("d", 5000, True, 50, 9.0, ["planner"], "gpt-4o", "v1"),  # outside the window
        ]
        for trace, start, failed, ms, usd, agents, model, release in runs:
            await conn.execute(
                "INSERT INTO rollup_contributions VALUES ($1, $2, $3, $4, 'run', $5, $6, $7, "
                "'', $8, $9, 0, 0, 0, 0, 0, $10)", project, trace, start * 10**9, hour,
                agents, [model], release, failed, ms, usd)
        for trace, value in (("a", 1.0), ("b", 0.5), ("b", 0.0), ("c", None)):
            await conn.execute(
                "INSERT INTO scores (project, trace_id, name, value_type, number_value, source, "
                "revision, error) VALUES ($1, $2, 'helpful', $3, $4, 'api', 1, $5)",
                project, trace, None if value is None else "number", value,
                "judge failed" if value is None else None)

        async def measure(metric: str, **filters: str) -> float | None:
            return await alert_reads.measure(conn, project, metric, "helpful", filters,
                                             0, 1000 * 10**9)

        assert await measure("runs") == 3
        assert await measure("error_rate") == pytest.approx(1 / 3)
        assert await measure("cost_usd") == pytest.approx(4.0)
        # interpolated between the 2nd and the 3rd duration, as percentile_cont does
        assert await measure("p95_latency_ms") == pytest.approx(1000 + 0.9 * 19000)
        assert await measure("score_mean") == pytest.approx(0.5)
        assert await measure("runs", agent="planner") == 2
        assert await measure("error_rate", model="claude") == 0
        assert await measure("cost_usd", release="v2", agent="coder") == pytest.approx(3.5)
        assert await measure("runs", run_name="other") == 0
        # nothing to measure: no value
        assert await measure("error_rate", model="none") is None
        assert await measure("p95_latency_ms", model="none") is None
        assert await measure("cost_usd", model="none") is None
        assert await measure("score_mean", model="claude") is None

    rolled_back(database, case)


def test_a_notification_no_receiver_accepts_fails_after_its_last_attempt(
        database: TestDatabase, receiver: Receiver, monkeypatch: pytest.MonkeyPatch) -> None:
    """The worker's rounds run here, in this process, one after the other, on a database of
    their own (no server's worker takes part): no waiting."""
    monkeypatch.setattr(alert_worker, "MAX_ATTEMPTS", 3)
    monkeypatch.setattr(alert_worker, "backoff_seconds", lambda attempts: 0.0)
    receiver.statuses.extend([500, 404, 503, 200])

    async def main(url: str) -> tuple[dict[str, Any], list[int]]:
        pool = await asyncpg.create_pool(url, min_size=1, max_size=2)
        try:
            async with pool.acquire() as conn:
                await migrate(conn)
                row = await alert_store.create(conn, "p", {
                    "name": "never", "metric": "runs", "condition": "below",
                    "alert_threshold": 1.0, "window_seconds": 60, "filter": {},
                    "webhook_url": receiver.url, "secret": "x" * 16})
                assert row is not None
            worker = alert_worker.AlertWorker(pool, 3600.0, "http://trajhub.test/")
            assert await worker.evaluate_round() == 1
            # evaluated again: due only an interval (an hour) on, so nothing is claimed
            assert await worker.evaluate_round() == 0
            rounds = [await worker.deliver_round() for _ in range(4)]
            async with pool.acquire() as conn:
                (event,) = await alert_store.events(conn, "p", row.id, None, 10)
            return dict(event), rounds
        finally:
            await pool.close()

    before = alert_worker.metrics.ALERT_NOTIFICATIONS.labels("failed")._value.get()
    with separate_database(database) as url:
        event, rounds = asyncio.run(main(url))
    # three attempts, one per round, then nothing left to send
    assert rounds == [1, 1, 1, 0]
    assert (event["state"], event["delivery"], event["attempts"], event["last_error"]) == (
        "firing", "failed", 3, "HTTP 503")
    assert len(receiver.snapshot()) == 3
    assert alert_worker.metrics.ALERT_NOTIFICATIONS.labels("failed")._value.get() == before + 1
