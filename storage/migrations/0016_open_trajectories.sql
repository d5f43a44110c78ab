-- Finalizing a trajectory (status open → final) was an UPDATE of a column the partial index
-- `trajectories_open` is defined on, so PostgreSQL could not do it in place (HOT): every final
-- trajectory was written again with a new entry in each of its dozen indexes, recomputing the
-- full-text and lower-cased-name expressions. Under load this cost PostgreSQL as much as
-- storing the trajectory in the first place.
--
-- The open trajectories now have a table of their own: derivation adds a row (the store's
-- upsert), finalizing deletes it and sets `status` in place, which no index refers to any
-- more; fillfactor leaves room on each page for that in-place update.
CREATE TABLE open_trajectories (
    project    text        NOT NULL,
    trace_id   text        NOT NULL,
    settle_at  timestamptz NOT NULL,
    root_ended boolean     NOT NULL,
    PRIMARY KEY (project, trace_id),
    FOREIGN KEY (project, trace_id) REFERENCES trajectories (project, trace_id) ON DELETE CASCADE
);
CREATE INDEX open_trajectories_by_settle ON open_trajectories (settle_at);

INSERT INTO open_trajectories (project, trace_id, settle_at, root_ended)
SELECT project, trace_id, settle_at, root_ended FROM trajectories WHERE status = 'open';

DROP INDEX trajectories_open;
ALTER TABLE trajectories SET (fillfactor = 80);
