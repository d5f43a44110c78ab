-- Indexes for reads at scale (bench/scale.py): free text, trace attribute and span-name filters,
-- and the list filters that otherwise walk every row of a project.
--
-- On an existing store this runs once at start, inside the migration's transaction, and builds
-- each index over every row (the free-text index parses every trajectory's input and output,
-- most of the time; bench/README.md, "Migrating a store", has the time per 100k trajectories).
-- A generous maintenance_work_mem lets the GIN indexes be built in memory.
SET LOCAL maintenance_work_mem = '256MB';

-- Free text (`q`): a GIN index over the words of the root input and output, PostgreSQL's own
-- full-text search with the 'simple' configuration (no stemming, no stop words; pg_trgm is not
-- available in the embedded PostgreSQL). A query's words must each begin a word of the text, and
-- the whole query is then checked as a case-insensitive substring (storage/trajectory_reads.py).
-- Only the first 100,000 characters of each are indexed: that bounds the cost of indexing a
-- huge input and keeps every tsvector below PostgreSQL's 1 MB limit.
CREATE FUNCTION trajhub_search_words(input text, output text) RETURNS tsvector
    LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
    AS $$ SELECT to_tsvector('simple'::regconfig, left(input, 100000) || ' ' || left(output, 100000)) $$;
CREATE INDEX trajectories_words ON trajectories
    USING gin (trajhub_search_words(root_input, root_output));

-- Equality filters: with the list's order after the value, one index serves a value that
-- matches a few runs (read just those) and one that matches most (read them newest first).
-- framework had none: a rare value (or none) meant walking every trajectory of the project.
CREATE INDEX trajectories_framework
    ON trajectories (project, framework, start_ns DESC, trace_id DESC);
DROP INDEX trajectories_service;
DROP INDEX trajectories_session;
DROP INDEX trajectories_user;
CREATE INDEX trajectories_service
    ON trajectories (project, service, start_ns DESC, trace_id DESC);
CREATE INDEX trajectories_session
    ON trajectories (project, session_id, start_ns DESC, trace_id DESC);
CREATE INDEX trajectories_user
    ON trajectories (project, user_id, start_ns DESC, trace_id DESC);

-- Token and duration ranges that few runs fall in (e.g. min_tokens above almost every run)
-- otherwise walk the whole project; these also serve `sort=tokens` and `sort=duration`.
CREATE INDEX trajectories_tokens
    ON trajectories (project, (input_tokens + output_tokens), trace_id);
CREATE INDEX trajectories_duration ON trajectories (project, duration_ms, trace_id);

-- Per trace, the 32-bit hashes of its spans' (attribute key, value) pairs and span names
-- (storage/attribute_keys.py), filled by the trajectory worker: the attribute and span-name
-- filters of the trace list check spans only for the traces whose set holds a wanted hash.
-- NULL for traces stored before this migration: those are checked span by span, as before,
-- until they are derived again (new spans, or `trajhub rederive`).
ALTER TABLE traces ADD COLUMN attribute_keys integer[];
CREATE INDEX traces_attribute_keys ON traces USING gin (attribute_keys);
CREATE INDEX traces_attribute_keys_unknown ON traces (project, start_ns DESC, trace_id DESC)
    WHERE attribute_keys IS NULL;

-- the trace list's service and error filters
CREATE INDEX traces_service ON traces (project, service_name, start_ns DESC, trace_id DESC);
CREATE INDEX traces_failed ON traces (project, start_ns DESC, trace_id DESC)
    WHERE error_count > 0;

-- The query side of free text: each word of the text (as the same parser splits it) as a
-- prefix, all required. NULL when the text has no word.
CREATE FUNCTION trajhub_prefix_query(text) RETURNS tsquery
    LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
    AS $$ SELECT string_agg('''' || replace(replace(word, '\', '\\'), '''', '''''') || ''':*',
                             ' & ')::tsquery
          FROM unnest(tsvector_to_array(to_tsvector('simple'::regconfig, $1))) AS word $$;
