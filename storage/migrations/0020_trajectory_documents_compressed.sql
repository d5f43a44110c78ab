-- A trajectory's document and explanation are mostly a second copy of its spans' payloads,
-- stored uncompressed (STORAGE EXTERNAL: PostgreSQL's pglz cost more CPU than it saved, and the
-- embedded PostgreSQL has no lz4). Writing them was much of the WAL of storing a trajectory and
-- made `trajectories` as big as `spans` (bench/README.md, "WAL").
--
-- They are now stored zlib-compressed (level 1, by the deriving process: the ingest or
-- derivation worker, outside the transaction; bench/README.md, "Compression"), as bytea in
-- `document` and
-- `explanation`; readers inflate them (storage/stored_documents.py), so the API serves the same
-- bytes as before. The text columns are renamed, not rewritten, so this migration is instant
-- on any store: trajectories stored before it keep their text in `document_text` and
-- `explanation_text` (read as before) until they are derived again, which moves them to the
-- compressed form.
ALTER TABLE trajectories RENAME COLUMN document TO document_text;
ALTER TABLE trajectories RENAME COLUMN explanation TO explanation_text;
ALTER TABLE trajectories ADD COLUMN document bytea, ADD COLUMN explanation bytea;
-- already compressed: PostgreSQL moves them out of line as they are, without trying pglz again
ALTER TABLE trajectories ALTER COLUMN document SET STORAGE EXTERNAL,
                         ALTER COLUMN explanation SET STORAGE EXTERNAL;
