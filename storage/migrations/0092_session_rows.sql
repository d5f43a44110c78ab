-- Sessions as rows (docs/monitoring.md, "Sessions"): the figures of each session's final turns,
-- kept as runs become final, exactly as the hourly rollups are (migration 0080), instead of
-- aggregated from every turn when read. A read adds the session's open turns, which are few
-- (storage/session_reads.py). storage/session_rows.py writes them.
--
-- A final run's contribution (rollup_contributions) also records what it added to its
-- session, so that a re-derivation, retention or a change of its scores takes back exactly
-- that: its session, user, whether it failed, and its model calls' billable tokens per model.
ALTER TABLE rollup_contributions
    ADD COLUMN session_id  text,
    ADD COLUMN user_id     text,
    ADD COLUMN failed_turn boolean NOT NULL DEFAULT false,
    ADD COLUMN usage_sums  jsonb   NOT NULL DEFAULT '{}';

-- An open run's session, so that a session's read finds its open turns among the project's
-- few open runs by an index, not by reading each open run's trajectory.
ALTER TABLE open_trajectories ADD COLUMN session_id text;
UPDATE open_trajectories o SET session_id = t.session_id FROM trajectories t
WHERE t.project = o.project AND t.trace_id = o.trace_id AND t.session_id IS NOT NULL;
CREATE INDEX open_trajectories_session ON open_trajectories (project, session_id)
    WHERE session_id IS NOT NULL;

-- What a session's row adds up of each run (trajhub_usage_sums below; filled for the runs of a
-- session, '{}' for the others); the derivation writes it from now on.
ALTER TABLE trajectories ADD COLUMN usage_sums jsonb NOT NULL DEFAULT '{}';

-- A recorded token count as pricing reads it (evaluators/pricing.py `_whole`): the whole part
-- of a JSON number, 0 for anything else.
CREATE FUNCTION trajhub_whole(v jsonb) RETURNS numeric
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    AS $$ SELECT CASE WHEN jsonb_typeof(v) = 'number' THEN trunc(v::text::numeric) ELSE 0 END $$;

-- A run's token usage per model (the `model_usage` column, normalizers/playback.py) as
-- {model: [calls, input, output, cache read, cache write, reasoning]}: each call's tokens made
-- billable (evaluators/pricing.py `billable`: the inclusive totals) and summed. A model priced
-- at one rate per token costs what these sums cost; a row stored before calls were kept
-- counts as one call of its totals, as pricing reads it. The derivation computes the same in
-- Python (`usage_sums`) for the runs it stores; this fills the rows stored before.
CREATE FUNCTION trajhub_usage_sums(usage jsonb) RETURNS jsonb
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    AS $$
    SELECT coalesce(jsonb_object_agg(s.model, jsonb_build_array(s.calls, s.i, s.o, s.r, s.w, s.x)),
                    '{}')
    FROM (
        SELECT m.key AS model, count(b.i) AS calls, coalesce(sum(b.i), 0) AS i,
               coalesce(sum(b.o), 0) AS o, coalesce(sum(b.r), 0) AS r, coalesce(sum(b.w), 0) AS w,
               coalesce(sum(b.x), 0) AS x
        FROM jsonb_each(CASE WHEN jsonb_typeof(usage) = 'object' THEN usage ELSE '{}' END) m
        LEFT JOIN LATERAL (
            SELECT CASE WHEN c.r + c.w > c.i THEN c.i + c.r + c.w ELSE c.i END AS i,
                   CASE WHEN c.x > c.o THEN c.o + c.x ELSE c.o END AS o, c.r, c.w, c.x
            FROM (SELECT greatest(trajhub_whole(e -> 0), 0) AS i,
                         greatest(trajhub_whole(e -> 1), 0) AS o,
                         greatest(trajhub_whole(e -> 2), 0) AS r,
                         greatest(trajhub_whole(e -> 3), 0) AS w,
                         greatest(trajhub_whole(e -> 4), 0) AS x
                  FROM jsonb_array_elements(CASE WHEN jsonb_typeof(m.value -> 'calls') = 'array'
                                                 THEN m.value -> 'calls'
                                                 ELSE jsonb_build_array(jsonb_build_array(
                                                     m.value -> 'input_tokens',
                                                     m.value -> 'output_tokens',
                                                     m.value -> 'cached_input_tokens',
                                                     m.value -> 'cache_write_tokens',
                                                     m.value -> 'reasoning_tokens', 0)) END) AS e
                  WHERE jsonb_typeof(e) = 'array' AND jsonb_array_length(e) = 6) c
        ) b ON true
        WHERE jsonb_typeof(m.value) = 'object'
        GROUP BY m.key
    ) s
    $$;

-- One row per project and session: the figures of its final turns. Counts and sums add and
-- subtract; the first turn (by start, then trace id), the latest turn (the same order,
-- reversed) and the latest end only move one way as turns are added, and are read again from
-- the remaining final turns when a turn holding one is taken back (`stale` marks that for the
-- rest of the transaction). A row whose turns fell to 0 stays, holding zeros and no turns.
CREATE TABLE sessions (
    project              text    NOT NULL,
    session_id           text    NOT NULL,
    turns                bigint  NOT NULL,
    failed_turns         bigint  NOT NULL,
    input_tokens         bigint  NOT NULL,
    output_tokens        bigint  NOT NULL,
    first_start_ns       bigint,
    first_trace_id       text,
    first_input_preview  text,
    last_start_ns        bigint,
    last_trace_id        text,
    -- the latest turn was interrupted
    waiting              boolean,
    end_ns               bigint,
    stale                boolean NOT NULL DEFAULT false,
    PRIMARY KEY (project, session_id)
);
CREATE INDEX sessions_stale ON sessions (project, session_id) WHERE stale;

