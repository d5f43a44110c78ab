-- Retention: expired traces go with their spans, summaries, trajectories and revisions.
--
-- Per-project overrides of TRAJHUB_RETENTION_DAYS; `days = 0` keeps the project's data forever.
CREATE TABLE project_retention (
    project    text             PRIMARY KEY,
    days       double precision NOT NULL CHECK (days >= 0),
    updated_at timestamptz      NOT NULL DEFAULT now()
);

-- The sweep finds each project's oldest traces by when their spans last arrived, a batch at a
-- time, through this index: a batch costs what it deletes, not what the table holds.
CREATE INDEX traces_by_received ON traces (project, last_received_at);

-- A trace with changes waiting for derivation is still receiving spans: the sweep leaves it.
CREATE INDEX trace_changes_by_trace ON trace_changes (project, trace_id);
