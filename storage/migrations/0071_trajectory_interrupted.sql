-- A run that LangGraph's interrupt() ended, waiting for a person (docs/trajectory-rules.md,
-- "Interrupted runs"): written from the derivation's summary, filtered by the trajectory list,
-- rules and sessions. Rows derived before normalizer 1.5.0 read false until re-derived.
ALTER TABLE trajectories ADD COLUMN interrupted boolean NOT NULL DEFAULT false;
