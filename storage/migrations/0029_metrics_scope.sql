-- API keys may have the scope `metrics`: it scrapes /metrics and nothing else (service/auth.py
-- says why it is apart from the others). The constraint is the one 0012_api_keys.sql declared
-- inline, which PostgreSQL named api_keys_scope_check.
ALTER TABLE api_keys DROP CONSTRAINT api_keys_scope_check;
ALTER TABLE api_keys ADD CONSTRAINT api_keys_scope_check
    CHECK (scope IN ('ingest', 'read', 'admin', 'metrics'));
