"""SQL of monitoring alerts (migration 0090, docs/alerts.md): the rules, their evaluation
queue, their history of states, and the durable queue of webhook notifications. The columns are
those trajhub.records.alerts declares; what a rule measures is read by storage/alert_reads.py.

Both queues follow the online evaluation rules' (storage/rules.py): a worker claims due rows
with `FOR UPDATE SKIP LOCKED`, giving each a fresh claim token and a lease, and only a statement
that still finds its token ends the work. So several servers on one database evaluate a rule
once per interval, a change of state is recorded once (one event, one notification), and a
notification whose sender died is sent again by another server, with the same delivery id.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass

import orjson

from trajhub.records.alerts import AlertEvent, AlertRule
from trajhub.storage.database import Connection
from trajhub.storage.rows import NOW_NS, IdRow, NamedRecords, RecordRow


class AlertRuleRow(IdRow):
    __slots__ = ()
    record = AlertRule


class AlertEventRow(RecordRow):
    __slots__ = ()
    record = AlertEvent


#: the rules, written from the columns a client gives (the secret is written, never read
#: back); a rule switched on or unmuted is due at once, so every edit makes it due
RULES = NamedRecords(
    "alert_rules", AlertRuleRow,
    ("name", "metric", "score_name", "condition", "warning_threshold", "alert_threshold",
     "window_seconds", "filter", "webhook_url", "secret", "enabled", "muted"),
    json=frozenset({"filter"}), on_edit=("next_evaluation_at = now()",))
create = RULES.create
update = RULES.update


async def get(conn: Connection, project: str, rule_id: int) -> AlertRuleRow | None:
    return await AlertRuleRow.fetch_one(
        conn, f"SELECT {AlertRule.select_list()} FROM alert_rules "
        "WHERE project = $1 AND id = $2", project, rule_id)


async def list_rules(conn: Connection, project: str, after_id: int, limit: int
                     ) -> list[AlertRuleRow]:
    """A page of the project's rules, oldest first, after the rule `after_id`."""
    return AlertRuleRow.from_records(await conn.fetch(
        f"SELECT {AlertRule.select_list()} FROM alert_rules WHERE project = $1 AND id > $2 "
        "ORDER BY id LIMIT $3", project, after_id, limit))


async def delete(conn: Connection, project: str, rule_id: int) -> bool:
    """Delete a rule with its history (notifications not yet sent are dropped)."""
    status = await conn.execute("DELETE FROM alert_rules WHERE project = $1 AND id = $2",
                                project, rule_id)
    return bool(status != "DELETE 0")


async def events(conn: Connection, project: str, rule_id: int, before_id: int | None,
                 limit: int) -> list[AlertEventRow]:
    """A page of the rule's changes of state, newest first, before the event `before_id`."""
    return AlertEventRow.from_records(await conn.fetch(
        f"SELECT {AlertEvent.select_list()} FROM alert_events WHERE project = $1 "
        "AND rule_id = $2 AND ($3::bigint IS NULL OR id < $3) ORDER BY id DESC LIMIT $4",
        project, rule_id, before_id, limit))


# ------------------------------------------------------------------------- evaluation queue

@dataclass(frozen=True)
class DueRule:
    """A rule a worker holds for one evaluation, as it is now, and the database's clock."""

    id: int
    claim: uuid.UUID
    project: str
    name: str
    metric: str
    score_name: str | None
    condition: str
    warning_threshold: float | None
    alert_threshold: float
    window_seconds: int
    filter: dict[str, str]
    state: str
    now_ns: int


async def claim_rules(conn: Connection, limit: int, lease_seconds: float) -> list[DueRule]:
    """Take up to `limit` enabled, unmuted rules that are due, each with a new token and a
    lease of `lease_seconds` (a rule whose evaluator died is due again when it ends; `settle`
    sets the next evaluation)."""
    rows = await conn.fetch(
        f"""
        WITH due AS (
            SELECT id FROM alert_rules
            WHERE enabled AND NOT muted AND next_evaluation_at <= now()
            ORDER BY next_evaluation_at, id LIMIT $1
            FOR UPDATE SKIP LOCKED
        )
        UPDATE alert_rules SET claim = $2,
            next_evaluation_at = now() + make_interval(secs => $3)
        WHERE id = ANY(ARRAY(SELECT id FROM due))
        RETURNING id, claim, project, name, metric, score_name, condition, warning_threshold,
                  alert_threshold, window_seconds, filter::text AS filter, state,
                  {NOW_NS} AS now_ns
        """, limit, uuid.uuid4(), lease_seconds)
    return [DueRule(r["id"], r["claim"], r["project"], r["name"], r["metric"], r["score_name"],
                    r["condition"], r["warning_threshold"], r["alert_threshold"],
                    r["window_seconds"], orjson.loads(r["filter"]), r["state"], r["now_ns"])
            for r in rows]


