"""SQL of online evaluation rules (migration 0055, docs/rules.md): the rules, their durable
queue of runs, and backfills. The columns are those trajhub.records.rules declares.

The queue: finalizing a trajectory queues one run per enabled rule whose sample takes it
(storage/derivation_store.py, finalize_settled). A worker claims due runs with
`FOR UPDATE SKIP LOCKED`, giving each a fresh claim token and a lease (`next_attempt_at` moves
to the lease's end, so a claimant that dies leaves the run due again when the lease is out).
`finish` inserts the verdict's score and deletes the run in one transaction, and only while the
run still carries the claimant's token: however often a run is claimed, it scores once.
"""

from __future__ import annotations

import contextlib
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import orjson

from trajhub.records.rules import Rule, RuleBackfill
from trajhub.storage import review as review_store
from trajhub.storage import scores as score_store
from trajhub.storage import trajectory_reads
from trajhub.storage.database import Connection
from trajhub.storage.derivation_store import SAMPLED
from trajhub.storage.rows import IdRow, NamedRecords, RecordRow
from trajhub.storage.trajectory_reads import TrajectoryFilter, select


class RuleRow(IdRow):
    """A stored rule, as trajhub.records.rules declares it."""

    __slots__ = ()
    record = Rule


class BackfillRow(RecordRow):
    __slots__ = ()
    record = RuleBackfill


#: the rules, written from the columns a client gives (JSON ones travel as text)
RULES = NamedRecords("rules", RuleRow, Rule.write_columns("service"),
                     json=frozenset({"config", "expectations", "filter"}))
create = RULES.create
update = RULES.update


async def list_rules(conn: Connection, project: str) -> list[RuleRow]:
    return RuleRow.from_records(await conn.fetch(
        f"SELECT {Rule.select_list()} FROM rules WHERE project = $1 ORDER BY id", project))


async def get(conn: Connection, project: str, rule_id: int) -> RuleRow | None:
    return await RuleRow.fetch_one(
        conn, f"SELECT {Rule.select_list()} FROM rules WHERE project = $1 AND id = $2",
        project, rule_id)


async def delete(conn: Connection, project: str, rule_id: int) -> bool:
    """Delete a rule, its queued runs and its backfills; its scores stay."""
    async with conn.transaction():
        if await conn.fetchval("SELECT 1 FROM rules WHERE project = $1 AND id = $2",
                               project, rule_id) is None:
            return False
        # the runs, then the backfills, then the rule: the order in which a worker finishing a
        # run (finish) locks them. The rule's cascade alone took them the other way round, and
        # a delete beside a finishing run ended in a deadlock (a 503)
        await conn.execute("SET LOCAL citus.multi_shard_modify_mode TO 'sequential'")
        await conn.execute("DELETE FROM rule_runs WHERE rule_id = $1", rule_id)
        await conn.execute("DELETE FROM rule_backfills WHERE rule_id = $1", rule_id)
        status = await conn.execute("DELETE FROM rules WHERE project = $1 AND id = $2",
                                    project, rule_id)
    return bool(status != "DELETE 0")


# ------------------------------------------------------------------------------- backfills

async def backfill(conn: Connection, project: str, rule_id: int, f: TrajectoryFilter
                   ) -> BackfillRow:
    """Queue the rule over the project's final trajectories that match `f` (the rule's filter)
    and its sample, as one backfill job counting them."""
    async with conn.transaction():
        # On Citus: the runs are read from every shard and written, with their backfill, to
        # reference tables that have foreign keys, which Citus does over one connection per
        # node only. Elsewhere the setting is a placeholder and changes nothing.
        await conn.execute("SET LOCAL citus.multi_shard_modify_mode TO 'sequential'")
        job = await conn.fetchval(
            "INSERT INTO rule_backfills (rule_id, total_count) VALUES ($1, 0) RETURNING id",
            rule_id)
        rule = await conn.fetchrow("SELECT sample_rate FROM rules WHERE id = $1", rule_id)
        assert rule is not None
        s = select(project, f)
        sampled = SAMPLED.format(rule=s.arg(rule_id), trace_id="trace_id",
                                 rate=f"{s.arg(float(rule['sample_rate']))}::float8")
        rule_param, job_param = s.arg(rule_id), s.arg(job)
        s.where.extend(["status = 'final'", sampled])
        queued = await conn.execute(
            "INSERT INTO rule_runs (rule_id, project, trace_id, revision, backfill_id) "
            f"SELECT {rule_param}, project, trace_id, revision, {job_param} {s.sql()}",
            *s.arg.values)
        total = int(queued.split()[-1])
        row = await conn.fetchrow(
            f"UPDATE rule_backfills SET total_count = $2 WHERE id = $1 "
            f"RETURNING {RuleBackfill.select_list()}", job, total)
    assert row is not None
    return BackfillRow.from_record(row)


async def backfills(conn: Connection, project: str, rule_id: int) -> list[BackfillRow]:
    return BackfillRow.from_records(await conn.fetch(
        f"SELECT {RuleBackfill.select_list('b')} FROM rule_backfills b JOIN rules r "
        "ON r.id = b.rule_id WHERE r.project = $1 AND b.rule_id = $2 ORDER BY b.id DESC",
        project, rule_id))


