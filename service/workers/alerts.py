"""The monitoring alerts' worker (docs/alerts.md): evaluates each enabled, unmuted alert rule
every TRAJHUB_ALERT_INTERVAL_SECONDS, records each change of its state as an event, and sends
each event's notification to the rule's webhook, retried with backoff.

Two asyncio tasks of `trajhub serve`'s main process, beside the online evaluation rules' worker
and for its reasons: the work is waiting (the database, a receiver's answer), /metrics counts in
the main process, and a running server needs no other process. Both read their queues from
PostgreSQL with `FOR UPDATE SKIP LOCKED` and a claim token (storage/alerts.py), so several
servers on one database evaluate a rule once per interval and notify each change once; a slow
receiver does not hold evaluations back (the deliveries are a task of their own).

Delivery is at least once: an attempt whose answer was lost (the server killed while the
receiver answered) is sent again, with the same body, signature and `X-Trajhub-Delivery` id,
which a receiver uses to drop the repeat.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import hmac
import logging
import uuid
from typing import Any
from urllib.parse import urlencode

import asyncpg
import httpx
import orjson

from trajhub.records.times import rfc3339
from trajhub.service import metrics
from trajhub.service.workers.backoff import backoff_seconds
from trajhub.service.workers.claims import release_stale_claims, run_claimed
from trajhub.storage import alert_reads
from trajhub.storage import alerts as alert_store
from trajhub.storage.database import is_transient

log = logging.getLogger("trajhub.alerts")

#: rules claimed per evaluation round
BATCH = 50
#: notifications claimed per round, and sent at once
DELIVERY_BATCH = 20
DELIVERY_CONCURRENCY = 8
#: one attempt's time limit, and the claim's lease (longer: a lease never ends mid-attempt)
TIMEOUT_SECONDS = 10.0
LEASE_SECONDS = 60.0
#: a failed attempt: the next after backoff_seconds; after MAX_ATTEMPTS the notification is
#: failed for good
MAX_ATTEMPTS = 8
#: how long an evaluation's claim holds a rule at least (a slow read is not taken over)
MIN_EVALUATION_LEASE_SECONDS = 30.0
#: the longest the delivery task waits before looking for due notifications again
DELIVERY_IDLE_SECONDS = 0.5
#: the signature's header: `sha256=` and the hex HMAC-SHA256 of the body with the rule's secret
SIGNATURE_HEADER = "X-Trajhub-Signature-256"
DELIVERY_HEADER = "X-Trajhub-Delivery"
EVENT_HEADER = "X-Trajhub-Event"


def signature(secret: str, body: bytes) -> str:
    """The value of SIGNATURE_HEADER: `sha256=` and the hex HMAC-SHA256 of `body`."""
    return "sha256=" + hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()


def state_of(condition: str, warning: float | None, alert: float, value: float | None
             ) -> tuple[str, float | None]:
    """The state a value puts a rule in, and the threshold it passed: nothing to measure is
    no breach."""
    if value is None:
        return "resolved", None

    def past(threshold: float) -> bool:
        return value > threshold if condition == "above" else value < threshold

    if past(alert):
        return "firing", alert
    if warning is not None and past(warning):
        return "warning", warning
    return "resolved", None


def links(base_url: str, rule: alert_store.DueRule, start_ns: int, end_ns: int
          ) -> dict[str, str]:
    """Where to see the window's runs: the web UI's trajectory list and the API's, filtered to
    the window, to the rule's filter and, for an error rate, to errors. Final runs only, those
    without steps too: the runs the rollups count."""
    start, end = rfc3339(start_ns), rfc3339(end_ns)
    common = {k: v for k, v in (("start", start), ("end", end), ("status", "final"),
                                *((k, rule.filter.get(k))
                                  for k in ("run_name", "agent", "model", "release"))) if v}
    ui = {"project": rule.project, "empty": "show", **common}
    api = {"project": rule.project, **common}
    if rule.metric == "error_rate":
        ui["errors"] = "has_error"
        api["has_error"] = "true"
    base = base_url.rstrip("/")
    return {"ui": f"{base}/#/trajectories?{urlencode(ui)}",
            "api": f"{base}/api/v1/trajectories?{urlencode(api)}",
            "rule": f"{base}/api/v1/alerts/{rule.id}?{urlencode({'project': rule.project})}"}


def notification(rule: alert_store.DueRule, delivery_id: uuid.UUID, state: str,
                 value: float | None, threshold: float | None, start_ns: int, end_ns: int,
                 base_url: str) -> bytes:
    """The webhook's JSON body of a change of state (docs/alerts.md §4)."""
    doc: dict[str, Any] = {
        "id": str(delivery_id),
        "type": f"alert.{state}",
        "project": rule.project,
        "state": state,
        "previous_state": rule.state,
        "value": value,
        "threshold": threshold,
        "time": rfc3339(end_ns),
        "window": {"start_time": rfc3339(start_ns), "end_time": rfc3339(end_ns),
                   "seconds": rule.window_seconds},
        "rule": {"id": rule.id, "name": rule.name, "metric": rule.metric,
                 "score_name": rule.score_name, "condition": rule.condition,
                 "warning_threshold": rule.warning_threshold,
                 "alert_threshold": rule.alert_threshold, "filter": rule.filter},
        "links": links(base_url, rule, start_ns, end_ns),
    }
    return orjson.dumps(doc)


