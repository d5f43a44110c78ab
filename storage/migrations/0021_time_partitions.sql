-- Time partitions: `spans`, `traces`, `trajectories` and `trajectory_revisions`
-- become declaratively RANGE-partitioned by `first_seen`, the time the trace's first span was
-- received, so that retention drops a whole partition of each instead of deleting row by row
-- (storage/retention.py, README "Operations", deploy/SCALING.md).
--
-- Why the trace's first-seen time and not each row's own time: a unique index on a partitioned
-- table must include the partition key, so a re-sent span is stored once only if it lands in the
-- partition that already holds it, and derivation reads a trace's spans together. Every row of
-- a trace carries the same `first_seen`, taken from `trace_keys` below, so all spans of a trace
-- (even when they arrive on both sides of midnight) and every re-sent span land in one partition,
-- and the primary keys (old key + first_seen) still mean "stored once".
--
-- On an existing store this runs once at start, in the migration's transaction: it copies every
-- row into the partitioned tables and swaps the names (bench/README.md, "Migrating a store",
-- has the time for 1M spans). Indexes, CHECK constraints, defaults, column storage,
-- storage parameters and triggers are carried over from the tables as they are at that point,
-- whatever earlier migrations added to them.
SET LOCAL maintenance_work_mem = '256MB';

-- One row per stored trace: the partition its rows live in. Not partitioned: its primary key is
-- what makes (project, trace_id) → first_seen one value across partitions. Ingest inserts (or
-- locks) the row of every trace a request carries before it writes the spans
-- (storage/span_writer.py); retention deletes it with the trace.
CREATE TABLE trace_keys (
    project    text        NOT NULL,
    trace_id   text        NOT NULL,
    first_seen timestamptz NOT NULL,
    PRIMARY KEY (project, trace_id)
);
CREATE INDEX trace_keys_by_first_seen ON trace_keys (first_seen);

-- The time ranges that have a partition (the same ranges in every partitioned table).
CREATE TABLE trajhub_time_partitions (
    lower timestamptz PRIMARY KEY,
    upper timestamptz NOT NULL UNIQUE,
    CHECK (lower < upper)
);

-- The partitioned tables, and the storage parameters each new partition gets (a partitioned
-- table itself cannot hold them: e.g. spans' toast_tuple_target, trajectories' fillfactor).
CREATE TABLE time_partitioned_tables (
    name    text PRIMARY KEY,
    options text[]
);

-- The time a new trace is filed under: now, or the end of the newest partition if the
-- partitions have not been created that far (the maintenance loop creates them ahead, so that
-- only happens if it has been stopped): a write never lands outside every partition, and no
-- DEFAULT partition is needed.
CREATE FUNCTION trajhub_partition_time(at timestamptz) RETURNS timestamptz
    LANGUAGE sql STABLE
    AS $$ SELECT least(at, (SELECT max(upper) FROM trajhub_time_partitions) - interval '1 microsecond') $$;

-- Name a partition's indexes after their parent index (trajectories_by_start_p20260101_000000),
-- not PostgreSQL's generated column-list names: plans and tests name the index they expect.
CREATE FUNCTION trajhub_name_partition_indexes(part regclass) RETURNS void
    LANGUAGE plpgsql AS $$
DECLARE
    ix record;
    suffix text := substring(part::text from '_p[0-9]{8}_[0-9]{6}$');
BEGIN
    FOR ix IN
        SELECT c.relname AS child, p.relname AS parent
        FROM pg_index i
        JOIN pg_class c ON c.oid = i.indexrelid
        JOIN pg_inherits h ON h.inhrelid = i.indexrelid
        JOIN pg_class p ON p.oid = h.inhparent
        WHERE i.indrelid = part
    LOOP
        IF ix.child <> left(ix.parent, 63 - length(suffix)) || suffix THEN
            EXECUTE format('ALTER INDEX %I RENAME TO %I', ix.child,
                           left(ix.parent, 63 - length(suffix)) || suffix);
        END IF;
    END LOOP;
END
$$;

-- Create the partition [lower, upper) of every partitioned table.
CREATE FUNCTION trajhub_create_partition(lower timestamptz, upper timestamptz) RETURNS void
    LANGUAGE plpgsql AS $$
