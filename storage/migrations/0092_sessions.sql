-- Sessions as rows (docs/sessions.md): per project and session id, the figures of its turns
-- (the trajectories sharing the session id), kept as turns are stored, become final, are
-- scored and expire, instead of aggregated from the turns when read. storage/session_rows.py
-- writes them; storage/session_reads.py reads them.
--
-- On Citus: the four tables are distributed by project (every write and read names one),
-- like run_rollups; their keys begin with it.

-- The session's figures. Over every turn (open or final), as the session summary shows them:
-- turns, open and failed turns, tokens, the users (user id → its turns), the first turn
-- (start, trace id, input preview), the latest (start, trace id, interrupted: `waiting`) and
-- the turn ending last (end, trace id). Over the final turns only, the figures of
-- monitoring's rollups (migration 0080): runs, failed runs, latencies by bucket, duration,
-- tokens and money. Sums grow and shrink by addition; the first, latest and last-ending turn
-- are those of the turns added, and are looked up again among the session's turns only when
-- the one holding them is taken back. A session whose turns are all gone keeps a row of zeros
-- (turns = 0, no first or latest turn): the reads skip it.
CREATE TABLE sessions (
    project              text     NOT NULL,
    session_id           text     NOT NULL,
    turns                bigint   NOT NULL,
    open_turns           bigint   NOT NULL,
    -- turns with has_error or a derivation error (the summary's failed_turns)
    failed_turns         bigint   NOT NULL,
    turn_input_tokens    bigint   NOT NULL,
    turn_output_tokens   bigint   NOT NULL,
    -- user id → how many turns recorded it (only counts above 0 are kept)
    user_counts          jsonb    NOT NULL,
    first_start_ns       bigint,
    first_trace_id       text,
    first_input_preview  text,
    last_start_ns        bigint,
    last_trace_id        text,
    last_interrupted     boolean,
    -- the latest end (start + duration) and its turn (the largest trace id among equal ends)
    end_ns               bigint,
    end_trace_id         text,
    -- the final turns, as run_rollups counts runs
    runs                 bigint   NOT NULL,
    failed_runs          bigint   NOT NULL,
    latency_counts       bigint[] NOT NULL,
    duration_ms          bigint   NOT NULL,
    input_tokens         bigint   NOT NULL,
    output_tokens        bigint   NOT NULL,
    cache_read_tokens    bigint   NOT NULL,
    cache_write_tokens   bigint   NOT NULL,
    reasoning_tokens     bigint   NOT NULL,
    usd                  numeric  NOT NULL,
    PRIMARY KEY (project, session_id)
);
-- the list's walk: the latest turn first (ties by session id, descending)
CREATE INDEX sessions_latest ON sessions (project, last_start_ns DESC, session_id DESC)
    WHERE turns > 0;
-- the same walk over the sessions with a failed turn, or whose latest turn waits: the list's
-- has_error=true and waiting=true without a walk of every session
CREATE INDEX sessions_failed ON sessions (project, last_start_ns DESC, session_id DESC)
    WHERE turns > 0 AND failed_turns > 0;
CREATE INDEX sessions_waiting ON sessions (project, last_start_ns DESC, session_id DESC)
    WHERE turns > 0 AND last_interrupted;
-- min_turns: the few sessions of many turns, without a walk of every session
CREATE INDEX sessions_turns ON sessions (project, turns) WHERE turns > 1;

-- The scores of a session's turns, per score name: as run_rollup_scores counts them, the
-- numeric values of its final turns (`scores`, `total`); and, as the summary's means take
-- them, each turn's latest whole-run score of the name when it is a number, over every turn
-- (`turns`, `turn_total`; the mean is turn_total / turns). Values are summed as exact decimals
-- (a number's shortest text), so any order of corrections ends at the same sums.
CREATE TABLE session_scores (
    project      text     NOT NULL,
    session_id   text     NOT NULL,
    name         text     NOT NULL,
    scores       bigint   NOT NULL,
    total        numeric  NOT NULL,
    turns        bigint   NOT NULL,
    turn_total   numeric  NOT NULL,
    PRIMARY KEY (project, session_id, name)
);
-- sort=score:<name>: the sessions with a mean of that score, highest first
CREATE INDEX session_scores_mean
    ON session_scores (project, name, ((turn_total / turns)::float8) DESC, session_id DESC)
    WHERE turns > 0;

-- The model calls of a session's turns (normalizers.playback.model_usage: per model, each call
-- [input, output, cache read, cache write, reasoning tokens, start ms]; a turn stored before
-- calls were kept counts one call of its totals), each distinct call with how many turns made
-- it. The summary's cost is priced when read, as it priced the turns' calls: from the sums of
-- session_models for a model whose calls cost what their summed tokens cost (or that has no
-- price), and from these calls for the others (a price by size or by date).
CREATE TABLE session_calls (
    project      text     NOT NULL,
    session_id   text     NOT NULL,
    model        text     NOT NULL,
    call         jsonb    NOT NULL,
    calls        bigint   NOT NULL,
    PRIMARY KEY (project, session_id, model, call)
);

-- Per model, the session's calls (those of six counts, as pricing reads them) and their
-- billable tokens summed (evaluators.pricing's `billable` of each call: the input counting the
-- cached tokens, the output the reasoning ones).
CREATE TABLE session_models (
    project             text     NOT NULL,
    session_id          text     NOT NULL,
    model               text     NOT NULL,
    calls               bigint   NOT NULL,
    input_tokens        numeric  NOT NULL,
    output_tokens       numeric  NOT NULL,
    cache_read_tokens   numeric  NOT NULL,
    cache_write_tokens  numeric  NOT NULL,
    reasoning_tokens    numeric  NOT NULL,
    PRIMARY KEY (project, session_id, model)
);

-- A stored count as pricing reads it: a number's whole part (toward zero), anything else 0.
CREATE FUNCTION trajhub_whole(v jsonb) RETURNS numeric
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    AS $$ SELECT CASE WHEN jsonb_typeof(v) = 'number' THEN trunc(v::text::numeric) ELSE 0 END $$;

-- A call's billable tokens (evaluators.pricing `billable`): [input, output, cache read, cache
-- write, reasoning], each at least 0; an input below its cached tokens left them out, so they
-- are added to it, and an output below its reasoning tokens likewise.
CREATE FUNCTION trajhub_billable(call jsonb) RETURNS numeric[]
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    AS $$ SELECT ARRAY[CASE WHEN r + w > i THEN i + r + w ELSE i END,
                       CASE WHEN z > o THEN o + z ELSE o END, r, w, z]
          FROM (SELECT greatest(trajhub_whole(call -> 0), 0) AS i,
                       greatest(trajhub_whole(call -> 1), 0) AS o,
                       greatest(trajhub_whole(call -> 2), 0) AS r,
                       greatest(trajhub_whole(call -> 3), 0) AS w,
                       greatest(trajhub_whole(call -> 4), 0) AS z) c $$;

