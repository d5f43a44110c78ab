-- The free-text words index (migration 0014) takes a new trajectory's words into its pending
-- list, and merges the list into the index once it holds gin_pending_list_limit (4 MB by
-- default). A merge rewrites the posting lists of the words it carries, and those grow with the
-- index, which made it the index that wrote the most WAL. An 8 MB list carries twice the
-- entries into each merge for about the same pages, so less WAL per span. The cost is on the
-- read side: a search reads the whole pending list, so it waits a little longer when the list
-- is nearly full; a larger list would save less WAL for a longer wait (bench/README.md, "WAL").
--
-- A partitioned index takes no storage parameters: each partition's index gets it, when the
-- partition is created, and here for the partitions that exist.
CREATE FUNCTION trajhub_tune_partition_indexes(part regclass) RETURNS void
    LANGUAGE plpgsql AS $$
DECLARE
    ix record;
BEGIN
    FOR ix IN
        SELECT c.relname AS child
        FROM pg_index i
        JOIN pg_class c ON c.oid = i.indexrelid
        JOIN pg_inherits h ON h.inhrelid = i.indexrelid
        WHERE i.indrelid = part AND h.inhparent = 'trajectories_words'::regclass
    LOOP
        EXECUTE format('ALTER INDEX %I SET (gin_pending_list_limit = 8192)', ix.child);
    END LOOP;
END
$$;

CREATE OR REPLACE FUNCTION trajhub_create_partition(lower timestamptz, upper timestamptz)
    RETURNS void LANGUAGE plpgsql AS $$
DECLARE
    t record;
    suffix text := '_p' || to_char(lower AT TIME ZONE 'UTC', 'YYYYMMDD_HH24MISS');
BEGIN
    FOR t IN SELECT name, options FROM time_partitioned_tables ORDER BY name LOOP
        EXECUTE format('CREATE TABLE %I PARTITION OF %I FOR VALUES FROM (%L) TO (%L) %s',
                       t.name || suffix, t.name, lower, upper,
                       CASE WHEN t.options IS NULL THEN ''
                            ELSE 'WITH (' || array_to_string(t.options, ', ') || ')' END);
        PERFORM trajhub_name_partition_indexes((t.name || suffix)::regclass);
        PERFORM trajhub_tune_partition_indexes((t.name || suffix)::regclass);
    END LOOP;
    INSERT INTO trajhub_time_partitions (lower, upper) VALUES (lower, upper);
END
$$;

SELECT trajhub_tune_partition_indexes(h.inhrelid::regclass)
FROM pg_inherits h WHERE h.inhparent = 'trajectories'::regclass;
