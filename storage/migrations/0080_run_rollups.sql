-- Monitoring's rollups (docs/monitoring.md): figures of the final trajectories per project,
-- hour and run labels, kept as runs become final instead of summed when read. The API's time
-- series (GET /api/v1/timeseries) reads them; storage/rollups.py writes them.
--
-- On Citus: run_rollups and run_rollup_scores are distributed by project (every write and
-- every read names one project, so a statement touches one shard; their unique keys begin
-- with it). rollup_contributions is trace-keyed like trajectories: distributed by trace_id and
-- co-located with them, so finalizing, re-deriving and expiring join it shard-locally; the
-- time series' minute buckets read it by (project, start_ns), a multi-shard read.

-- What the derivation now records on each trajectory for the rollups: its run name (the
-- `trajhub.run` attribute), the resource's service.version (root span first), the first
-- prompt version attribute found, the cache and
-- reasoning tokens and the money of its model calls, priced when it was derived (the list's
-- cost is priced when read). Rows derived before this read NULL and 0 until re-derived.
ALTER TABLE trajectories
    ADD COLUMN run_name text,
    ADD COLUMN release text,
    ADD COLUMN prompt_version text,
    ADD COLUMN cache_read_tokens bigint NOT NULL DEFAULT 0,
    ADD COLUMN cache_write_tokens bigint NOT NULL DEFAULT 0,
    ADD COLUMN reasoning_tokens bigint NOT NULL DEFAULT 0,
    ADD COLUMN derived_usd double precision;

-- A run's duration's bucket: 0 below 1 ms, else the b with 1.1^(b-1) <= ms < 1.1^b (about, as
-- floating point rounds). The bucket's representative, 2·1.1^b / 2.1, is within 4.8 % of every
-- duration in it (DDSketch's argument), so quantiles read from the counts are too.
CREATE FUNCTION trajhub_latency_bucket(ms bigint) RETURNS integer
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    AS $$ SELECT CASE WHEN ms < 1 THEN 0 ELSE 1 + floor(ln(ms::float8) / ln(1.1))::integer END $$;

-- Counts by bucket (element 1 = bucket 0) added element by element; the shorter is padded
-- with zeros. Immutable, so Citus accepts it in ON CONFLICT … DO UPDATE SET.
CREATE FUNCTION trajhub_add_counts(a bigint[], b bigint[]) RETURNS bigint[]
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    AS $$ SELECT coalesce(array_agg(coalesce(x, 0) + coalesce(y, 0) ORDER BY n), '{}')
          FROM unnest(coalesce(a, '{}'), coalesce(b, '{}')) WITH ORDINALITY AS u(x, y, n) $$;

-- One run's count in its bucket, as counts by bucket, times `sign` (1 adds it, -1 takes it
-- back).
CREATE FUNCTION trajhub_bucket_counts(bucket integer, sign bigint) RETURNS bigint[]
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    AS $$ SELECT array_fill(0::bigint, ARRAY[bucket]) || sign $$;

-- Counts by bucket from (bucket, count) pairs, a bucket given more than once summed: how a
-- batch's runs, counted per bucket, become one row's counts.
CREATE FUNCTION trajhub_counts_at(buckets integer[], counts bigint[]) RETURNS bigint[]
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    AS $$ SELECT coalesce(array_agg(coalesce(c.n, 0) ORDER BY i), '{}')
          FROM generate_series(0, (SELECT max(b) FROM unnest(buckets) AS b)) AS i
          LEFT JOIN (SELECT b, sum(n)::bigint AS n FROM unnest(buckets, counts) AS u(b, n)
                     GROUP BY b) c ON c.b = i $$;

CREATE AGGREGATE trajhub_sum_counts(bigint[]) (
    SFUNC = trajhub_add_counts, STYPE = bigint[], INITCOND = '{}');

