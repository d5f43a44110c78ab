-- Large trajectories in pages (docs/large-traces.md): a trajectory of many steps is
-- also stored as its playback order (chunk -1), its head (chunk 0: the document without its
-- steps) and its steps in chunks of 500 (chunk k ≥ 1), each compressed like the document
-- (storage/compression.py). A page of steps or events then reads the head and a chunk or two,
-- not the whole document. The derivation rewrites a trajectory's chunks in the transaction
-- that stores its document (storage/derivation_store.py), so the two always agree.
-- Like scores (migration 0035) the table is not partitioned: retention deletes a trajectory's
-- chunks with it (storage/retention.py), by project and trace id.
CREATE TABLE trajectory_chunks (
    project  text    NOT NULL,
    trace_id text    NOT NULL,
    chunk    integer NOT NULL,
    body     bytea   NOT NULL,
    PRIMARY KEY (project, trace_id, chunk)
);
-- the bodies are compressed already (pglz would only cost: migration 0001)
ALTER TABLE trajectory_chunks ALTER COLUMN body SET STORAGE EXTERNAL;
