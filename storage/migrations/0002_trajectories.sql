-- Derived trajectories: the document exactly as served (json keeps its bytes), the per-span
-- explanation, and the columns the trajectory list filters and sorts on.
CREATE TABLE trajectories (
    project            text        NOT NULL,
    trace_id           text        NOT NULL,
    status             text        NOT NULL CHECK (status IN ('open', 'final')),
    revision           integer     NOT NULL,
    normalizer_version text        NOT NULL,
    derived_at         timestamptz NOT NULL DEFAULT now(),
    -- final no earlier than this (last span received + settle period)
    settle_at          timestamptz NOT NULL,
    root_ended         boolean     NOT NULL,
    document           json,
    explanation        json,
    warnings           text[]      NOT NULL DEFAULT '{}',
    derivation_error   text,
    framework          text        NOT NULL DEFAULT '',
    conventions        text[]      NOT NULL DEFAULT '{}',
    root_name          text        NOT NULL DEFAULT '',
    root_input         text        NOT NULL DEFAULT '',
    root_output        text        NOT NULL DEFAULT '',
    agent_names        text[]      NOT NULL DEFAULT '{}',
    tool_names         text[]      NOT NULL DEFAULT '{}',
    model_names        text[]      NOT NULL DEFAULT '{}',
    start_ns           bigint      NOT NULL DEFAULT 0,
    duration_ms        bigint      NOT NULL DEFAULT 0,
    step_count         integer     NOT NULL DEFAULT 0,
    model_step_count   integer     NOT NULL DEFAULT 0,
    tool_step_count    integer     NOT NULL DEFAULT 0,
    input_tokens       bigint      NOT NULL DEFAULT 0,
    output_tokens      bigint      NOT NULL DEFAULT 0,
    failed_model_steps integer     NOT NULL DEFAULT 0,
    failed_tool_steps  integer     NOT NULL DEFAULT 0,
    has_error          boolean     NOT NULL DEFAULT false,
    PRIMARY KEY (project, trace_id)
);
ALTER TABLE trajectories ALTER COLUMN document SET STORAGE EXTERNAL;
ALTER TABLE trajectories ALTER COLUMN explanation SET STORAGE EXTERNAL;

CREATE INDEX trajectories_by_start ON trajectories (project, start_ns DESC, trace_id DESC);
CREATE INDEX trajectories_open ON trajectories (settle_at) WHERE status = 'open';
CREATE INDEX trajectories_agents ON trajectories USING gin (agent_names);
CREATE INDEX trajectories_tools ON trajectories USING gin (tool_names);
CREATE INDEX trajectories_models ON trajectories USING gin (model_names);
