-- A trajectory's revision history keeps only the revisions that have been superseded; the
-- current revision is the trajectory row itself (storage/revisions.py reads both). Most traces
-- are derived once, and each used to write a history row that repeated its trajectory row and
-- was updated again when the trajectory became final: WAL, and a row, an index entry and a
-- trigger run per trajectory, for a history nobody reads (bench/README.md, "WAL").
--
-- A new revision now copies the one it replaces, as that revision last was (its status
-- included), into the history, in the trajectory's partition.
CREATE OR REPLACE FUNCTION record_trajectory_revision() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO trajectory_revisions (project, trace_id, revision, status, derived_at,
                                      normalizer_version, step_count, input_tokens,
                                      output_tokens, derivation_error, first_seen)
    VALUES (OLD.project, OLD.trace_id, OLD.revision, OLD.status, OLD.derived_at,
            OLD.normalizer_version, OLD.step_count, OLD.input_tokens, OLD.output_tokens,
            OLD.derivation_error, OLD.first_seen)
    ON CONFLICT (project, trace_id, revision, first_seen) DO UPDATE SET
        status = EXCLUDED.status, derived_at = EXCLUDED.derived_at,
        normalizer_version = EXCLUDED.normalizer_version, step_count = EXCLUDED.step_count,
        input_tokens = EXCLUDED.input_tokens, output_tokens = EXCLUDED.output_tokens,
        derivation_error = EXCLUDED.derivation_error;
    RETURN NULL;
END
$$;

DROP TRIGGER trajectory_inserted ON trajectories;
DROP TRIGGER trajectory_revised ON trajectories;
CREATE TRIGGER trajectory_revised AFTER UPDATE ON trajectories
    FOR EACH ROW
    WHEN (OLD.revision IS DISTINCT FROM NEW.revision)
    EXECUTE FUNCTION record_trajectory_revision();

-- On an existing store: the history rows of current revisions go (the trajectory row holds
-- them). One pass over the history, in the migration's transaction.
DELETE FROM trajectory_revisions r
USING trajectories t
WHERE r.project = t.project AND r.trace_id = t.trace_id AND r.first_seen = t.first_seen
  AND r.revision = t.revision;