-- What each final trajectory contributed, so that a re-derivation, retention or a change of
-- its scores takes back exactly that: its key in the rollups and its figures. A trajectory
-- has a row here exactly while it is final.
CREATE TABLE rollup_contributions (
    project             text             NOT NULL,
    trace_id            text             NOT NULL,
    start_ns            bigint           NOT NULL,
    hour_ns             bigint           NOT NULL,
    run_name            text             NOT NULL,
    agents              text[]           NOT NULL,
    models              text[]           NOT NULL,
    release             text             NOT NULL,
    prompt_version      text             NOT NULL,
    failed              boolean          NOT NULL,
    duration_ms         bigint           NOT NULL,
    input_tokens        bigint           NOT NULL,
    output_tokens       bigint           NOT NULL,
    cache_read_tokens   bigint           NOT NULL,
    cache_write_tokens  bigint           NOT NULL,
    reasoning_tokens    bigint           NOT NULL,
    usd                 numeric          NOT NULL,
    PRIMARY KEY (project, trace_id)
);
-- the minute buckets' read (storage/rollups.py)
CREATE INDEX rollup_contributions_time ON rollup_contributions (project, start_ns);

-- The hourly rollup: one row per project, hour (Unix ns of its start, UTC) and labels. A
-- run's agents and models are its sets (as the trajectory list's filters match them); an
-- absent label is ''. Figures only grow and shrink by addition, so any order of corrections
-- ends at the same row; a row whose runs fell to 0 stays, holding zeros.
CREATE TABLE run_rollups (
    project             text     NOT NULL,
    hour_ns             bigint   NOT NULL,
    run_name            text     NOT NULL,
    agents              text[]   NOT NULL,
    models              text[]   NOT NULL,
    release             text     NOT NULL,
    prompt_version      text     NOT NULL,
    runs                bigint   NOT NULL,
    failed_runs         bigint   NOT NULL,
    -- the runs' durations counted by bucket (trajhub_latency_bucket; element 1 = bucket 0)
    latency_counts      bigint[] NOT NULL,
    duration_ms         bigint   NOT NULL,
    input_tokens        bigint   NOT NULL,
    output_tokens       bigint   NOT NULL,
    cache_read_tokens   bigint   NOT NULL,
    cache_write_tokens  bigint   NOT NULL,
    reasoning_tokens    bigint   NOT NULL,
    usd                 numeric  NOT NULL,
    UNIQUE (project, hour_ns, run_name, agents, models, release, prompt_version)
);

-- The scores of the runs of a rollup row: per score name, how many numeric values and their
-- sum (a categorical score has no number and is not counted).
CREATE TABLE run_rollup_scores (
    project             text     NOT NULL,
    hour_ns             bigint   NOT NULL,
    run_name            text     NOT NULL,
    agents              text[]   NOT NULL,
    models              text[]   NOT NULL,
    release             text     NOT NULL,
    prompt_version      text     NOT NULL,
    name                text     NOT NULL,
    scores              bigint   NOT NULL,
    total               numeric  NOT NULL,
    UNIQUE (project, hour_ns, run_name, agents, models, release, prompt_version, name)
);

-- The trajectories already final count from now on, as they stand.
INSERT INTO rollup_contributions
SELECT project, trace_id, start_ns, start_ns - start_ns % 3600000000000, coalesce(run_name, ''),
       agent_names, model_names, coalesce(release, ''), coalesce(prompt_version, ''),
       has_error, duration_ms, input_tokens, output_tokens, cache_read_tokens,
       cache_write_tokens, reasoning_tokens, coalesce(derived_usd, 0)::numeric
FROM trajectories WHERE status = 'final';

INSERT INTO run_rollups
SELECT project, hour_ns, run_name, agents, models, release, prompt_version, count(*),
       count(*) FILTER (WHERE failed),
       trajhub_sum_counts(trajhub_bucket_counts(trajhub_latency_bucket(duration_ms), 1)),
       sum(duration_ms), sum(input_tokens), sum(output_tokens), sum(cache_read_tokens),
       sum(cache_write_tokens), sum(reasoning_tokens), sum(usd)
FROM rollup_contributions
GROUP BY project, hour_ns, run_name, agents, models, release, prompt_version;

INSERT INTO run_rollup_scores
SELECT c.project, c.hour_ns, c.run_name, c.agents, c.models, c.release, c.prompt_version,
       s.name, count(s.number_value), coalesce(sum(s.number_value::numeric), 0)
FROM rollup_contributions c JOIN scores s ON s.project = c.project AND s.trace_id = c.trace_id
GROUP BY c.project, c.hour_ns, c.run_name, c.agents, c.models, c.release, c.prompt_version,
         s.name;
