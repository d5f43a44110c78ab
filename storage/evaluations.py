"""SQL for evaluations, their per-item results and the traces of a live run."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field

from trajhub.storage.database import Connection
from trajhub.storage.rows import (
    AggregateRow,
    EvaluationRow,
    ItemOutcomesRow,
    Row,
    RunItemRow,
    TargetTrajectoryRow,
    sql,
)

EVALUATION_COLUMNS = EvaluationRow.columns()


@dataclass(frozen=True)
class ResultRow(Row):
    """One evaluator's outcome on one item: a verdict (score, passed) or an error."""

    item_id: str
    evaluator: str
    seq: int
    trace_id: str | None
    score: float | None
    passed: bool | None
    error: str | None
    reason: str | None = field(metadata=sql("reason::text"))  # JSON text
    explanation: str | None


async def item_count(conn: Connection, dataset: int) -> int:
    return int(await conn.fetchval(
        "SELECT count(*) FROM dataset_items WHERE dataset_id = $1", dataset))


async def create_evaluation(conn: Connection, project: str, dataset: int,
                            dataset_name: str, target: str, run_name: str | None,
                            evaluators_json: str, item_count: int) -> int:
    value = await conn.fetchval(
        """INSERT INTO evaluations (project, dataset_id, dataset_name, target, run_name,
               evaluators, status, item_count)
           VALUES ($1, $2, $3, $4, $5, $6::jsonb, 'running', $7) RETURNING id""",
        project, dataset, dataset_name, target, run_name, evaluators_json, item_count)
    return int(value)


async def record_results(conn: Connection, evaluation: int, rows: Sequence[ResultRow]
                         ) -> bool:
    """Store one item's results and count the item as done, atomically; False (and nothing
    counted) when the item has its results already: an evaluation resumed after a restart
    (evaluation_jobs, migration 0056), or run by two servers for a moment, stores each item
    once (the results' primary key decides which transaction stores them). Inside the
    caller's transaction when it has one, so that the item's scores go with it."""
    async with conn.transaction():
        inserted = await conn.fetch(
            """INSERT INTO evaluation_results (evaluation_id, item_id, evaluator, seq, trace_id,
                   score, passed, error, reason, explanation)
               SELECT $1, * FROM unnest($2::text[], $3::text[], $4::bigint[], $5::text[],
                   $6::float8[], $7::boolean[], $8::text[], $9::jsonb[], $10::text[])
               ON CONFLICT (evaluation_id, item_id, evaluator) DO NOTHING RETURNING 1""",
            evaluation, [r.item_id for r in rows], [r.evaluator for r in rows],
            [r.seq for r in rows], [r.trace_id for r in rows], [r.score for r in rows],
            [r.passed for r in rows], [r.error for r in rows], [r.reason for r in rows],
            [r.explanation for r in rows])
        if not inserted:
            return False
        await conn.execute(
            "UPDATE evaluations SET done_items = done_items + 1, updated_at = now() "
            "WHERE id = $1", evaluation)
    return True


async def finish(conn: Connection, evaluation: int, error: str | None) -> None:
    await conn.execute(
        "UPDATE evaluations SET status = $2, error = $3, finished_at = now() WHERE id = $1",
        evaluation, "failed" if error else "done", error)


async def fail_abandoned(conn: Connection, idle_seconds: float) -> int:
    """Mark failed the `running` evaluations with no progress for `idle_seconds`: the server
    running them died (a clean shutdown records its own interruption)."""
    result = await conn.execute(
        """UPDATE evaluations SET status = 'failed', finished_at = now(),
               error = 'interrupted: the server running it stopped without finishing it'
           WHERE status = 'running' AND updated_at < now() - make_interval(secs => $1)
             -- a queued one is resumed, not failed (migration 0056)
             AND id NOT IN (SELECT evaluation_id FROM evaluation_jobs)""",
        idle_seconds)
    return int(result.split()[-1])


async def list_evaluations(conn: Connection, project: str, dataset_name: str | None,
                           before_id: int | None, limit: int) -> list[EvaluationRow]:
    return EvaluationRow.from_records(await conn.fetch(
        f"SELECT {EVALUATION_COLUMNS} FROM evaluations WHERE project = $1 "
        "AND ($2::text IS NULL OR dataset_name = $2) AND ($3::bigint IS NULL OR id < $3) "
        "ORDER BY id DESC LIMIT $4", project, dataset_name, before_id, limit))


