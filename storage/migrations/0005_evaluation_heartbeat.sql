-- When an evaluation last made progress: a `running` evaluation that stops making progress
-- (its server was killed) is marked failed by the next server that starts.
ALTER TABLE evaluations ADD COLUMN updated_at timestamptz NOT NULL DEFAULT now();
