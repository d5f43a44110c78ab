-- On a Citus coordinator, place monitoring's tables as storage/citus_tables.py declares them
-- (deploy/SCALING.md, section 3); anywhere else this does nothing. They came after the
-- distribution of migration 0074.
--
-- A run's contribution is keyed by its trace: distributed by `trace_id` with `spans`, so that
-- finalizing, storing again and expiring a trace touch its own shard. The hourly rollups are
-- written by every finalize round and read by the time series: reference tables, so that the
-- statements that correct them may read the distributed contributions. The alert rules and
-- their events stay on the coordinator: no statement joins them with another kind of table.
DO $$
BEGIN
    IF NOT EXISTS (SELECT 1 FROM pg_extension WHERE extname = 'citus') THEN
        RETURN;
    END IF;
    SET LOCAL citus.multi_shard_modify_mode TO 'sequential';
    PERFORM create_reference_table('run_rollups');
    PERFORM create_reference_table('run_rollup_scores');
    PERFORM create_distributed_table('rollup_contributions', 'trace_id',
                                     colocate_with => 'spans');
END
$$;
