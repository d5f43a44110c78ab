-- The free-text words index (migration 0014) was an index on `trajectories` over an expression
-- of the root input and output, so storing a trajectory parsed its text (to_tsvector) and added
-- its words to the index's pending list, inside the transaction that stores it: with the merges,
-- a large share of the pipeline's server CPU, spent before the trajectory can be final, though
-- none of it is needed before someone searches (bench/README.md, "Free text").
--
-- The words now live in a table of their own, one row per trajectory, in the trajectory's time
-- partition, written when they are filled. Storing a trajectory queues it in
-- `trajectory_words_queue` instead (a key, no text: no parsing), in the statement that stores
-- the trajectory (storage/derivation_store.py); storing it again queues it again. The derivation
-- worker fills the words of the queued ones while it has no backlog and takes them off the
-- queue (storage/search_words.py, service/workers/derivation.py): during a burst the words wait,
-- after it they are filled within seconds, at a steady load at once.
--
-- A search (storage/trajectory_reads.py) reads the union of the runs whose words match and that
-- are not queued, and the queued runs, checked against their text as the index would have (the
-- same function, computed for just those runs): the same answers as before, at any moment. The
-- queue is a small table of its own, not rows of `trajectory_words` without words: filling such
-- a row would leave a dead entry in an index of the unfilled ones until vacuum, and a search read
-- every one of them (bench/README.md, "Free text"); vacuuming the queue is cheap, the words index
-- not.
CREATE TABLE trajectory_words (
    project    text        NOT NULL,
    trace_id   text        NOT NULL,
    first_seen timestamptz NOT NULL DEFAULT trajhub_partition_time(now()),
    -- strip(trajhub_search_words(root_input, root_output)) of the stored trajectory: its words
    -- without their positions, which a search never reads (its query is words' starts joined by
    -- AND)
    words      tsvector    NOT NULL,
    PRIMARY KEY (project, trace_id, first_seen)
) PARTITION BY RANGE (first_seen);
INSERT INTO time_partitioned_tables (name, options) VALUES ('trajectory_words', NULL);

DO $$
DECLARE
    r record;
BEGIN
    FOR r IN SELECT lower, upper FROM trajhub_time_partitions ORDER BY lower LOOP
        EXECUTE format('CREATE TABLE %I PARTITION OF trajectory_words FOR VALUES FROM (%L) TO (%L)',
                       'trajectory_words_p' || to_char(r.lower AT TIME ZONE 'UTC', 'YYYYMMDD_HH24MISS'),
                       r.lower, r.upper);
    END LOOP;
END
$$;

-- Every stored trajectory's words, now: a store that upgrades searches as fast as before. This
-- parses every trajectory's text once, as migration 0014 did (bench/README.md, "Migrating a
-- store", has its time for 1M spans).
INSERT INTO trajectory_words (project, trace_id, first_seen, words)
SELECT project, trace_id, first_seen, strip(trajhub_search_words(root_input, root_output))
FROM trajectories;

CREATE INDEX trajectory_words_search ON trajectory_words USING gin (words);
DROP INDEX trajectories_words;

-- A queued run's text against a query, as the words index would have matched it. In PL/pgSQL
-- so that PostgreSQL does not inline it: it then estimates that a third of the runs match
-- (what it assumes of a boolean function) instead of the half percent it assumes of `@@` on an
-- expression without statistics, so when many runs are queued (after a long burst) it walks
-- them in the list's order and stops at a page, rather than splitting the text of every queued
-- run that contains a common word (bench/README.md, "Free text").
CREATE FUNCTION trajhub_queued_words_match(input text, output text, query tsquery)
    RETURNS boolean LANGUAGE plpgsql IMMUTABLE STRICT PARALLEL SAFE
    AS $$ BEGIN RETURN trajhub_search_words(input, output) @@ query; END $$;

-- The trajectories whose words are to be filled (again): a queue, like trace_changes, that
-- autovacuum should visit often.
CREATE TABLE trajectory_words_queue (
    project    text        NOT NULL,
    trace_id   text        NOT NULL,
    first_seen timestamptz NOT NULL,
    PRIMARY KEY (project, trace_id)
) WITH (autovacuum_vacuum_scale_factor = 0.01);

-- the words index keeps the large pending list of migration 0066, merged by the derivation
-- worker when it has no backlog
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
        WHERE i.indrelid = part AND h.inhparent = 'trajectory_words_search'::regclass
    LOOP
        EXECUTE format('ALTER INDEX %I SET (gin_pending_list_limit = 65536)', ix.child);
    END LOOP;
END
$$;

DO $$
DECLARE
    part record;
BEGIN
    FOR part IN SELECT h.inhrelid::regclass AS name FROM pg_inherits h
                WHERE h.inhparent = 'trajectory_words'::regclass LOOP
        PERFORM trajhub_name_partition_indexes(part.name);
        PERFORM trajhub_tune_partition_indexes(part.name);
    END LOOP;
END
$$;

-- A search joins the runs and their words, which PostgreSQL estimates from the statistics of
-- the partitioned tables as wholes; autovacuum never gathers those, the derivation worker does
-- (storage/search_words.py, `analyze_outgrown`), and this for a store that has runs already.
ANALYZE trajectories (project, trace_id, first_seen), trajectory_words;
