-- The revision history of each trajectory: one row per revision the trajectory worker stored,
-- with the status it reached and the figures a person compares across re-derivations.
--
-- Filled by triggers on `trajectories`, so neither the trajectory worker nor re-derivation has
-- to remember it: a new trajectory or a new revision adds a row; a status change of the same
-- revision (open -> final) updates that revision's row.
CREATE TABLE trajectory_revisions (
    project            text        NOT NULL,
    trace_id           text        NOT NULL,
    revision           integer     NOT NULL,
    status             text        NOT NULL,
    derived_at         timestamptz NOT NULL,
    normalizer_version text        NOT NULL,
    step_count         integer     NOT NULL,
    input_tokens       bigint      NOT NULL,
    output_tokens      bigint      NOT NULL,
    derivation_error   text,
    PRIMARY KEY (project, trace_id, revision),
    -- the history goes with its trajectory
    FOREIGN KEY (project, trace_id) REFERENCES trajectories (project, trace_id) ON DELETE CASCADE
);

CREATE FUNCTION record_trajectory_revision() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO trajectory_revisions (project, trace_id, revision, status, derived_at,
                                      normalizer_version, step_count, input_tokens,
                                      output_tokens, derivation_error)
    VALUES (NEW.project, NEW.trace_id, NEW.revision, NEW.status, NEW.derived_at,
            NEW.normalizer_version, NEW.step_count, NEW.input_tokens, NEW.output_tokens,
            NEW.derivation_error)
    ON CONFLICT (project, trace_id, revision) DO UPDATE SET
        status = EXCLUDED.status, derived_at = EXCLUDED.derived_at,
        normalizer_version = EXCLUDED.normalizer_version, step_count = EXCLUDED.step_count,
        input_tokens = EXCLUDED.input_tokens, output_tokens = EXCLUDED.output_tokens,
        derivation_error = EXCLUDED.derivation_error;
    RETURN NULL;
END
$$;

CREATE TRIGGER trajectory_inserted AFTER INSERT ON trajectories
    FOR EACH ROW EXECUTE FUNCTION record_trajectory_revision();
CREATE TRIGGER trajectory_revised AFTER UPDATE ON trajectories
    FOR EACH ROW
    WHEN (OLD.revision IS DISTINCT FROM NEW.revision OR OLD.status IS DISTINCT FROM NEW.status)
    EXECUTE FUNCTION record_trajectory_revision();

-- Trajectories stored before this migration start their history at their current revision.
INSERT INTO trajectory_revisions (project, trace_id, revision, status, derived_at,
                                  normalizer_version, step_count, input_tokens, output_tokens,
                                  derivation_error)
SELECT project, trace_id, revision, status, derived_at, normalizer_version, step_count,
       input_tokens, output_tokens, derivation_error
FROM trajectories;
