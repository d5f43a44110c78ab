-- Monitoring alerts (declared in trajhub/records/alerts.py, docs/alerts.md): a rule compares an
-- aggregate of a project's final runs over a window (read from rollup_contributions, and
-- scores for a score's mean) with a warning and an alert threshold; each change of its state is
-- an event, and each event is one webhook notification on a durable queue.
--
-- These tables are small (a few rows per project) and coordinator-local on Citus: they are not
-- distributed, and no statement joins them with the trace-keyed tables (the aggregate is read
-- in a statement of its own, storage/alert_reads.py).
CREATE TABLE alert_rules (
    id                  bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    project             text             NOT NULL,
    name                text             NOT NULL,
    metric              text             NOT NULL,
    -- the score whose mean metric `score_mean` reads (NULL for the other metrics)
    score_name          text,
    -- 'above': a value over a threshold breaches it; 'below': a value under it
    condition           text             NOT NULL CHECK (condition IN ('above', 'below')),
    warning_threshold   double precision,
    alert_threshold     double precision NOT NULL,
    window_seconds      integer          NOT NULL CHECK (window_seconds > 0),
    -- run_name, agent, model, release: what rollup_contributions filters on
    filter              jsonb            NOT NULL DEFAULT '{}',
    webhook_url         text             NOT NULL,
    -- the HMAC key of the notifications' signature; never served after creation
    secret              text             NOT NULL,
    enabled             boolean          NOT NULL DEFAULT true,
    muted               boolean          NOT NULL DEFAULT false,
    state               text             NOT NULL DEFAULT 'resolved'
        CHECK (state IN ('resolved', 'warning', 'firing')),
    -- the last evaluation: its value (NULL: nothing to measure) and when
    last_value          double precision,
    evaluated_ns        bigint,
    -- the evaluation queue: due when next_evaluation_at has passed; a claim sets a fresh
    -- token and moves it to the lease's end, and the evaluation's end one interval on
    next_evaluation_at  timestamptz      NOT NULL DEFAULT now(),
    claim               uuid,
    created_ns          bigint           NOT NULL
        DEFAULT (extract(epoch FROM clock_timestamp()) * 1000000)::bigint * 1000,
    updated_ns          bigint           NOT NULL
        DEFAULT (extract(epoch FROM clock_timestamp()) * 1000000)::bigint * 1000,
    UNIQUE (project, name)
);
CREATE INDEX alert_rules_due ON alert_rules (next_evaluation_at) WHERE enabled AND NOT muted;

-- A rule's history: one row per change of state, and its webhook notification's delivery (the
-- durable queue: a pending row is due at next_attempt_at; a claim sets a token and a lease,
-- and only the claimant's token marks it delivered or failed).
CREATE TABLE alert_events (
    id                  bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    rule_id             bigint           NOT NULL REFERENCES alert_rules (id) ON DELETE CASCADE,
    project             text             NOT NULL,
    -- the receiver's deduplication key: the same on every attempt of this notification
    delivery_id         uuid             NOT NULL UNIQUE,
    state               text             NOT NULL,
    previous_state      text             NOT NULL,
    value               double precision,
    threshold           double precision,
    window_start_ns     bigint           NOT NULL,
    window_end_ns       bigint           NOT NULL,
    -- the notification's JSON, made once, so that every attempt sends (and signs) the same bytes
    body                text             NOT NULL,
    created_ns          bigint           NOT NULL
        DEFAULT (extract(epoch FROM clock_timestamp()) * 1000000)::bigint * 1000,
    delivery            text             NOT NULL DEFAULT 'pending'
        CHECK (delivery IN ('pending', 'delivered', 'failed')),
    attempts            integer          NOT NULL DEFAULT 0,
    last_error          text,
    next_attempt_at     timestamptz      NOT NULL DEFAULT now(),
    claim               uuid,
    delivered_ns        bigint
);
CREATE INDEX alert_events_by_rule ON alert_events (rule_id, id);
CREATE INDEX alert_events_due ON alert_events (next_attempt_at, id) WHERE delivery = 'pending';
