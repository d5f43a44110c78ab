-- Migration 0065 had autovacuum analyze a partition of `trajectories` once half its rows had
-- changed since the last analyze. Each trajectory changes about twice (stored open, then
-- final), so on a growing day's partition that is an analyze per ~25 % of growth, and past
-- 30,000 runs each one samples 30,000 rows and parses their text again for the words index
-- (8.7-10.7 s of CPU at 25,000 loadgen trajectories; bench/README.md, "The autoanalyze of
-- trajectories in a burst, and a smaller sample tried"): ~16 of them in a day of 1M runs.
--
-- What the plans read from a partition's statistics does not move as the day's partition
-- grows: the share of runs with a word, the spread of token sums and latencies, the share of
-- errors; the planner scales the counts by the partition's current size. At a factor of 4 an
-- analyze comes once the partition has about tripled: about 9 from 50 to 1M runs, 4 of them
-- past 30,000. The first ones come while the partition is small, when its statistics do change.
UPDATE time_partitioned_tables
SET options = array_replace(options, 'autovacuum_analyze_scale_factor=0.5',
                            'autovacuum_analyze_scale_factor=4')
WHERE name = 'trajectories';

DO $$
DECLARE
    part record;
BEGIN
    FOR part IN SELECT h.inhrelid::regclass AS name FROM pg_inherits h
                WHERE h.inhparent = 'trajectories'::regclass LOOP
        EXECUTE format('ALTER TABLE %s SET (autovacuum_analyze_scale_factor = 4)', part.name);
    END LOOP;
END
$$;