-- How many of a session's final turns recorded each user id.
CREATE TABLE session_users (
    project     text    NOT NULL,
    session_id  text    NOT NULL,
    user_id     text    NOT NULL,
    turns       bigint  NOT NULL,
    PRIMARY KEY (project, session_id, user_id)
);

-- A session's final turns' model calls per model: how many, and their billable tokens summed
-- (trajhub_usage_sums), which the summary's cost is priced from.
CREATE TABLE session_models (
    project             text    NOT NULL,
    session_id          text    NOT NULL,
    model               text    NOT NULL,
    calls               bigint  NOT NULL,
    input_tokens        bigint  NOT NULL,
    output_tokens       bigint  NOT NULL,
    cache_read_tokens   bigint  NOT NULL,
    cache_write_tokens  bigint  NOT NULL,
    reasoning_tokens    bigint  NOT NULL,
    PRIMARY KEY (project, session_id, model)
);

-- Per score name, over a session's final turns: how many have a number as their latest
-- whole-run score of that name, and those numbers' sum.
CREATE TABLE session_scores (
    project     text     NOT NULL,
    session_id  text     NOT NULL,
    name        text     NOT NULL,
    scores      bigint   NOT NULL,
    total       numeric  NOT NULL,
    PRIMARY KEY (project, session_id, name)
);

-- A session's remaining final turns, when a take-back removed its first or latest turn or its
-- latest end (storage/session_rows.py `refresh`): each one index probe.
CREATE INDEX rollup_contributions_session ON rollup_contributions (project, session_id, start_ns, trace_id)
    WHERE session_id IS NOT NULL;
CREATE INDEX rollup_contributions_session_end
    ON rollup_contributions (project, session_id, (start_ns + duration_ms * 1000000))
    WHERE session_id IS NOT NULL;

-- The trajectories already final count from now on, as they stand.
UPDATE trajectories SET usage_sums = trajhub_usage_sums(model_usage) WHERE session_id IS NOT NULL;

UPDATE rollup_contributions c
SET session_id = t.session_id, user_id = t.user_id,
    failed_turn = t.has_error OR t.derivation_error IS NOT NULL,
    usage_sums = t.usage_sums
FROM trajectories t
WHERE t.project = c.project AND t.trace_id = c.trace_id AND t.status = 'final';

INSERT INTO sessions (project, session_id, turns, failed_turns, input_tokens, output_tokens,
                      first_start_ns, first_trace_id, first_input_preview, last_start_ns,
                      last_trace_id, waiting, end_ns)
SELECT t.project, t.session_id, count(*),
       count(*) FILTER (WHERE t.has_error OR t.derivation_error IS NOT NULL),
       sum(t.input_tokens), sum(t.output_tokens),
       (array_agg(t.start_ns ORDER BY t.start_ns, t.trace_id))[1],
       (array_agg(t.trace_id ORDER BY t.start_ns, t.trace_id))[1],
       (array_agg(t.input_preview ORDER BY t.start_ns, t.trace_id))[1],
       (array_agg(t.start_ns ORDER BY t.start_ns DESC, t.trace_id DESC))[1],
       (array_agg(t.trace_id ORDER BY t.start_ns DESC, t.trace_id DESC))[1],
       (array_agg(t.interrupted ORDER BY t.start_ns DESC, t.trace_id DESC))[1],
       max(t.start_ns + t.duration_ms::bigint * 1000000)
FROM trajectories t JOIN rollup_contributions c ON c.project = t.project AND c.trace_id = t.trace_id
WHERE t.status = 'final' AND t.session_id IS NOT NULL
GROUP BY t.project, t.session_id;

INSERT INTO session_users
SELECT project, session_id, user_id, count(*) FROM rollup_contributions
WHERE session_id IS NOT NULL AND user_id IS NOT NULL
GROUP BY project, session_id, user_id;

INSERT INTO session_models
SELECT c.project, c.session_id, u.key, sum((u.value ->> 0)::bigint), sum((u.value ->> 1)::bigint),
       sum((u.value ->> 2)::bigint), sum((u.value ->> 3)::bigint), sum((u.value ->> 4)::bigint),
       sum((u.value ->> 5)::bigint)
FROM rollup_contributions c, jsonb_each(c.usage_sums) u
WHERE c.session_id IS NOT NULL
GROUP BY c.project, c.session_id, u.key;

INSERT INTO session_scores
SELECT c.project, c.session_id, l.name, count(*), sum(l.number_value::numeric)
FROM (SELECT DISTINCT ON (s.project, s.trace_id, s.name) s.project, s.trace_id, s.name,
             s.number_value
      FROM scores s WHERE s.step_id IS NULL
      ORDER BY s.project, s.trace_id, s.name, s.id DESC) l
JOIN rollup_contributions c ON c.project = l.project AND c.trace_id = l.trace_id
WHERE c.session_id IS NOT NULL AND l.number_value IS NOT NULL
GROUP BY c.project, c.session_id, l.name;

-- On a Citus coordinator (deploy/SCALING.md, section 3), placed as monitoring's rollups are
-- (migration 0091): reference tables, so that the statements that correct them may read the
-- distributed contributions.
DO $$
BEGIN
    IF NOT EXISTS (SELECT 1 FROM pg_extension WHERE extname = 'citus') THEN
        RETURN;
    END IF;
    SET LOCAL citus.multi_shard_modify_mode TO 'sequential';
    PERFORM create_reference_table('sessions');
    PERFORM create_reference_table('session_users');
    PERFORM create_reference_table('session_models');
    PERFORM create_reference_table('session_scores');
END
$$;
