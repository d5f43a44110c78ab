-- The partition catalogue is `trajhub_time_partitions`, no longer `time_partitions`: Citus
-- installs a `pg_catalog.time_partitions` view, and pg_catalog is searched before trajhub's
-- schema, so on a Citus coordinator every unqualified `time_partitions` read that view instead
-- (deploy/SCALING.md, section 3). Migrations 0021, 0064 and 0068 now create and use the new
-- name; a store they built under the old one is renamed here, constraints included, and the
-- functions that read it are defined again, so both end with the same schema.
DO $$
BEGIN
    IF to_regclass(quote_ident(current_schema()) || '.time_partitions') IS NOT NULL THEN
        EXECUTE format('ALTER TABLE %I.time_partitions RENAME TO trajhub_time_partitions',
                       current_schema());
        ALTER TABLE trajhub_time_partitions
            RENAME CONSTRAINT time_partitions_pkey TO trajhub_time_partitions_pkey;
        ALTER TABLE trajhub_time_partitions
            RENAME CONSTRAINT time_partitions_upper_key TO trajhub_time_partitions_upper_key;
        ALTER TABLE trajhub_time_partitions
            RENAME CONSTRAINT time_partitions_check TO trajhub_time_partitions_check;
    END IF;
END
$$;

CREATE OR REPLACE FUNCTION trajhub_partition_time(at timestamptz) RETURNS timestamptz
    LANGUAGE sql STABLE
    AS $$ SELECT least(at, (SELECT max(upper) FROM trajhub_time_partitions) - interval '1 microsecond') $$;

CREATE OR REPLACE FUNCTION trajhub_create_partition(lower timestamptz, upper timestamptz)
    RETURNS void LANGUAGE plpgsql AS $$
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
        PERFORM trajhub_tune_partition_indexes((t.name || suffix)::regclass);
    END LOOP;
    INSERT INTO trajhub_time_partitions (lower, upper) VALUES (lower, upper);
END
$$;

CREATE OR REPLACE FUNCTION trajhub_ensure_partitions(width interval, ahead integer) RETURNS integer
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