DECLARE
    t record;
    suffix text := '_p' || to_char(lower AT TIME ZONE 'UTC', 'YYYYMMDD_HH24MISS');
BEGIN
    FOR t IN SELECT name, options FROM time_partitioned_tables ORDER BY name LOOP
        EXECUTE format('CREATE TABLE %I PARTITION OF %I FOR VALUES FROM (%L) TO (%L) %s',
                       t.name || suffix, t.name, lower, upper,
                       CASE WHEN t.options IS NULL THEN ''
                            ELSE 'WITH (' || array_to_string(t.options, ', ') || ')' END);
        PERFORM trajhub_name_partition_indexes((t.name || suffix)::regclass);
    END LOOP;
    INSERT INTO trajhub_time_partitions (lower, upper) VALUES (lower, upper);
END
$$;

-- Make sure partitions of `width` exist from now until `ahead` widths from now; returns how
-- many ranges it created. Ranges start where the newest one ends (or at now rounded down to
-- `width` since the Unix epoch, in UTC), so they never overlap, even when the width changes.
-- A transaction-level advisory lock lets one caller at a time do it (every replica calls it).
CREATE FUNCTION trajhub_ensure_partitions(width interval, ahead integer) RETURNS integer
    LANGUAGE plpgsql AS $$
DECLARE
    seconds double precision := extract(epoch FROM width);
    start timestamptz;
    created integer := 0;
BEGIN
    IF seconds < 1 THEN
        RAISE EXCEPTION 'partition width % is below one second', width;
    END IF;
    PERFORM pg_advisory_xact_lock(7521912165496467505);  -- 'trajpart' as an integer
    start := greatest(
        (SELECT max(upper) FROM trajhub_time_partitions),
        to_timestamp(floor(extract(epoch FROM now()) / seconds) * seconds));
    WHILE start < now() + width * ahead LOOP
        PERFORM trajhub_create_partition(start, start + width);
        start := start + width;
        created := created + 1;
    END LOOP;
    RETURN created;
END
$$;

-- Every trace stored so far: filed under the time its first span was received.
INSERT INTO trace_keys (project, trace_id, first_seen)
SELECT project, trace_id, min(received_at) FROM spans GROUP BY project, trace_id;
-- (summaries or trajectories without any span: none are written so, but none may be lost)
INSERT INTO trace_keys (project, trace_id, first_seen)
SELECT project, trace_id, last_received_at FROM traces
ON CONFLICT (project, trace_id) DO NOTHING;
INSERT INTO trace_keys (project, trace_id, first_seen)
SELECT project, trace_id, derived_at FROM trajectories
ON CONFLICT (project, trace_id) DO NOTHING;

DO $$
DECLARE
    t text;
    tables text[] := ARRAY['spans', 'traces', 'trajectories', 'trajectory_revisions'];
    day double precision := 86400;
    width double precision := coalesce(
        nullif(current_setting('trajhub.partition_seconds', true), '')::double precision, 86400);
    lower timestamptz;
    fk record;
    ix text;
    tg text;
    pk text;
    indexes text[];
    triggers text[];