-- Counts by key (a JSON object of integers) added key by key; a key whose count falls to 0
-- goes. Immutable, so Citus accepts it in ON CONFLICT … DO UPDATE SET.
CREATE FUNCTION trajhub_add_keyed(a jsonb, b jsonb) RETURNS jsonb
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    AS $$ SELECT coalesce(jsonb_object_agg(k, n), '{}')
          FROM (SELECT k, sum(v::bigint) AS n
                FROM (SELECT * FROM jsonb_each_text(coalesce(a, '{}'))
                      UNION ALL SELECT * FROM jsonb_each_text(coalesce(b, '{}'))) e(k, v)
                GROUP BY k HAVING sum(v::bigint) <> 0) s $$;

-- A turn's model calls (its model_usage), one row per call: (model, call).
CREATE FUNCTION trajhub_model_calls(usage jsonb) RETURNS TABLE (model text, call jsonb)
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    AS $$ SELECT m.key, c.call
          FROM jsonb_each(CASE WHEN jsonb_typeof(usage) = 'object' THEN usage
                               ELSE '{}' END) m
          CROSS JOIN LATERAL jsonb_array_elements(
              CASE WHEN jsonb_typeof(m.value -> 'calls') = 'array' THEN m.value -> 'calls'
                   ELSE jsonb_build_array(jsonb_build_array(
                       coalesce(m.value -> 'input_tokens', '0'),
                       coalesce(m.value -> 'output_tokens', '0'),
                       coalesce(m.value -> 'cached_input_tokens', '0'),
                       coalesce(m.value -> 'cache_write_tokens', '0'),
                       coalesce(m.value -> 'reasoning_tokens', '0'), 0)) END) c(call)
          WHERE jsonb_typeof(m.value) = 'object' $$;

-- The list walked these to find sessions among the trajectories; it walks the rows now, so
-- storing a trajectory no longer keeps them. (trajectories_session, a session's turns in
-- order, stays.)
DROP INDEX trajectories_session_latest;
DROP INDEX trajectories_session_failed;

