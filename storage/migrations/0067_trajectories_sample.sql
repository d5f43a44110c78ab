-- An analyze of a `trajectories` partition samples 300 rows per point of the largest
-- statistics target among its columns and index expressions: 30,000 at PostgreSQL's default of
-- 100. For the words index's statistics (migration 0014) it parses the root input and output of
-- every sampled row again, whatever that expression's own target. On 25,000 loadgen trajectories
-- ANALYZE took 8.7–10.7 s (a day's partition reaches that size in minutes at a burst), and in a
-- pipeline run autoanalyze was 8.55 of autovacuum's 9.6 CPU-s (bench/README.md, "The
-- trajectories partition's statistics from a smaller sample").
--
-- So every column and index expression of a trajectories partition has statistics target 10: a
-- sample of 3,000 rows, and 1.1–1.2 s for the same ANALYZE. The planner still gets what the
-- lists choose their plans by: the 100 most common words (a common word such as "weather" among
-- them, a rare one known to be rare), the 10 most common values of the equality filters (a
-- project's frequent framework, service or model; a rare one estimated as rare), and a
-- 10-bucket histogram of the token and duration ranges. What it loses is precision on values in
-- between, which move no list's plan at the 5M-span read benchmark (bench/scale.py).
CREATE OR REPLACE FUNCTION trajhub_tune_partition_indexes(part regclass) RETURNS void
    LANGUAGE plpgsql AS $$
DECLARE
    ix record;
    col record;
BEGIN
    FOR ix IN
        SELECT c.relname AS child
        FROM pg_index i
        JOIN pg_class c ON c.oid = i.indexrelid
        JOIN pg_inherits h ON h.inhrelid = i.indexrelid
        WHERE i.indrelid = part AND h.inhparent = 'trajectories_words'::regclass
    LOOP
        EXECUTE format('ALTER INDEX %I SET (gin_pending_list_limit = 65536)', ix.child);
    END LOOP;
    IF NOT EXISTS (SELECT FROM pg_inherits
                   WHERE inhrelid = part AND inhparent = 'trajectories'::regclass) THEN
        RETURN;
    END IF;
    FOR col IN
        SELECT a.attname FROM pg_attribute a
        WHERE a.attrelid = part AND a.attnum > 0 AND NOT a.attisdropped
    LOOP
        EXECUTE format('ALTER TABLE %s ALTER COLUMN %I SET STATISTICS 10', part, col.attname);
    END LOOP;
    -- an index's expression columns (a plain column's statistics are the table's)
    FOR col IN
        SELECT i.indexrelid::regclass AS index, k.n
        FROM pg_index i, generate_subscripts(i.indkey, 1) AS k(n)
        WHERE i.indrelid = part AND i.indkey[k.n] = 0
    LOOP
        EXECUTE format('ALTER INDEX %s ALTER COLUMN %s SET STATISTICS 10', col.index, col.n + 1);
    END LOOP;
END
$$;

SELECT trajhub_tune_partition_indexes(h.inhrelid::regclass)
FROM pg_inherits h WHERE h.inhparent = 'trajectories'::regclass;