BEGIN
    -- 1. the partitioned tables, shaped like the old ones plus `first_seen`
    FOREACH t IN ARRAY tables LOOP
        INSERT INTO time_partitioned_tables (name, options)
        SELECT t, reloptions FROM pg_class WHERE oid = t::regclass;
        EXECUTE format(
            'CREATE TABLE %I (LIKE %I INCLUDING DEFAULTS INCLUDING CONSTRAINTS INCLUDING STORAGE '
            'INCLUDING COMMENTS INCLUDING GENERATED, '
            'first_seen timestamptz NOT NULL DEFAULT trajhub_partition_time(now())) '
            'PARTITION BY RANGE (first_seen)', t || '_partitioned', t);
    END LOOP;
    UPDATE time_partitioned_tables SET name = name || '_partitioned';

    -- 2. a day's partition for every day that holds data (UTC days), then the current range
    --    at the configured width (trajhub serve sets trajhub.partition_seconds; a day otherwise)
    FOR lower IN
        SELECT DISTINCT to_timestamp(floor(extract(epoch FROM first_seen) / day) * day)
        FROM trace_keys ORDER BY 1
    LOOP
        PERFORM trajhub_create_partition(lower, lower + make_interval(secs => day));
    END LOOP;
    -- the partitions were created under the temporary names: name them after the tables
    PERFORM trajhub_ensure_partitions(make_interval(secs => width), 2);

    -- 3. copy, swap, and rebuild the keys, indexes and triggers
    FOREACH t IN ARRAY tables LOOP
        SELECT array_agg(pg_get_indexdef(i.indexrelid)) INTO indexes
        FROM pg_index i WHERE i.indrelid = t::regclass AND NOT i.indisprimary;
        SELECT array_agg(pg_get_triggerdef(g.oid)) INTO triggers
        FROM pg_trigger g WHERE g.tgrelid = t::regclass AND NOT g.tgisinternal;
        SELECT string_agg(quote_ident(a.attname), ', ' ORDER BY k.ord) INTO pk
        FROM pg_index i
        CROSS JOIN LATERAL unnest(i.indkey) WITH ORDINALITY AS k(attnum, ord)
        JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = k.attnum
        WHERE i.indrelid = t::regclass AND i.indisprimary;

        -- Foreign keys to these tables (open_trajectories and trajectory_revisions referenced
        -- trajectories, ON DELETE CASCADE) cannot stay: a key referencing a partitioned table
        -- must include its partition key. Retention now deletes those rows itself.
        FOR fk IN SELECT conrelid::regclass AS tbl, conname FROM pg_constraint
                  WHERE contype = 'f' AND (confrelid = t::regclass OR conrelid = t::regclass)
        LOOP
            EXECUTE format('ALTER TABLE %s DROP CONSTRAINT %I', fk.tbl, fk.conname);
        END LOOP;

        EXECUTE format(
            'INSERT INTO %I SELECT o.*, k.first_seen FROM %I o '
            'JOIN trace_keys k ON k.project = o.project AND k.trace_id = o.trace_id',
            t || '_partitioned', t);
        EXECUTE format('DROP TABLE %I', t);
        EXECUTE format('ALTER TABLE %I RENAME TO %I', t || '_partitioned', t);
        EXECUTE format('ALTER TABLE %I ADD PRIMARY KEY (%s, first_seen)', t, pk);
        FOREACH ix IN ARRAY coalesce(indexes, '{}') LOOP
            EXECUTE ix;
        END LOOP;
        FOREACH tg IN ARRAY coalesce(triggers, '{}') LOOP
            EXECUTE tg;
        END LOOP;
        EXECUTE format('ANALYZE %I', t);
    END LOOP;
    UPDATE time_partitioned_tables SET name = left(name, length(name) - length('_partitioned'));

    -- the partitions' own names, after their tables
    FOR ix IN
        SELECT c.relname FROM pg_inherits h JOIN pg_class c ON c.oid = h.inhrelid
        WHERE h.inhparent = ANY (SELECT name::regclass FROM time_partitioned_tables)
    LOOP
        EXECUTE format('ALTER TABLE %I RENAME TO %I', ix, replace(ix, '_partitioned_p', '_p'));
        PERFORM trajhub_name_partition_indexes(replace(ix, '_partitioned_p', '_p')::regclass);
    END LOOP;
END
$$;

-- A trajectory's revisions live in its partition: the trigger copies `first_seen`.
CREATE OR REPLACE FUNCTION record_trajectory_revision() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO trajectory_revisions (project, trace_id, revision, status, derived_at,
                                      normalizer_version, step_count, input_tokens,
                                      output_tokens, derivation_error, first_seen)
    VALUES (NEW.project, NEW.trace_id, NEW.revision, NEW.status, NEW.derived_at,
            NEW.normalizer_version, NEW.step_count, NEW.input_tokens, NEW.output_tokens,
            NEW.derivation_error, NEW.first_seen)
    ON CONFLICT (project, trace_id, revision, first_seen) DO UPDATE SET
        status = EXCLUDED.status, derived_at = EXCLUDED.derived_at,
        normalizer_version = EXCLUDED.normalizer_version, step_count = EXCLUDED.step_count,
        input_tokens = EXCLUDED.input_tokens, output_tokens = EXCLUDED.output_tokens,
        derivation_error = EXCLUDED.derivation_error;
    RETURN NULL;
END
$$;