async def get_evaluation(conn: Connection, project: str, evaluation: int
                         ) -> EvaluationRow | None:
    return await EvaluationRow.fetch_one(
        conn, f"SELECT {EVALUATION_COLUMNS} FROM evaluations WHERE project = $1 AND id = $2",
        project, evaluation)


async def aggregates(conn: Connection, evaluation: int) -> list[AggregateRow]:
    """Per evaluator: results, passes, errors and the mean score of the verdicts. The pass rate
    counts errors as not passed: an item the evaluator could not judge did not pass."""
    return AggregateRow.from_records(await conn.fetch(
        f"""SELECT {AggregateRow.columns()}
            FROM evaluation_results WHERE evaluation_id = $1
            GROUP BY evaluator ORDER BY evaluator""", evaluation))


async def results(conn: Connection, evaluation: int, failed_only: bool,
                  after: tuple[int, str] | None, limit: int) -> list[ResultRow]:
    """Results ordered by item (set order), then evaluator; `after` is the (seq, evaluator) of
    the previous page's last row."""
    seq, evaluator = after if after is not None else (0, "")
    return ResultRow.from_records(await conn.fetch(
        f"""SELECT {ResultRow.columns()}
            FROM evaluation_results
            WHERE evaluation_id = $1 AND (NOT $2 OR passed IS NOT TRUE)
              AND (seq, evaluator) > ($3, $4)
            ORDER BY seq, evaluator LIMIT $5""",
        evaluation, failed_only, seq, evaluator, limit))


async def item_outcomes(conn: Connection, evaluation: int) -> ItemOutcomesRow:
    """Items judged so far: passed every evaluator, failed one, or hit an error."""
    row = await conn.fetchrow(
        f"""SELECT {ItemOutcomesRow.columns()}
            FROM (SELECT bool_and(passed IS TRUE) AS all_passed,
                         bool_or(error IS NOT NULL) AS any_error
                  FROM evaluation_results WHERE evaluation_id = $1 GROUP BY item_id) per_item""",
        evaluation)
    assert row is not None
    return ItemOutcomesRow.from_record(row)


async def live_traces(conn: Connection, project: str, run_name: str,
                      item_ids: Sequence[str]) -> dict[str, str]:
    """item id → trace id of the run's trace for that item: the trace whose root span carries
    `trajhub.run` = run_name and `trajhub.dataset_item_id` = the item id. When an item ran more
    than once under the same name, the latest trace wins."""
    rows = await conn.fetch(
        """SELECT DISTINCT ON (item_id) attributes ->> 'trajhub.dataset_item_id' AS item_id,
                  trace_id
           FROM spans
           WHERE project = $1 AND parent_span_id = '' AND attributes ? 'trajhub.run'
             AND attributes ->> 'trajhub.run' = $2
             AND attributes ->> 'trajhub.dataset_item_id' = ANY($3::text[])
           ORDER BY item_id, start_ns DESC, trace_id""",
        project, run_name, list(item_ids))
    return {r["item_id"]: r["trace_id"] for r in rows}


async def items_for_run(conn: Connection, dataset: int, after_seq: int, limit: int,
                        evaluation: int | None = None) -> list[RunItemRow]:
    """A page of a set's items with what evaluators need (the snapshot included), in set
    order; paged so a large set is never held in memory at once. With `evaluation`, only the
    items it has no result for yet (a resumed evaluation)."""
    return RunItemRow.from_records(await conn.fetch(
        f"""SELECT {RunItemRow.columns()}
            FROM dataset_items i WHERE dataset_id = $1 AND seq > $2
              AND ($4::bigint IS NULL OR NOT EXISTS (
                  SELECT 1 FROM evaluation_results r
                  WHERE r.evaluation_id = $4 AND r.item_id = i.id))
            ORDER BY seq LIMIT $3""",
        dataset, after_seq, limit, evaluation))


# ------------------------------------------------------------------- the durable queue (0056)