async def get_backfill(conn: Connection, project: str, rule_id: int, backfill_id: int
                       ) -> BackfillRow | None:
    return await BackfillRow.fetch_one(
        conn, f"SELECT {RuleBackfill.select_list('b')} FROM rule_backfills b JOIN rules r "
        "ON r.id = b.rule_id WHERE r.project = $1 AND b.rule_id = $2 AND b.id = $3",
        project, rule_id, backfill_id)


# ---------------------------------------------------------------------------------- the queue

@dataclass(frozen=True)
class ClaimedRun:
    """A run a worker holds: the rule as it is now, and the trajectory revision to judge."""

    id: int
    claim: uuid.UUID
    rule_id: int
    project: str
    trace_id: str
    revision: int
    attempts: int
    evaluator: str
    config: dict[str, Any]
    expectations: dict[str, Any] | None
    filter: dict[str, Any]
    max_judge_calls_per_minute: int | None
    #: where its failures go (docs/rules.md §9), and what a failure is
    review_queue: str | None = None
    fail_below: float = 1.0


async def claim(conn: Connection, limit: int, lease_seconds: float,
                skip_rules: Sequence[int] = ()) -> list[ClaimedRun]:
    """Take up to `limit` due runs, oldest due first, each with a new token and a lease of
    `lease_seconds`. Runs of a rule switched off meanwhile are left queued (they run when it is
    switched on again, or go with the rule when it is deleted)."""
    token = uuid.uuid4()
    # the claimed runs by an array of their ids, as storage/derivation_store.py claims its
    # queues: joined to `due`, a queue analyzed empty made this a nested loop over every queued
    # run for each one claimed (bench/README.md, "The derivation queue's claims")
    rows = await conn.fetch(
        """
        WITH due AS (
            SELECT q.id FROM rule_runs q JOIN rules r ON r.id = q.rule_id AND r.enabled
            WHERE q.next_attempt_at <= now() AND q.rule_id <> ALL($4::bigint[])
            ORDER BY q.next_attempt_at, q.id LIMIT $1
            FOR UPDATE OF q SKIP LOCKED
        )
        UPDATE rule_runs q SET claim = $2,
            next_attempt_at = now() + make_interval(secs => $3)
        FROM rules r WHERE q.id = ANY(ARRAY(SELECT id FROM due)) AND r.id = q.rule_id
        RETURNING q.id, q.claim, q.rule_id, q.project, q.trace_id, q.revision, q.attempts,
                  r.evaluator, r.config::text AS config, r.expectations::text AS expectations,
                  r.filter::text AS filter, r.max_judge_calls_per_minute, r.review_queue,
                  r.fail_below
        """, limit, token, lease_seconds, list(skip_rules))
    return [ClaimedRun(
        r["id"], r["claim"], r["rule_id"], r["project"], r["trace_id"], r["revision"],
        r["attempts"], r["evaluator"], orjson.loads(r["config"]),
        orjson.loads(r["expectations"]) if r["expectations"] is not None else None,
        orjson.loads(r["filter"]), r["max_judge_calls_per_minute"], r["review_queue"],
        float(r["fail_below"])) for r in rows]


async def release_claims(conn: Connection) -> int:
    """Make every claimed run due now (at start: the runs a killed server held). A run another
    live server still holds may then be evaluated twice, but is scored once (`finish`)."""
    result = await conn.execute(
        "UPDATE rule_runs SET next_attempt_at = now(), claim = NULL WHERE claim IS NOT NULL")
    return int(result.split()[-1])


@dataclass(frozen=True)
class Target:
    """The trajectory a run judges, as it is now."""

    revision: int
    status: str
    document: str | None
    matches: bool


async def target(conn: Connection, run: ClaimedRun, f: TrajectoryFilter) -> Target | None:
    """The run's trajectory now, and whether it matches the rule's filter (the list's own
    conditions); None when the project no longer has it."""
    row = await trajectory_reads.trajectory(conn, run.project, run.trace_id)
    if row is None:
        return None
    s = select(run.project, f)
    s.where.append(f"trace_id = {s.arg(run.trace_id)}")
    matches = await conn.fetchval(f"SELECT EXISTS (SELECT 1 {s.sql()})", *s.arg.values)
    return Target(row.revision, row.status, row.document, bool(matches))


