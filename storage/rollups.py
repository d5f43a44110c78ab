"""SQL of monitoring's rollups (migration 0080, docs/monitoring.md): what each final trajectory
contributes, added to the hourly rollups as it becomes final and taken back exactly when it is
re-derived, its scores change or retention deletes it.

The writers are CTE fragments that the statements making those changes include (one
statement, no round trip per trace); each is set-based over the batch the statement handles.
Rows are upserted in key order, so two statements adding to the same rows lock them in the
same order and never deadlock.
"""

from __future__ import annotations

from trajhub.storage import session_rows

#: a rollup row's key after the project: the hour and the run's labels
LABELS = ("run_name", "agents", "models", "release", "prompt_version")
KEY = ("project", "hour_ns", *LABELS)
#: the summed figures of a contribution, as named in rollup_contributions and run_rollups
SUMS = ("duration_ms", "input_tokens", "output_tokens", "cache_read_tokens",
        "cache_write_tokens", "reasoning_tokens", "usd")
HOUR_NS = 3_600_000_000_000

_KEY = ", ".join(KEY)
_CONTRIBUTION_COLUMNS = ("project", "trace_id", "start_ns", *KEY[1:], "failed", *SUMS,
                         "session_id", "user_id", "failed_turn", "usage_sums")


def _roll(source: str, sign: str) -> str:
    """The upsert adding (`sign` "1") or taking back ("-1") the contributions in `source` (a
    CTE with rollup_contributions' columns). Runs are summed per key and latency bucket first,
    so the counts by bucket are built once per key (trajhub_counts_at), not merged run by
    run."""
    sums = ", ".join(f"sum({c}) AS {c}" for c in SUMS)
    updates = ", ".join(f"{c} = run_rollups.{c} + EXCLUDED.{c}"
                        for c in ("runs", "failed_runs", *SUMS))
    return (
        f"INSERT INTO run_rollups ({_KEY}, runs, failed_runs, latency_counts, {', '.join(SUMS)}) "
        f"SELECT {_KEY}, {sign} * sum(runs), {sign} * sum(failed_runs), "
        f"trajhub_counts_at(array_agg(bucket), array_agg({sign} * runs)), "
        + ", ".join(f"{sign} * sum({c})" for c in SUMS)
        + f" FROM (SELECT {_KEY}, trajhub_latency_bucket(duration_ms) AS bucket, "
        f"count(*) AS runs, count(*) FILTER (WHERE failed) AS failed_runs, {sums} "
        f"FROM {source} GROUP BY {_KEY}, bucket) b GROUP BY {_KEY} ORDER BY {_KEY} "
        f"ON CONFLICT ({_KEY}) DO UPDATE SET {updates}, latency_counts = "
        "trajhub_add_counts(run_rollups.latency_counts, EXCLUDED.latency_counts)")


def _roll_scores(source: str, scores: str, sign: str) -> str:
    """The upsert adding or taking back the scores `scores` (a table or CTE with project,
    trace_id, name, number_value) of the contributions in `source`."""
    key = ", ".join(f"c.{k}" for k in KEY)
    return (
        f"INSERT INTO run_rollup_scores ({_KEY}, name, scores, total) "
        f"SELECT {key}, s.name, {sign} * count(s.number_value), "
        f"{sign} * coalesce(sum(s.number_value::numeric), 0) "
        f"FROM {source} c JOIN {scores} s ON s.project = c.project AND s.trace_id = c.trace_id "
        f"GROUP BY {key}, s.name ORDER BY {key}, s.name "
        f"ON CONFLICT ({_KEY}, name) DO UPDATE SET "
        "scores = run_rollup_scores.scores + EXCLUDED.scores, "
        "total = run_rollup_scores.total + EXCLUDED.total")


def read_scores(traces: str) -> str:
    """The CTE `rollup_scores` (no comma before it): the scores of the traces in `traces` (a
    relation with project and trace_id), read before the statement changes anything, which the
    writers below take. On Citus (deploy/SCALING.md, section 3) a statement that changes a
    table while reading the reference table `scores` locks all of `scores`, after the rows it
    changes; a score being added locks them in the other order, and the two deadlocked. A CTE
    read first is read on its own, and its rows are the scores as the statement found them
    even where a later CTE deletes them (retention). Their ids and steps tell the sessions'
    writers (storage/session_rows.py) which is each turn's latest whole-run score."""
    return ("rollup_scores AS MATERIALIZED (SELECT s.project, s.trace_id, s.id, s.step_id, "
            "s.name, "
            f"s.number_value FROM scores s JOIN {traces} k "
            "ON s.project = k.project AND s.trace_id = k.trace_id)")


