-- Evaluation runs over a set, and one result row per (item, evaluator).
CREATE TABLE evaluations (
    id           bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    project      text        NOT NULL,
    -- kept by name as well: a run stays readable after its set is renamed or deleted
    dataset_id   bigint      REFERENCES datasets (id) ON DELETE SET NULL,
    dataset_name text        NOT NULL,
    target       text        NOT NULL CHECK (target IN ('snapshot', 'live')),
    run_name     text,
    -- [{"name": ..., "config": {...}}], as requested
    evaluators   jsonb       NOT NULL,
    status       text        NOT NULL CHECK (status IN ('running', 'done', 'failed')),
    error        text,
    item_count   integer     NOT NULL DEFAULT 0,
    done_items   integer     NOT NULL DEFAULT 0,
    created_at   timestamptz NOT NULL DEFAULT now(),
    finished_at  timestamptz
);
CREATE INDEX evaluations_by_project ON evaluations (project, id DESC);

CREATE TABLE evaluation_results (
    evaluation_id bigint           NOT NULL REFERENCES evaluations (id) ON DELETE CASCADE,
    item_id       text             NOT NULL,
    evaluator     text             NOT NULL,
    seq           bigint           NOT NULL,
    trace_id      text,
    -- score and passed are NULL exactly when error is set: an error is never a verdict
    score         double precision,
    passed        boolean,
    error         text,
    reason        jsonb,
    explanation   text,
    PRIMARY KEY (evaluation_id, item_id, evaluator),
    CHECK ((error IS NULL) = (passed IS NOT NULL))
);
CREATE INDEX evaluation_results_by_seq ON evaluation_results (evaluation_id, seq);

-- The `live` target finds, per item, the trace whose root span carries
-- `trajhub.dataset_item_id` and `trajhub.run`; only such root spans are indexed.
CREATE INDEX spans_dataset_runs
    ON spans (project, (attributes ->> 'trajhub.run'), (attributes ->> 'trajhub.dataset_item_id'))
    WHERE parent_span_id = '' AND attributes ? 'trajhub.run';
