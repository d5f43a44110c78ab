-- Migration 0065 had autovacuum analyze a partition of `trajectories` once the rows written
-- since its last analyze exceeded half the partition. Autovacuum compares them with the
-- partition's current size (each insert-driven vacuum refreshes it), and each trajectory is
-- written twice (stored open, then finalized in place), so on a growing day's partition that
-- was an analyze each time it grew by a third. Past 30,000 runs each one samples 30,000 rows
-- and parses their text again for the words index, seconds of CPU each (bench/README.md,
-- "Autoanalyze of trajectories"): about 12 of them as a day's partition grows from 30,000 runs
-- to 1M.
--
-- What the plans read from a partition's statistics does not move as the day's partition grows:
-- the share of runs with a word, the spread of token sums and latencies, the share of errors;
-- the planner scales the counts by the partition's current size. At 0.9 an analyze comes once
-- the partition has grown by about 80 % (written twice: 2 n > 0.9 (N + n)), about 6 from 30,000
-- runs to 1M. Not 1 or more: rows written once each would then never be analyzed again
-- (n > N + n); at 0.9 those are analyzed each time the partition grows tenfold
-- (bench/log-2026.md, "Autoanalyze at 0.9 of a partition, on a faster machine", found 4 wrong
-- that way).
UPDATE time_partitioned_tables
SET options = array_replace(options, 'autovacuum_analyze_scale_factor=0.5',
                            'autovacuum_analyze_scale_factor=0.9')
WHERE name = 'trajectories';

DO $$
DECLARE
    part record;
BEGIN
    FOR part IN SELECT h.inhrelid::regclass AS name FROM pg_inherits h
                WHERE h.inhparent = 'trajectories'::regclass LOOP
        EXECUTE format('ALTER TABLE %s SET (autovacuum_analyze_scale_factor = 0.9)', part.name);
    END LOOP;
END
$$;