@dataclass(frozen=True)
class NewEvent:
    """A change of state to record, with its notification's id and body."""

    delivery_id: uuid.UUID
    state: str
    value: float | None
    threshold: float | None
    window_start_ns: int
    window_end_ns: int
    body: bytes


async def settle(conn: Connection, rule: DueRule, state: str, value: float | None,
                 event: NewEvent | None, interval_seconds: float) -> bool:
    """Store an evaluation: the rule's state and value, and, when the state changed, its event
    (queued for delivery), in one transaction, the next evaluation due `interval_seconds` on;
    only while the rule still carries this claim and the state it was claimed in (False
    otherwise: another server evaluated it since)."""
    async with conn.transaction():
        current = await conn.fetchval(
            "SELECT state FROM alert_rules WHERE id = $1 AND claim = $2 FOR UPDATE",
            rule.id, rule.claim)
        if current is None or current != rule.state:
            return False
        await conn.execute(
            f"UPDATE alert_rules SET state = $2, last_value = $3, evaluated_ns = {NOW_NS}, "
            "claim = NULL, next_evaluation_at = now() + make_interval(secs => $4) "
            "WHERE id = $1", rule.id, state, value, interval_seconds)
        if event is not None:
            await conn.execute(
                "INSERT INTO alert_events (rule_id, project, delivery_id, state, previous_state, "
                "value, threshold, window_start_ns, window_end_ns, body) "
                "VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)",
                rule.id, rule.project, event.delivery_id, event.state, rule.state,
                event.value, event.threshold, event.window_start_ns, event.window_end_ns,
                event.body.decode())
    return True


# --------------------------------------------------------------------- notification queue

@dataclass(frozen=True)
class Delivery:
    """A notification a worker holds: its body as recorded, and where and how to sign it."""

    id: int
    claim: uuid.UUID
    delivery_id: uuid.UUID
    state: str
    body: bytes
    attempts: int
    webhook_url: str
    secret: str


async def claim_deliveries(conn: Connection, limit: int, lease_seconds: float
                           ) -> list[Delivery]:
    """Take up to `limit` due notifications, oldest due first, each with a new token and a
    lease of `lease_seconds` (longer than one attempt may take)."""
    rows = await conn.fetch(
        """
        WITH due AS (
            SELECT id FROM alert_events
            WHERE delivery = 'pending' AND next_attempt_at <= now()
            ORDER BY next_attempt_at, id LIMIT $1
            FOR UPDATE SKIP LOCKED
        )
        UPDATE alert_events e SET claim = $2,
            next_attempt_at = now() + make_interval(secs => $3)
        FROM alert_rules r WHERE e.id = ANY(ARRAY(SELECT id FROM due)) AND r.id = e.rule_id
        RETURNING e.id, e.claim, e.delivery_id, e.state, e.body, e.attempts, r.webhook_url,
                  r.secret
        """, limit, uuid.uuid4(), lease_seconds)
    return [Delivery(r["id"], r["claim"], r["delivery_id"], r["state"], r["body"].encode(),
                     r["attempts"], r["webhook_url"], r["secret"]) for r in rows]


async def delivered(conn: Connection, d: Delivery) -> bool:
    """The receiver answered 2xx: done (False: another server holds it now)."""
    status = await conn.execute(
        f"UPDATE alert_events SET delivery = 'delivered', claim = NULL, delivered_ns = {NOW_NS} "
        "WHERE id = $1 AND claim = $2", d.id, d.claim)
    return bool(status != "UPDATE 0")


async def attempt_failed(conn: Connection, d: Delivery, error: str,
                         retry_in_seconds: float | None) -> bool:
    """An attempt failed: due again after `retry_in_seconds`, or failed for good when None."""
    status = await conn.execute(
        "UPDATE alert_events SET attempts = attempts + 1, last_error = $3, claim = NULL, "
        "delivery = CASE WHEN $4::float8 IS NULL THEN 'failed' ELSE 'pending' END, "
        "next_attempt_at = now() + make_interval(secs => coalesce($4::float8, 0)) "
        "WHERE id = $1 AND claim = $2", d.id, d.claim, error, retry_in_seconds)
    return bool(status != "UPDATE 0")


async def release_claims(conn: Connection) -> int:
    """At start: the notifications and evaluations a killed server held are due now. One that
    another live server still holds may be sent twice (the receiver dedupes by its id), and an
    evaluation it still holds is not recorded (its token is gone)."""
    sent = await conn.execute(
        "UPDATE alert_events SET claim = NULL, next_attempt_at = now() "
        "WHERE delivery = 'pending' AND claim IS NOT NULL")
    await conn.execute("UPDATE alert_rules SET claim = NULL, next_evaluation_at = now() "
                       "WHERE claim IS NOT NULL")
    return int(sent.split()[-1])
