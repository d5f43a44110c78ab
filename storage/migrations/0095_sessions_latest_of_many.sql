-- The sessions of more than one turn, by their latest turn: the session list's turn-count
-- filter pages these (storage/session_reads.py, `_from_rows`), which may be few among many
-- sessions of one turn, instead of reading every row.
CREATE INDEX sessions_latest_of_many ON sessions (project, last_start_ns DESC, session_id DESC)
    WHERE turns > 1;