def add_ctes(finalized: str) -> str:
    """CTEs (each starting with a comma) recording and adding the contributions of the
    trajectories in `finalized`, a CTE of trajectories' columns (project, trace_id, start_ns,
    run_name, agent_names, model_names, release, prompt_version, has_error, duration_ms,
    input_tokens, output_tokens, cache_read_tokens, cache_write_tokens, reasoning_tokens,
    derived_usd, session_id, user_id, derivation_error, interrupted, input_preview, usage_sums)
    as they become final, and adding them to their sessions (storage/session_rows.py). Their
    scores are read from `rollup_scores` (read_scores)."""
    return (
        f", rollup_contributed AS (INSERT INTO rollup_contributions "
        f"({', '.join(_CONTRIBUTION_COLUMNS)}) "
        f"SELECT project, trace_id, start_ns, start_ns - start_ns % {HOUR_NS}, "
        "coalesce(run_name, ''), "
        "agent_names, model_names, coalesce(release, ''), coalesce(prompt_version, ''), "
        "has_error, duration_ms, input_tokens, output_tokens, cache_read_tokens, "
        "cache_write_tokens, reasoning_tokens, coalesce(derived_usd, 0)::numeric, "
        "session_id, user_id, has_error OR derivation_error IS NOT NULL, "
        "usage_sums "
        # a contribution already there (none should be) is kept, not added twice, and does not
        # stop the round
        f"FROM {finalized} ON CONFLICT (project, trace_id) DO NOTHING RETURNING *)"
        f", rollup_added AS ({_roll('rollup_contributed', '1')})"
        f", rollup_scored AS ({_roll_scores('rollup_contributed', 'rollup_scores', '1')})"
        + session_rows.add_ctes(finalized))


def take_back_ctes(traces: str) -> str:
    """CTEs (each starting with a comma) deleting the contributions of the trajectories in
    `traces` (a CTE or relation with project and trace_id) and taking them back from the
    rollups and their sessions (storage/session_rows.py), their scores with them
    (`rollup_scores`, read_scores). The sessions marked stale are the caller's to refresh
    (session_rows.refresh) before it commits."""
    return (
        f", rollup_taken AS (DELETE FROM rollup_contributions c USING {traces} k "
        "WHERE c.project = k.project AND c.trace_id = k.trace_id RETURNING c.*)"
        f", rollup_subtracted AS ({_roll('rollup_taken', '-1')})"
        f", rollup_unscored AS ({_roll_scores('rollup_taken', 'rollup_scores', '-1')})"
        + session_rows.take_back_ctes("rollup_taken"))


#: store(): the trajectories about to be stored ($1 projects, $2 trace ids) are open again, so
#: what they contributed as final is taken back
TAKE_BACK = (
    "WITH rollup_traces AS (SELECT * FROM unnest($1::text[], $2::text[]) AS k(project, trace_id)), "
    + read_scores("rollup_traces") + take_back_ctes("rollup_traces")
    + " SELECT count(*) FROM rollup_taken")


def score_ctes(changed: str, sign: str) -> str:
    """CTEs (each starting with a comma) adding (`sign` "1") or taking back ("-1") the scores
    in `changed` (a CTE with project, trace_id, name, number_value) on the rollup rows of their
    trajectories, where those are final (have a contribution)."""
    return (", rollup_score_changed AS ("
            + _roll_scores("rollup_contributions", changed, sign) + ")")


def partition_take_back(trajectories: str) -> str:
    """The statement taking back what the trajectories of one partition (the table
    `trajectories`) contributed, before the partition is dropped."""
    return (f"WITH rollup_traces AS (SELECT project, trace_id FROM {trajectories}), "
            + read_scores("rollup_traces") + take_back_ctes("rollup_traces")
            + " SELECT count(*) FROM rollup_taken")