class AlertWorker:
    def __init__(self, pool: asyncpg.Pool, interval_seconds: float, base_url: str) -> None:
        self.pool = pool
        self.interval = interval_seconds
        self.base_url = base_url
        self._limit = asyncio.Semaphore(DELIVERY_CONCURRENCY)
        self._http: httpx.AsyncClient | None = None
        #: wakes the delivery task when an evaluation recorded an event
        self.wake = asyncio.Event()

    # --------------------------------------------------------------------------- evaluation

    async def evaluate_forever(self) -> None:
        while True:
            try:
                claimed = await self.evaluate_round()
            except Exception as exc:  # logged; the worker lives on
                claimed = 0
                self._failed(exc, "evaluating alert rules failed")
            if claimed < BATCH:
                await asyncio.sleep(min(self.interval, 1.0))

    async def evaluate_round(self) -> int:
        """Claim the due rules and evaluate each; how many."""
        async with self.pool.acquire() as conn:
            rules = await alert_store.claim_rules(
                conn, BATCH, max(self.interval, MIN_EVALUATION_LEASE_SECONDS))
        for rule in rules:
            try:
                outcome = await self.evaluate(rule)
            except Exception as exc:  # one rule's failure: it is due again next interval
                outcome = "error"
                self._failed(exc, f"evaluating alert rule {rule.id} failed")
            metrics.ALERT_EVALUATIONS.labels(outcome).inc()
        return len(rules)

    async def evaluate(self, rule: alert_store.DueRule) -> str:
        end_ns = rule.now_ns
        start_ns = end_ns - rule.window_seconds * 1_000_000_000
        async with self.pool.acquire() as conn:
            value = await alert_reads.measure(conn, rule.project, rule.metric, rule.score_name,
                                              rule.filter, start_ns, end_ns)
            state, threshold = state_of(rule.condition, rule.warning_threshold,
                                        rule.alert_threshold, value)
            event = None
            if state != rule.state:
                delivery_id = uuid.uuid4()
                event = alert_store.NewEvent(
                    delivery_id, state, value, threshold, start_ns, end_ns,
                    notification(rule, delivery_id, state, value, threshold, start_ns, end_ns,
                                 self.base_url))
            if not await alert_store.settle(conn, rule, state, value, event, self.interval):
                return "lost_claim"
        if event is None:
            return "unchanged"
        log.info("alert rule %s (%s) of project %s: %s -> %s (value %s)", rule.id, rule.name,
                 rule.project, rule.state, state, value)
        self.wake.set()
        return "changed"

    # ----------------------------------------------------------------------------- delivery

    def http(self) -> httpx.AsyncClient:
        if self._http is None:
            self._http = httpx.AsyncClient(timeout=TIMEOUT_SECONDS, follow_redirects=False,
                                           headers={"user-agent": "trajhub-alerts"})
        return self._http

    async def deliver_forever(self) -> None:
        try:
            while True:
                try:
                    claimed = await self.deliver_round()
                except Exception as exc:
                    claimed = 0
                    self._failed(exc, "sending alert notifications failed")
                if claimed == 0:
                    self.wake.clear()
                    with contextlib.suppress(TimeoutError):
                        await asyncio.wait_for(self.wake.wait(), DELIVERY_IDLE_SECONDS)
        finally:
            if self._http is not None:
                await self._http.aclose()

    async def deliver_round(self) -> int:
        """Claim the due notifications and send them (DELIVERY_CONCURRENCY at once)."""
        return await run_claimed(
            self.pool, lambda conn: alert_store.claim_deliveries(conn, DELIVERY_BATCH,
                                                                 LEASE_SECONDS),
            self._deliver)

    async def _deliver(self, d: alert_store.Delivery) -> None:
        async with self._limit:
            error = await self.send(d)
        async with self.pool.acquire() as conn:
            if error is None:
                kept = await alert_store.delivered(conn, d)
                outcome = "sent"
            else:
                give_up = d.attempts + 1 >= MAX_ATTEMPTS
                kept = await alert_store.attempt_failed(
                    conn, d, error[:1000], None if give_up else backoff_seconds(d.attempts + 1))
                outcome = "failed" if give_up else "retried"
                log.warning("alert notification %s to %s: %s (%s)", d.delivery_id,
                            d.webhook_url, error, "given up" if give_up else "retried later")
        metrics.ALERT_NOTIFICATIONS.labels(outcome if kept else "lost_claim").inc()

    async def send(self, d: alert_store.Delivery) -> str | None:
        """One attempt: None when the receiver answered 2xx, else why not."""
        headers = {"content-type": "application/json",
                   SIGNATURE_HEADER: signature(d.secret, d.body),
                   DELIVERY_HEADER: str(d.delivery_id), EVENT_HEADER: f"alert.{d.state}"}
        try:
            answer = await self.http().post(d.webhook_url, content=d.body, headers=headers)
        except httpx.HTTPError as exc:
            return f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
        if 200 <= answer.status_code < 300:
            return None
        return f"HTTP {answer.status_code}"

    def _failed(self, exc: Exception, what: str) -> None:
        if is_transient(exc):
            metrics.DATABASE_ERRORS.labels("alerts").inc()
            log.warning("%s (database unavailable, retrying): %s", what, exc)
        else:
            log.exception(what)


async def release_claims(pool: asyncpg.Pool) -> None:
    """At start: the notifications and evaluations a killed server held are due now."""
    await release_stale_claims(pool, alert_store.release_claims, log, "alert notification(s)")


def start(pool: asyncpg.Pool, interval_seconds: float, base_url: str
          ) -> list[asyncio.Task[None]]:
    """The evaluation and the delivery tasks of the running loop (cancel them to stop)."""
    worker = AlertWorker(pool, interval_seconds, base_url)
    return [asyncio.create_task(worker.evaluate_forever(), name="alert-evaluations"),
            asyncio.create_task(worker.deliver_forever(), name="alert-deliveries")]
