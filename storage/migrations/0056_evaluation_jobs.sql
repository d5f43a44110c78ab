-- Dataset evaluation runs go through a durable queue (docs/rules.md §8), as online
-- evaluation rules' runs do (migration 0055): one row per evaluation still to run, claimed with
-- FOR UPDATE SKIP LOCKED, a claim token and a lease the running server keeps extending. A
-- server killed mid-way leaves the row, and the next server continues the evaluation with the
-- items that have no result yet; an item's results and scores are stored once.
CREATE TABLE evaluation_jobs (
    evaluation_id   bigint      PRIMARY KEY REFERENCES evaluations (id) ON DELETE CASCADE,
    enqueued_at     timestamptz NOT NULL DEFAULT now(),
    next_attempt_at timestamptz NOT NULL DEFAULT now(),
    -- times a server put it back because it could not run its evaluators (no judge settings)
    attempts        integer     NOT NULL DEFAULT 0,
    claim           uuid
);
CREATE INDEX evaluation_jobs_due ON evaluation_jobs (next_attempt_at);
