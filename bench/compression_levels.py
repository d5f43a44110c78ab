"""What each zstd level costs a span body and a trajectory document with a trained dictionary,
as trajhub compresses them (storage/compression.py): CPU µs per value to compress and to
decompress, and the share of the bytes kept. Loadgen's spans and the documents derived from
them; the dictionary trained from samples kept as an ingest worker keeps them
(`compression.collect_samples`: span bodies up to MAX_SAMPLE_BYTES, the documents in pieces),
on values other than those timed.

    .venv/bin/python bench/compression_levels.py --shared /work/shared/bench
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path

import zstandard
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

from trajhub.service import derivation, stored_trajectory
from trajhub.service.ingest.decode import otlp_batch
from trajhub.storage import compression, compression_dictionaries

HERE = Path(__file__).resolve().parent


def _values(requests: int) -> tuple[list[bytes], list[bytes]]:
    """Span bodies and documents (uncompressed) of `requests` loadgen requests."""
    import loadgen  # the reference load generator's payload builder

    bodies: list[bytes] = []
    documents: list[bytes] = []

    def keep(document: bytes) -> bytes:  # a document as pack() hands it to be compressed
        documents.append(bytes(document))
        return compression.compress_document(document)

    stored_trajectory.compress_document = keep  # type: ignore[attr-defined]
    for k in range(requests):
        for _, payload in loadgen.build_payloads(512, 512, os.urandom(4), k, "bench", []):
            batch = otlp_batch(ExportTraceServiceRequest.FromString(payload), "levels")
            bodies += [compression.decompress(r.body) for r in batch.rows.values()]
            for key, rows in derivation.whole_traces(batch.rows.values()).items():
                derivation.derive_trace(*key, [r._asdict() for r in rows], batch.resources,
                                        datetime.now(UTC), timedelta(0), batch.parsed)
    return bodies, documents


def _timed(action: Callable[[bytes], bytes], values: list[bytes], repeats: int = 5
           ) -> tuple[float, list[bytes]]:
    """The best of `repeats` passes, in µs per value, and the last pass's results."""
    best, out = float("inf"), []
    for _ in range(repeats):
        started = time.process_time()
        out = [action(v) for v in values]
        best = min(best, time.process_time() - started)
    return best / len(values) * 1e6, out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--requests", type=int, default=24, help="512-span loadgen requests")
    ap.add_argument("--levels", type=int, nargs="+", default=[1, 2, 3])
    ap.add_argument("--shared", type=Path, default=HERE.parent.parent / "shared" / "bench")
    args = ap.parse_args()
    sys.path.insert(0, str(args.shared))
    bodies, documents = _values(args.requests)
    training, timed_bodies = bodies[:len(bodies) // 2], bodies[len(bodies) // 2:]
    training_documents, timed_documents = (documents[:len(documents) // 2],
                                           documents[len(documents) // 2:])
    # sampled as an ingest worker samples (capped, the documents in pieces), then trained
    compression.collect_samples(True)
    for body in training:
        compression.compress_body(body)
    for document in training_documents:
        compression.compress_document(document)
    dictionary_bytes = compression_dictionaries.train(
        compression.samples()[0] + compression.document_pieces())
    compression.collect_samples(False)
    dictionary = zstandard.ZstdCompressionDict(dictionary_bytes)
    print(f"{len(timed_bodies)} span bodies (mean {statistics.mean(map(len, timed_bodies)):.0f} "
          f"B), {len(timed_documents)} documents (mean "
          f"{statistics.mean(map(len, timed_documents)):.0f} B); a {len(dictionary_bytes)} B "
          "dictionary trained on others; CPU µs per value, best of 5 passes")
    decompressor = zstandard.ZstdDecompressor(dict_data=dictionary)
    for level in args.levels:
        tables = zstandard.ZstdCompressionDict(dictionary_bytes)
        tables.precompute_compress(level=level)
        compressor = zstandard.ZstdCompressor(level=level, dict_data=tables)
        for name, values in (("span body", timed_bodies), ("document", timed_documents)):
            packed_us, packed = _timed(compressor.compress, values)
            unpacked_us, _ = _timed(decompressor.decompress, packed)
            kept = sum(map(len, packed)) / sum(map(len, values))
            print(f"  level {level}  {name:<9}  compress {packed_us:7.1f} µs   "
                  f"decompress {unpacked_us:6.1f} µs   kept {100 * kept:5.1f} %")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