@dataclass(frozen=True)
class Job:
    """A claimed evaluation: what the worker needs to run it."""

    evaluation: int
    claim: uuid.UUID
    project: str
    dataset: int | None
    target: str
    run_name: str | None
    evaluators: str  # JSON text: [{"name", "config"}]
    attempts: int = 0


async def enqueue(conn: Connection, evaluation: int) -> None:
    await conn.execute("INSERT INTO evaluation_jobs (evaluation_id) VALUES ($1)", evaluation)


async def claim_job(conn: Connection, lease_seconds: float,
                    skip: Sequence[int] = ()) -> Job | None:
    """Take the oldest due evaluation (but those of `skip`), with a new claim token and a
    lease."""
    token = uuid.uuid4()
    row = await conn.fetchrow(
        """WITH due AS (
               SELECT evaluation_id FROM evaluation_jobs WHERE next_attempt_at <= now()
                 AND evaluation_id <> ALL($3::bigint[])
               ORDER BY next_attempt_at, evaluation_id LIMIT 1 FOR UPDATE SKIP LOCKED)
           UPDATE evaluation_jobs j SET claim = $1,
               next_attempt_at = now() + make_interval(secs => $2)
           FROM due, evaluations e
           WHERE j.evaluation_id = due.evaluation_id AND e.id = j.evaluation_id
           RETURNING e.id, e.project, e.dataset_id, e.target, e.run_name,
                     e.evaluators::text AS evaluators, j.attempts""", token, lease_seconds,
        list(skip))
    if row is None:
        return None
    return Job(row["id"], token, row["project"], row["dataset_id"], row["target"],
               row["run_name"], row["evaluators"], row["attempts"])


async def extend_job(conn: Connection, job: Job, lease_seconds: float) -> bool:
    """Extend the lease; False when the job is no longer this claimant's."""
    status = await conn.execute(
        "UPDATE evaluation_jobs SET next_attempt_at = now() + make_interval(secs => $3) "
        "WHERE evaluation_id = $1 AND claim = $2", job.evaluation, job.claim, lease_seconds)
    return bool(status != "UPDATE 0")


async def release_job(conn: Connection, job: Job) -> None:
    """Put the job back, due now (this server is stopping: another, or the next, goes on)."""
    await conn.execute(
        "UPDATE evaluation_jobs SET claim = NULL, next_attempt_at = now() "
        "WHERE evaluation_id = $1 AND claim = $2", job.evaluation, job.claim)


async def postpone_job(conn: Connection, job: Job, delay_seconds: float) -> int:
    """Put the job back, due after `delay_seconds`, counting an attempt (this server cannot run
    its evaluators: another, configured for them, may); the attempts so far."""
    attempts = await conn.fetchval(
        "UPDATE evaluation_jobs SET claim = NULL, attempts = attempts + 1, "
        "next_attempt_at = now() + make_interval(secs => $3) "
        "WHERE evaluation_id = $1 AND claim = $2 RETURNING attempts",
        job.evaluation, job.claim, delay_seconds)
    return int(attempts or 0)


async def finish_job(conn: Connection, job: Job, error: str | None) -> None:
    """Take the job off the queue and record the evaluation's end, atomically, if the job is
    still this claimant's."""
    async with conn.transaction():
        status = await conn.execute(
            "DELETE FROM evaluation_jobs WHERE evaluation_id = $1 AND claim = $2",
            job.evaluation, job.claim)
        if status != "DELETE 0":
            await finish(conn, job.evaluation, error)


async def release_claims(conn: Connection) -> int:
    """At start: every claimed evaluation is due now (its claimant may have been killed)."""
    status = await conn.execute(
        "UPDATE evaluation_jobs SET claim = NULL, next_attempt_at = now() "
        "WHERE claim IS NOT NULL")
    return int(status.split()[-1])


async def trajectories_of(conn: Connection, project: str, trace_ids: Sequence[str]
                          ) -> dict[str, TargetTrajectoryRow]:
    """trace id → (status, document text) of the traces' trajectories."""
    rows = await conn.fetch(
        f"SELECT {TargetTrajectoryRow.columns()} FROM trajectories "
        "WHERE project = $1 AND trace_id = ANY($2::text[])", project, list(trace_ids))
    return {r.trace_id: r for r in TargetTrajectoryRow.from_records(rows)}
