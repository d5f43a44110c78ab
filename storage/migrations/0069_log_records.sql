-- OTLP log records (`/v1/logs`, gRPC LogsService): the GenAI instrumentations send message
-- content as events, which an SDK exports as log records. Each is kept exactly as received, so
-- it can be read again and re-exported: `body` is the serialized LogRecord (compressed, as
-- span bodies are: storage/compression.py) and `resource_id` its resource and scope, stored
-- once in `resources` as a span's are (the envelope bytes are the same). The other columns are
-- what reads look a record up by (storage/log_writer.py writes them).
--
-- Not time-partitioned: a record's own time, the key a re-send keeps, may lie before the oldest
-- partition or beyond the newest, where no partition would take it; when log records are kept
-- and dropped with their trace, they can follow its partition (`trace_keys.first_seen`).
CREATE TABLE log_records (
    project         text        NOT NULL,
    -- 32 lowercase hex digits, or '' for a record outside any trace (so is span_id)
    trace_id        text        NOT NULL,
    span_id         text        NOT NULL,
    -- time_unix_nano, else observed_time_unix_nano (both 0 ≤ t < 2^63)
    time_ns         bigint      NOT NULL,
    observed_ns     bigint      NOT NULL,
    severity_number integer     NOT NULL,
    severity_text   text        NOT NULL,
    -- LogRecord.event_name, else the `event.name` attribute ('' for neither)
    event_name      text        NOT NULL,
    resource_id     bigint      NOT NULL,
    -- blake2b-128 of the serialized record: with the ids and the time, what makes a re-sent
    -- record the one stored
    digest          bytea       NOT NULL,
    body            bytea       NOT NULL,
    received_at     timestamptz NOT NULL DEFAULT now(),
    -- also the index on (project, trace_id) that a trace's records are read by
    PRIMARY KEY (project, trace_id, span_id, time_ns, digest)
);
-- the bodies are compressed already: do not compress them again, keep them out of line
ALTER TABLE log_records ALTER COLUMN body SET STORAGE EXTERNAL;
