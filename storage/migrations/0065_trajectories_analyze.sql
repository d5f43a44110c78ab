-- Analyzing a partition of `trajectories` is dear: PostgreSQL samples up to 30,000 rows and,
-- for the statistics of the free-text words index (migration 0014), parses the root input and
-- output of each again, which is most of its cost (bench/README.md, "Autoanalyze of
-- trajectories"). Autovacuum analyzes a table once its rows changed since the last
-- analyze exceed 10 % of it, and each trajectory changes twice (stored open, then final): on a
-- growing day's partition, an analyze per 5 % of growth, up to one a minute, which a burst on a
-- 2-core machine met as a stall of several seconds.
--
-- At 50 % an analyze comes once the partition has grown by about a quarter: a fifth as many on
-- a day's partition. The statistics stay as good (the same sample); they lag the growth a little
-- longer, and the planner scales their row counts by the partition's current size anyway.
UPDATE time_partitioned_tables
SET options = array_append(coalesce(options, '{}'), 'autovacuum_analyze_scale_factor=0.5')
WHERE name = 'trajectories';

DO $$
DECLARE
    part record;
BEGIN
    FOR part IN SELECT h.inhrelid::regclass AS name FROM pg_inherits h
                WHERE h.inhparent = 'trajectories'::regclass LOOP
        EXECUTE format('ALTER TABLE %s SET (autovacuum_analyze_scale_factor = 0.5)', part.name);
    END LOOP;
END
$$;
