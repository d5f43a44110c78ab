-- Online evaluation rules (declared in trajhub/records/rules.py, docs/rules.md): a
-- rule runs an evaluator on every trajectory of its project that becomes final, matches its
-- filter and falls in its sample.
CREATE TABLE rules (
    id                          bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    project                     text             NOT NULL,
    name                        text             NOT NULL,
    evaluator                   text             NOT NULL,
    config                      jsonb            NOT NULL DEFAULT '{}',
    expectations                jsonb,
    filter                      jsonb            NOT NULL DEFAULT '{}',
    sample_rate                 double precision NOT NULL CHECK (sample_rate BETWEEN 0 AND 1),
    enabled                     boolean          NOT NULL DEFAULT true,
    max_judge_calls_per_minute  integer          CHECK (max_judge_calls_per_minute > 0),
    -- the judge-call cap's current minute and its calls so far (storage/rules.py, judge_slot)
    window_start                timestamptz      NOT NULL DEFAULT '-infinity',
    window_calls                integer          NOT NULL DEFAULT 0,
    created_ns                  bigint           NOT NULL
        DEFAULT (extract(epoch FROM clock_timestamp()) * 1000000)::bigint * 1000,
    updated_ns                  bigint           NOT NULL
        DEFAULT (extract(epoch FROM clock_timestamp()) * 1000000)::bigint * 1000,
    UNIQUE (project, name)
);
-- what finalizing a trajectory joins (storage/derivation_store.py, finalize_settled): a
-- project's enabled rules; nothing to find when no rule is on
CREATE INDEX rules_enabled ON rules (project) WHERE enabled;

-- A backfill: a rule queued over the existing trajectories matching its filter.
CREATE TABLE rule_backfills (
    id           bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    rule_id      bigint  NOT NULL REFERENCES rules (id) ON DELETE CASCADE,
    total_count  integer NOT NULL,
    done_count   integer NOT NULL DEFAULT 0,
    created_ns   bigint  NOT NULL
        DEFAULT (extract(epoch FROM clock_timestamp()) * 1000000)::bigint * 1000
);

-- The durable queue of rule runs: one row per (rule, trajectory revision) waiting to run. A
-- worker claims rows with FOR UPDATE SKIP LOCKED, setting a claim token and a lease (the row's
-- next_attempt_at); the run's score is inserted and its row deleted in one transaction that
-- still finds the token, so a run killed mid-way runs again and scores once.
CREATE TABLE rule_runs (
    id               bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    rule_id          bigint      NOT NULL REFERENCES rules (id) ON DELETE CASCADE,
    project          text        NOT NULL,
    trace_id         text        NOT NULL,
    revision         integer     NOT NULL,
    backfill_id      bigint      REFERENCES rule_backfills (id) ON DELETE SET NULL,
    enqueued_at      timestamptz NOT NULL DEFAULT now(),
    next_attempt_at  timestamptz NOT NULL DEFAULT now(),
    -- failed attempts to reach a judge so far (backoff), and the last one's reason
    attempts         integer     NOT NULL DEFAULT 0,
    last_error       text,
    claim            uuid
);
CREATE INDEX rule_runs_due ON rule_runs (next_attempt_at, id);
CREATE INDEX rule_runs_by_rule ON rule_runs (rule_id);

-- a rule's verdicts name it
ALTER TABLE scores ADD COLUMN rule_id bigint;
