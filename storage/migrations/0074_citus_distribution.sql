-- On a Citus coordinator (the `citus` extension is installed in this database, and its worker
-- nodes are added), distribute the tables as storage/citus_tables.py declares them and
-- deploy/SCALING.md, section 3, explains; anywhere else this does nothing.
--
-- Every table keyed by a trace is hash-distributed by `trace_id` in one colocation group with
-- `spans`, so that every row of a trace is on one node: a derivation, a read of one trace and
-- the stores of one trace are single-shard, and only lists and aggregates fan out. A
-- time-partitioned table is distributed as a whole: each partition is a distributed table of its
-- own, colocated with its parent, and the partitions created later get their shards too.
-- The small tables written at human or evaluation pace are reference tables (a copy on every
-- node), so that a statement can join them with the distributed ones. The rest stays on the
-- coordinator: the derivation queue, the partition catalogue, datasets and evaluations, the
-- files; no statement joins them with a distributed or reference table
-- (tests/test_citus_statements.py).
DO $$
DECLARE
    t text;
BEGIN
    IF NOT EXISTS (SELECT 1 FROM pg_extension WHERE extname = 'citus') THEN
        RETURN;
    END IF;
    -- one shard placement at a time per node inside this transaction: distributing a table
    -- with many partitions otherwise opens more connections per node than the pool allows
    SET LOCAL citus.multi_shard_modify_mode TO 'sequential';
    FOREACH t IN ARRAY ARRAY['resources', 'compression_dictionaries', 'api_keys',
                             'project_retention', 'score_configs', 'rules', 'rule_backfills',
                             'rule_runs', 'review_queues', 'review_items', 'scores'] LOOP
        PERFORM create_reference_table(t);
    END LOOP;
    PERFORM create_distributed_table('spans', 'trace_id');
    FOREACH t IN ARRAY ARRAY['traces', 'trace_keys', 'trajectories', 'trajectory_revisions',
                             'trajectory_words', 'trajectory_words_queue', 'open_trajectories',
                             'trajectory_chunks', 'log_records'] LOOP
        PERFORM create_distributed_table(t, 'trace_id', colocate_with => 'spans');
    END LOOP;
END
$$;
