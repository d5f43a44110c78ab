-- API keys: each grants one scope (ingest, read or admin) in one project.
--
-- Only a SHA-256 digest of the key is stored; the key itself is shown once, when it is created.
-- `key_id` is the short public part of the key (`thk_<key_id>_<secret>`): it names the key in
-- listings and finds its row, and the digest of the whole key is then compared in constant time.
-- A revoked key keeps its row, so an answer can say that the key was revoked.
CREATE TABLE api_keys (
    key_id      text        PRIMARY KEY,
    project     text        NOT NULL,
    scope       text        NOT NULL CHECK (scope IN ('ingest', 'read', 'admin')),
    name        text        NOT NULL DEFAULT '',
    digest      bytea       NOT NULL,
    created_at  timestamptz NOT NULL DEFAULT now(),
    revoked_at  timestamptz
);

CREATE INDEX api_keys_by_project ON api_keys (project, created_at);
