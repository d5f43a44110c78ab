"""Where each of trajhub's tables lives on a Citus cluster (deploy/SCALING.md, section 3): the
one declaration that the distribution migration and the statement check
(tests/test_citus_statements.py) are both checked against.

- DISTRIBUTED: hash-distributed by `trace_id`, all in one colocation group with `spans`, so that
  every row of a trace is on one node and a statement naming one trace is single-shard.
- REFERENCE: small tables written at human or evaluation pace, copied to every node, so that a
  statement may join them with the distributed ones.
- LOCAL: plain tables on the coordinator, never joined with a distributed or reference table in
  one statement: the derivation queue (claimed with `FOR UPDATE SKIP LOCKED` and locked per trace
  on the coordinator), the partition catalogue, the migrations' record, and the datasets and
  evaluations, which are read beside the trajectories in statements of their own.
"""

from __future__ import annotations

DISTRIBUTED: frozenset[str] = frozenset({
    "spans", "traces", "trace_keys", "trajectories", "trajectory_revisions",
    "trajectory_words", "trajectory_words_queue", "open_trajectories", "trajectory_chunks",
    "log_records", "rollup_contributions",
})

REFERENCE: frozenset[str] = frozenset({
    "resources", "compression_dictionaries", "api_keys", "project_retention",
    "scores", "score_configs", "rules", "rule_backfills", "rule_runs", "review_queues",
    "review_items", "run_rollups", "run_rollup_scores",
    "sessions", "session_users", "session_models", "session_scores",
})

LOCAL: frozenset[str] = frozenset({
    "trace_changes", "trajhub_time_partitions", "time_partitioned_tables", "schema_migrations",
    "files",
    "datasets", "dataset_items", "evaluations", "evaluation_results", "evaluation_jobs",
    "alert_rules", "alert_events",
})

#: the column every distributed table is distributed by
DISTRIBUTION_COLUMN = "trace_id"


def kind(table: str) -> str | None:
    """'distributed', 'reference' or 'local' for one of trajhub's tables (or one of the time
    partitions of a distributed table, `<table>_p<range>`), None for any other name."""
    for name, tables in (("distributed", DISTRIBUTED), ("reference", REFERENCE),
                         ("local", LOCAL)):
        if table in tables:
            return name
    base = table.rsplit("_p", 1)[0]
    return "distributed" if base != table and base in DISTRIBUTED else None
