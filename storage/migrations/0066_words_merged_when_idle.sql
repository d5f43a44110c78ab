-- The free-text words index (migration 0014) was the dearest part of storing a trajectory: most
-- of its PostgreSQL CPU, parsing the text and appending its words to the pending list, then the
-- merges of that list into the index every 8 MB (migration 0064), inside the transactions that
-- store trajectories. A merge costs less per entry the more entries it carries, and none of it
-- is needed before someone searches (bench/README.md, "Free text").
--
-- So the pending list now grows to 64 MB before a storing transaction merges it, and the
-- derivation worker merges it whenever it has no backlog (its round took all that was queued)
-- and 1,000 trajectories were written since its last merge (service/workers/derivation.py,
-- storage/search_words.py). At a steady load that is about as
-- often as storing merged before, and the list stays near 8 MB. During a burst the worker is
-- busy until the backlog is derived, the list grows, and the trajectories are final sooner; a
-- search meanwhile reads the unmerged list, and takes longer until the worker merges
-- (bench/README.md, "Free text").
CREATE OR REPLACE FUNCTION trajhub_tune_partition_indexes(part regclass) RETURNS void
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
        EXECUTE format('ALTER INDEX %I SET (gin_pending_list_limit = 65536)', ix.child);
    END LOOP;
END
$$;

SELECT trajhub_tune_partition_indexes(h.inhrelid::regclass)
FROM pg_inherits h WHERE h.inhparent = 'trajectories'::regclass;
