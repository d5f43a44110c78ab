-- Free text (`q`) looks for the query, ignoring case, in the root input and output, which
-- nothing else reads. It used ILIKE, which lower-cases both sides on every run it checks: for
-- two common words that are rarely adjacent ("weather forecast"), PostgreSQL walks the runs
-- newest first and checks each, and lower-casing was 3/4 of that query's time. The text is now
-- stored lower-cased (storage/derivation_store.py) and compared byte for byte with the
-- lower-cased query (storage/trajectory_reads.py): the same matches as ILIKE, and that query
-- about 4× faster in the database (bench/README.md, "Free text with two common words").
-- It is also cut to its first 100,000 characters, as far as the words index (migration 0014)
-- reaches: the API documents that only those are searched, and a huge input no longer fills
-- the row and TOAST for nothing.
--
-- This brings the trajectories stored before to that form. On an existing store it runs once at
-- start, in the migration's transaction: it reads every trajectory (about 1 s per 100k of the
-- benchmark's shape on a 2-core machine when none needs changing) and rewrites those with a
-- capital letter or a longer text, with their index entries (the words index parses their text
-- again): about 14 s per 100k trajectories when all do. Autovacuum reclaims the old row
-- versions afterwards.
UPDATE trajectories
SET root_input = lower(left(root_input, 100000)),
    root_output = lower(left(root_output, 100000))
WHERE root_input <> lower(left(root_input, 100000))
   OR root_output <> lower(left(root_output, 100000));
