-- A typical agent span is 2–5 KB. With the default toast_tuple_target (~2 KB) its body went
-- to the TOAST table as two chunks, each a row and an index entry of its own: three heap
-- writes and three index insertions per span, and three lookups to read it back. Rows up to
-- the page size now stay whole in the heap (still uncompressed: STORAGE EXTERNAL stays, for
-- the larger ones), so a COPY of a realistic span writes one row and one index entry
-- (bench/README.md, "Decoding and storing spans").
-- Only rows written from now on are affected.
ALTER TABLE spans SET (toast_tuple_target = 8160);