async def finish(conn: Connection, run: ClaimedRun, score: Mapping[str, Any] | None) -> bool:
    """End a run: store its score (the columns of storage/scores.py's WRITTEN, None for a run
    that scores nothing) and take it off the queue, counting it on its backfill; all in one
    transaction, and only while the run still carries this claim (False otherwise: another
    claimant has it, or had it and finished)."""
    async with conn.transaction():
        # the score's insert reads its trajectory on every shard, then the backfill (a
        # reference table with foreign keys) is updated: on Citus that takes one connection per
        # node (a placeholder setting elsewhere)
        await conn.execute("SET LOCAL citus.multi_shard_modify_mode TO 'sequential'")
        backfill = await conn.fetchrow(
            "DELETE FROM rule_runs WHERE id = $1 AND claim = $2 RETURNING backfill_id",
            run.id, run.claim)
        if backfill is None:
            return False
        # the score is the judged revision's: a trajectory re-derived meanwhile gets a run of
        # its own when final again (the row lock holds a re-derivation back for this
        # transaction's few milliseconds)
        current = await conn.fetchval(
            "SELECT revision FROM trajectories WHERE project = $1 AND trace_id = $2 "
            "FOR SHARE", run.project, run.trace_id)
        if score is not None and current == run.revision:
            await score_store.add(conn, run.project, [score])
            if run.review_queue is not None and failed(run, score):
                # a person looks at it: the rule's queue, if the project still has it
                with contextlib.suppress(KeyError):
                    await review_store.add_items(conn, run.project, run.review_queue,
                                                 [run.trace_id])
        if backfill["backfill_id"] is not None:
            await conn.execute("UPDATE rule_backfills SET done_count = done_count + 1 "
                               "WHERE id = $1", backfill["backfill_id"])
    return True


def failed(run: ClaimedRun, score: Mapping[str, Any]) -> bool:
    """The run's score is a failure: an error, or a number below the rule's `fail_below`."""
    if score["error"] is not None:
        return True
    number = score["number_value"]
    return number is not None and float(number) < run.fail_below


async def retry_later(conn: Connection, run: ClaimedRun, delay_seconds: float, error: str
                      ) -> None:
    """An attempt that could not reach the judge: the run stays queued, due after
    `delay_seconds`, with the attempt counted."""
    await conn.execute(
        "UPDATE rule_runs SET attempts = attempts + 1, last_error = $3, claim = NULL, "
        "next_attempt_at = now() + make_interval(secs => $4) WHERE id = $1 AND claim = $2",
        run.id, run.claim, error, delay_seconds)


async def postpone(conn: Connection, run: ClaimedRun, delay_seconds: float) -> None:
    """A run held back by its rule's judge-call cap: due again after `delay_seconds`, no
    attempt counted."""
    await conn.execute(
        "UPDATE rule_runs SET claim = NULL, next_attempt_at = now() + "
        "make_interval(secs => $3) WHERE id = $1 AND claim = $2",
        run.id, run.claim, delay_seconds)


async def judge_slot(conn: Connection, rule_id: int) -> float:
    """Take one judge call of the rule's cap for this minute: 0 when taken (or the rule has no
    cap), else the seconds until the current minute ends. One fixed window per rule, in the
    rule's row, so every server sharing the database shares the cap."""
    # the times are values ($2 now, $3 a minute ago): Citus takes no function but an IMMUTABLE
    # one (timestamptz arithmetic is STABLE) in a CASE of an UPDATE of a reference table
    now = await conn.fetchrow("SELECT now() AS at, now() - interval '1 minute' AS minute_ago")
    assert now is not None
    row = await conn.fetchrow(
        """UPDATE rules SET
               window_calls = CASE WHEN window_start <= $3::timestamptz
                                   THEN 1 ELSE window_calls + 1 END,
               window_start = CASE WHEN window_start <= $3::timestamptz
                                   THEN $2::timestamptz ELSE window_start END
           WHERE id = $1 AND (max_judge_calls_per_minute IS NULL
                              OR window_start <= $3::timestamptz
                              OR window_calls < max_judge_calls_per_minute)
           RETURNING 0""", rule_id, now["at"], now["minute_ago"])
    if row is not None:
        return 0.0
    wait = await conn.fetchval(
        "SELECT greatest(0.1, extract(epoch FROM window_start + interval '1 minute' - now())) "
        "FROM rules WHERE id = $1", rule_id)
    return float(wait) if wait is not None else 1.0


@dataclass(frozen=True)
class QueueState:
    pending: int
    due: int
    oldest_seconds: float


async def queue_state(conn: Connection) -> QueueState:
    """Every project's queued runs, those due now, and the age of the oldest."""
    row = await conn.fetchrow(
        "SELECT count(*) AS pending, count(*) FILTER (WHERE next_attempt_at <= now()) AS due, "
        "coalesce(extract(epoch FROM now() - min(enqueued_at)), 0) AS oldest FROM rule_runs")
    assert row is not None
    return QueueState(int(row["pending"]), int(row["due"]), float(row["oldest"]))


def score_columns(run: ClaimedRun, *, number: float | None, comment: str | None,
                  error: str | None) -> dict[str, Any]:
    """A run's verdict as score columns (storage/scores.py WRITTEN): named after the
    evaluator, on the whole trajectory; its revision is the trajectory's, which `finish`'s
    caller checked is the run's."""
    return {
        "trace_id": run.trace_id, "step_id": None, "name": run.evaluator,
        "value_type": None if error is not None else "number",
        "number_value": None if error is not None else number,
        "category_value": None, "comment": comment, "source": "evaluator",
        "evaluator": run.evaluator, "evaluator_config": orjson.dumps(run.config).decode(),
        "evaluation_id": None, "rule_id": run.rule_id, "author": None, "error": error,
    }


