-- Raw spans, stored losslessly.
--
-- `resources` holds each distinct (resource, instrumentation scope) pair once, as a serialized
-- OTLP ResourceSpans envelope whose single ScopeSpans has no spans: the resource attributes,
-- dropped count and schema_url, and the scope name, version, attributes and schema_url. Its id
-- is a hash of those bytes, so writers on any process agree on it without a round trip.
CREATE TABLE resources (
    id   bigint PRIMARY KEY,
    body bytea  NOT NULL
);

-- One row per (project, trace, span). `body` is the span exactly as received: a serialized OTLP
-- Span (format 1) or the Coze Loop native UploadSpan JSON (format 2). The other columns are
-- copies of what queries filter and sort on. `attributes` holds the span's short scalar
-- attributes (for attribute filters); the full set is in `body`.
CREATE TABLE spans (
    project        text     NOT NULL,
    trace_id       text     NOT NULL,
    span_id        text     NOT NULL,
    parent_span_id text     NOT NULL,
    name           text     NOT NULL,
    kind           smallint NOT NULL,
    start_ns       bigint   NOT NULL,
    end_ns         bigint   NOT NULL,
    status_code    smallint NOT NULL,
    service_name   text     NOT NULL,
    resource_id    bigint,
    format         smallint NOT NULL,
    attributes     jsonb    NOT NULL,
    body           bytea    NOT NULL,
    received_at    timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (project, trace_id, span_id)
);
-- pglz compression of values over ~2 KB is the ingest bottleneck (bench/README.md, "Decoding and
-- storing spans"): store large values out of line, uncompressed.
ALTER TABLE spans ALTER COLUMN body SET STORAGE EXTERNAL;
ALTER TABLE spans ALTER COLUMN attributes SET STORAGE EXTERNAL;
ALTER TABLE resources ALTER COLUMN body SET STORAGE EXTERNAL;

-- Traces that received spans and wait for their summary and trajectory to be (re)derived.
-- Ingest only ever inserts here, so it never waits on a row a derivation worker holds.
CREATE TABLE trace_changes (
    id          bigserial   PRIMARY KEY,
    project     text        NOT NULL,
    trace_id    text        NOT NULL,
    received_at timestamptz NOT NULL DEFAULT now()
);

-- One row per trace: what the trace list shows, kept by the derivation workers.
CREATE TABLE traces (
    project         text     NOT NULL,
    trace_id        text     NOT NULL,
    root_span_id    text     NOT NULL,
    root_name       text     NOT NULL,
    service_name    text     NOT NULL,
    start_ns        bigint   NOT NULL,
    end_ns          bigint   NOT NULL,
    span_count      integer  NOT NULL,
    error_count     integer  NOT NULL,
    last_received_at timestamptz NOT NULL,
    PRIMARY KEY (project, trace_id)
);
CREATE INDEX traces_by_start ON traces (project, start_ns DESC, trace_id DESC);

-- Uploaded files referenced by Coze Loop spans' object_storage (cozeloop-go, inputs over 1 MiB).
CREATE TABLE files (
    project    text  NOT NULL,
    key        text  NOT NULL,
    content    bytea NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (project, key)
);
