-- The session list (GET /api/v1/sessions, storage/session_reads.py): sessions come newest latest
-- turn first, so the list walks the project's runs that have a session id newest first and keeps
-- each session's latest turn. This index is that walk, in the list's order (start, then session
-- id, both descending), over the runs with a session only; the trace id it carries tells the
-- latest turn of a session from the others without a visit to the table. (One session's turns
-- are read through trajectories_session, migration 0014.)
--
-- On an existing store this builds the index over every trajectory with a session id, inside
-- the migration's transaction.
SET LOCAL maintenance_work_mem = '256MB';

CREATE INDEX trajectories_session_latest
    ON trajectories (project, start_ns DESC, session_id DESC) INCLUDE (trace_id)
    WHERE session_id IS NOT NULL;

-- The sessions with a failed turn (the list's `has_error` filter, either way), without a walk
-- of every run.
CREATE INDEX trajectories_session_failed ON trajectories (project, session_id)
    WHERE session_id IS NOT NULL AND (has_error OR derivation_error IS NOT NULL);

-- the partitions' copies of the index are named after it, as every partition index is
-- (migration 0021, trajhub_name_partition_indexes)
SELECT trajhub_name_partition_indexes(h.inhrelid::regclass)
FROM pg_inherits h WHERE h.inhparent = 'trajectories'::regclass;
