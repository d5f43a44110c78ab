-- The session list's user and failure filters read their sets from the sessions' rows
-- (storage/session_reads.py, `_Conditions.having`): across a project, when the list first
-- reads the whole set, these indexes hold just the rows that belong to it.
CREATE INDEX session_users_by_user ON session_users (project, user_id) WHERE turns > 0;
CREATE INDEX sessions_failed ON sessions (project, session_id) WHERE failed_turns > 0;
