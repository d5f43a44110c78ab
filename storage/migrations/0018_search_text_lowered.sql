-- Free text (`q`) looks for the query, ignoring case, in the root input and output, which
-- nothing else reads. It used ILIKE, which lower-cases both sides on every run it checks: for
-- two common words that are rarely adjacent ("weather forecast"), PostgreSQL walks the runs
-- newest first and checks each, and lower-casing was most of that query's time. The text is now
-- stored lower-cased (storage/derivation_store.py) and compared byte for byte with the
-- lower-cased query (storage/trajectory_reads.py): the same matches as ILIKE, and that query
-- several times faster in the database (bench/README.md, "Free text").
-- It is also cut to its first 100,000 characters, as far as the words index (migration 0014)
-- reaches: the API documents that only those are searched, and a huge input no longer fills
-- the row and TOAST for nothing.
--
-- This brings the trajectories stored before to that form. On an existing store it runs once at
-- start, in the migration's transaction: it reads every trajectory and rewrites those with a
-- capital letter or a longer text, with their index entries (the words index parses their text
-- again), which is most of its time (bench/README.md, "Migrating a store"). Autovacuum reclaims
-- the old row versions afterwards.
UPDATE trajectories
SET root_input = lower(left(root_input, 100000)),
    root_output = lower(left(root_output, 100000))
WHERE root_input <> lower(left(root_input, 100000))
   OR root_output <> lower(left(root_output, 100000));