-- The sessions of the trajectories already stored, as they stand.
SET LOCAL maintenance_work_mem = '256MB';

INSERT INTO sessions
SELECT project, session_id, count(*), count(*) FILTER (WHERE status = 'open'),
       count(*) FILTER (WHERE has_error OR derivation_error IS NOT NULL),
       sum(input_tokens), sum(output_tokens),
       coalesce((SELECT jsonb_object_agg(u.user_id, u.n) FROM
                 (SELECT t2.user_id, count(*) AS n FROM trajectories t2
                  WHERE t2.project = t.project AND t2.session_id = t.session_id
                    AND t2.user_id IS NOT NULL GROUP BY t2.user_id) u), '{}'),
       (array_agg(start_ns ORDER BY start_ns, trace_id))[1],
       (array_agg(trace_id ORDER BY start_ns, trace_id))[1],
       (array_agg(input_preview ORDER BY start_ns, trace_id))[1],
       (array_agg(start_ns ORDER BY start_ns DESC, trace_id DESC))[1],
       (array_agg(trace_id ORDER BY start_ns DESC, trace_id DESC))[1],
       (array_agg(interrupted ORDER BY start_ns DESC, trace_id DESC))[1],
       max(start_ns + duration_ms::bigint * 1000000),
       (array_agg(trace_id ORDER BY start_ns + duration_ms::bigint * 1000000 DESC, trace_id DESC))[1],
       count(*) FILTER (WHERE status = 'final'),
       count(*) FILTER (WHERE status = 'final' AND has_error),
       coalesce(trajhub_sum_counts(trajhub_bucket_counts(trajhub_latency_bucket(duration_ms), 1))
                FILTER (WHERE status = 'final'), '{}'),
       coalesce(sum(duration_ms) FILTER (WHERE status = 'final'), 0),
       coalesce(sum(input_tokens) FILTER (WHERE status = 'final'), 0),
       coalesce(sum(output_tokens) FILTER (WHERE status = 'final'), 0),
       coalesce(sum(cache_read_tokens) FILTER (WHERE status = 'final'), 0),
       coalesce(sum(cache_write_tokens) FILTER (WHERE status = 'final'), 0),
       coalesce(sum(reasoning_tokens) FILTER (WHERE status = 'final'), 0),
       coalesce(sum(coalesce(derived_usd, 0)::numeric) FILTER (WHERE status = 'final'), 0)
FROM trajectories t WHERE session_id IS NOT NULL
GROUP BY project, session_id;

INSERT INTO session_scores
SELECT t.project, t.session_id, x.name,
       count(*) FILTER (WHERE x.every AND t.status = 'final'),
       coalesce(sum(x.value) FILTER (WHERE x.every AND t.status = 'final'), 0),
       count(*) FILTER (WHERE NOT x.every),
       coalesce(sum(x.value) FILTER (WHERE NOT x.every), 0)
FROM trajectories t CROSS JOIN LATERAL (
    -- every numeric score of the turn, and its latest whole-run score of each name
    SELECT true AS every, sc.name, sc.number_value::text::numeric AS value FROM scores sc
    WHERE sc.project = t.project AND sc.trace_id = t.trace_id AND sc.number_value IS NOT NULL
    UNION ALL
    SELECT false, l.name, l.number_value::text::numeric FROM (
        SELECT DISTINCT ON (sc.name) sc.name, sc.number_value FROM scores sc
        WHERE sc.project = t.project AND sc.trace_id = t.trace_id AND sc.step_id IS NULL
        ORDER BY sc.name, sc.id DESC) l
    WHERE l.number_value IS NOT NULL) x
WHERE t.session_id IS NOT NULL
GROUP BY t.project, t.session_id, x.name;

INSERT INTO session_calls
SELECT t.project, t.session_id, c.model, c.call, count(*)
FROM trajectories t CROSS JOIN LATERAL trajhub_model_calls(t.model_usage) c
WHERE t.session_id IS NOT NULL
GROUP BY t.project, t.session_id, c.model, c.call;

INSERT INTO session_models
SELECT project, session_id, model, sum(calls), sum(calls * b[1]), sum(calls * b[2]),
       sum(calls * b[3]), sum(calls * b[4]), sum(calls * b[5])
FROM (SELECT project, session_id, model, calls, trajhub_billable(call) AS b FROM session_calls
      WHERE jsonb_typeof(call) = 'array' AND jsonb_array_length(call) = 6) c
GROUP BY project, session_id, model;
