-- On a Citus coordinator, place the sessions' rows (migration 0092) as storage/citus_tables.py
-- declares them (deploy/SCALING.md, section 3); anywhere else this does nothing.
--
-- A session's turns are traces on any node, and the statements that store, finalize, score and
-- expire a turn correct its session in the same statement: reference tables, as the hourly
-- rollups are, so that those statements may read the distributed trajectories beside them.
DO $$
BEGIN
    IF NOT EXISTS (SELECT 1 FROM pg_extension WHERE extname = 'citus') THEN
        RETURN;
    END IF;
    SET LOCAL citus.multi_shard_modify_mode TO 'sequential';
    PERFORM create_reference_table('sessions');
    PERFORM create_reference_table('session_scores');
    PERFORM create_reference_table('session_models');
    PERFORM create_reference_table('session_calls');
END
$$;
