-- Trajectory summaries carry the run's service, session and user ids and short previews of its
-- input and output: filled by the trajectory worker (so the list never computes them), NULL
-- where unknown. Trajectories derived before this migration get them on re-derivation
-- (`trajhub rederive`); the service is copied from the trace list right away.
ALTER TABLE trajectories
    ADD COLUMN service        text,
    ADD COLUMN session_id     text,
    ADD COLUMN user_id        text,
    ADD COLUMN input_preview  text,
    ADD COLUMN output_preview text;

UPDATE trajectories j SET service = nullif(t.service_name, '')
FROM traces t WHERE t.project = j.project AND t.trace_id = j.trace_id;

CREATE INDEX trajectories_service ON trajectories (project, service);
CREATE INDEX trajectories_session ON trajectories (project, session_id);
CREATE INDEX trajectories_user ON trajectories (project, user_id);

-- Name filters (agent, tool, model) match case-insensitively: the GIN indexes are over the
-- lower-cased names, which is what the filters compare.
CREATE FUNCTION trajhub_lower_all(names text[]) RETURNS text[]
    LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
    AS $$ SELECT ARRAY(SELECT lower(n) FROM unnest(names) AS n) $$;
DROP INDEX trajectories_agents;
DROP INDEX trajectories_tools;
DROP INDEX trajectories_models;
CREATE INDEX trajectories_agents ON trajectories USING gin (trajhub_lower_all(agent_names));
CREATE INDEX trajectories_tools ON trajectories USING gin (trajhub_lower_all(tool_names));
CREATE INDEX trajectories_models ON trajectories USING gin (trajhub_lower_all(model_names));

-- The project list aggregates the trace list per project.
CREATE INDEX traces_by_project ON traces (project) INCLUDE (span_count, start_ns, end_ns);
