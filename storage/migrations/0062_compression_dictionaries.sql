-- The zstd dictionaries stored values are compressed with (storage/compression.py,
-- storage/compression_dictionaries.py). A span's few KiB are too little for zstd to learn the
-- vocabulary of spans from the span alone; a dictionary trained on a sample of earlier spans
-- holds it, and a body then keeps far fewer of its bytes (bench/README.md, "Compression"). Span
-- bodies and trajectory documents are compressed with the newest; each frame names its
-- dictionary by zstd's dictionary id, the key here.
--
-- An ingest worker trains one from the bodies it has just compressed once a store has none
-- newer than a day, so the dictionary follows what the spans say. A dictionary is kept while a
-- partition that can hold a value compressed with it exists (storage/retention.py): its bytes
-- are fragments of the sampled spans, and go when their time does. It is never sent out.
CREATE TABLE compression_dictionaries (
    id         bigint      PRIMARY KEY,
    trained_at timestamptz NOT NULL DEFAULT now(),
    data       bytea       NOT NULL
);
-- already compressed data, in effect: pglz would only cost (migration 0001)
ALTER TABLE compression_dictionaries ALTER COLUMN data SET STORAGE EXTERNAL;
