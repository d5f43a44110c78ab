-- Evaluation sets ("datasets") and their items.
--
-- An item keeps a snapshot of the trajectory it came from (json, so the bytes stay exactly as
-- the trajectory was served), the expectations it is scored against, and its source trace id.
CREATE TABLE datasets (
    id          bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    project     text        NOT NULL,
    name        text        NOT NULL,
    description text        NOT NULL DEFAULT '',
    created_at  timestamptz NOT NULL DEFAULT now(),
    updated_at  timestamptz NOT NULL DEFAULT now(),
    UNIQUE (project, name)
);

CREATE TABLE dataset_items (
    -- text, not uuid: it travels as the span attribute `trajhub.dataset_item_id`
    id               text        PRIMARY KEY DEFAULT replace(gen_random_uuid()::text, '-', ''),
    dataset_id       bigint      NOT NULL REFERENCES datasets (id) ON DELETE CASCADE,
    -- insertion order: lists and exports are stable and pageable by it
    seq              bigint      GENERATED ALWAYS AS IDENTITY,
    input            jsonb,
    reference_output jsonb,
    expectations     jsonb       NOT NULL DEFAULT '{}',
    trajectory       json,
    source_trace_id  text,
    tags             text[]      NOT NULL DEFAULT '{}',
    created_at       timestamptz NOT NULL DEFAULT now(),
    updated_at       timestamptz NOT NULL DEFAULT now()
);
ALTER TABLE dataset_items ALTER COLUMN trajectory SET STORAGE EXTERNAL;

CREATE INDEX dataset_items_by_seq ON dataset_items (dataset_id, seq);
-- the same source trace is never added to a set twice (fill and import rely on this)
CREATE UNIQUE INDEX dataset_items_source ON dataset_items (dataset_id, source_trace_id)
    WHERE source_trace_id IS NOT NULL;
