-- Scores: a score judges one trajectory, or one step of it, with a number, a boolean
-- or a category. Its columns are those trajhub/records/scores.py declares.
--
-- An ordinary table, not one of the time partitions (migration 0021): it is keyed by project
-- and trace id, as the trajectory is whatever its revision, so a re-derivation (which rewrites
-- the trajectory's row, never deletes it) leaves its scores in place; a step's score names the
-- step by its id (its span id), which every revision keeps. Retention deletes a trajectory's
-- scores with it (storage/retention.py).
CREATE TABLE scores (
    id               bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    project          text             NOT NULL,
    trace_id         text             NOT NULL,
    step_id          text,
    name             text             NOT NULL,
    -- which value column holds the value; NULL when an evaluator gave an error instead
    value_type       text             CHECK (value_type IN ('number', 'boolean', 'category')),
    -- a number, or a boolean as 1 or 0 (so one column sorts and compares them)
    number_value     double precision,
    category_value   text,
    comment          text,
    source           text             NOT NULL CHECK (source IN ('evaluator', 'api', 'human')),
    evaluator        text,
    evaluator_config jsonb,
    evaluation_id    bigint,
    author           text,
    error            text,
    revision         integer          NOT NULL,
    created_ns       bigint           NOT NULL
        DEFAULT (extract(epoch FROM clock_timestamp()) * 1000000)::bigint * 1000,
    CHECK ((value_type IS NULL) = (error IS NOT NULL)),
    CHECK (value_type IS DISTINCT FROM 'category' OR category_value IS NOT NULL),
    CHECK (value_type NOT IN ('number', 'boolean') OR number_value IS NOT NULL)
);

-- a trajectory's scores (its page, a session's turns)
CREATE INDEX scores_by_trajectory ON scores (project, trace_id, id);
-- the trajectory list's `score` filter and `score:<name>` sort: a name's whole-run scores
CREATE INDEX scores_by_name ON scores (project, name, trace_id, id) WHERE step_id IS NULL;
