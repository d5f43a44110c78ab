-- Annotation queues (README, "Review by people"; docs/review.md): a project's queues of
-- trajectories for people to review, and their items. Declared in trajhub/records/review.py; the SQL is
-- storage/review.py's.
CREATE TABLE review_queues (
    id          bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    project     text   NOT NULL,
    name        text   NOT NULL,
    description text   NOT NULL DEFAULT '',
    -- the score configs' names a reviewer must give each item
    score_names text[] NOT NULL DEFAULT '{}',
    created_ns  bigint NOT NULL
        DEFAULT (extract(epoch FROM clock_timestamp()) * 1000000)::bigint * 1000,
    UNIQUE (project, name)
);

-- An item is a trajectory in a queue (once). A pending item is held by `reviewer` until
-- `lease_until_ns`; `next` claims one with FOR UPDATE SKIP LOCKED, so two reviewers never
-- hold the same item. Like scores (migration 0035) the table is not partitioned: retention
-- deletes a trajectory's items with it (storage/retention.py), by project and trace id.
CREATE TABLE review_items (
    id             bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    queue_id       bigint NOT NULL REFERENCES review_queues (id) ON DELETE CASCADE,
    -- the queue's project (retention finds a trajectory's items by project and trace id)
    project        text   NOT NULL,
    trace_id       text   NOT NULL,
    status         text   NOT NULL DEFAULT 'pending'
        CHECK (status IN ('pending', 'done', 'skipped')),
    reviewer       text,
    lease_until_ns bigint,
    comment        text,
    expectations   jsonb,
    added_ns       bigint NOT NULL
        DEFAULT (extract(epoch FROM clock_timestamp()) * 1000000)::bigint * 1000,
    completed_ns   bigint,
    UNIQUE (queue_id, trace_id)
);

-- `next`: a queue's pending items in order
CREATE INDEX review_items_pending ON review_items (queue_id, id) WHERE status = 'pending';
-- retention: a trajectory's items
CREATE INDEX review_items_by_trajectory ON review_items (project, trace_id);
