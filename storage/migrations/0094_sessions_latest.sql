-- The session list pages the sessions' rows by their latest turn when its filters are all read
-- from the rows (storage/session_reads.py, `_from_rows`): a page reads its sessions from the
-- top of this index, testing each row as it is read, not the filters' whole sets first.
CREATE INDEX sessions_latest ON sessions (project, last_start_ns DESC, session_id DESC);
