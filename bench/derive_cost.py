"""What deriving one trace costs the deriving process, and how much of that is C-library work.

    .venv/bin/python bench/derive_cost.py [--requests 40] [--passes 5] [--profile]

Stores --requests requests of `../shared/bench/loadgen.py` (512 spans, 64 whole traces each;
`--shared DIR` points elsewhere) in a fresh embedded PostgreSQL, reads their rows back once as
the derivation round does (`derivation_store.load_spans`' columns), then runs
`service.derivation.derive_trace` over every trace --passes times with no database in the
timed part: stored bodies to span models, the normalizers, the trace and trajectory rows, the
compressed document. It prints the CPU µs per span of the fastest and of the median pass: the
Python the derivation round spends per span besides its statements (bench/README.md, "Burst and
pipeline"). This machine's speed drifts by ±15 % within minutes: compare two trees by running
each in turn several times (`PYTHONPATH=<other tree>` runs another checkout's `trajhub`).

With --profile, one more pass runs under cProfile and prints the share of the time spent in
the C functions the derivation calls (zstd, protobuf parsing, orjson), against everything
else: the part of the cost a faster interpreter or a compiler could not touch. cProfile
inflates the rest (it times every Python call), so the C share it gives is a lower bound.
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import os
import pstats
import statistics
import sys
import tempfile
import time
from collections import defaultdict
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import asyncpg
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

from trajhub.service.derivation import derive_trace
from trajhub.service.ingest.decode import otlp_batch
from trajhub.storage import derivation_store, span_writer, trace_reads
from trajhub.storage.embedded import EmbeddedPostgres
from trajhub.storage.migrate import migrate

HERE = Path(__file__).resolve().parent
#: the C functions of the derivation's libraries, by the name cProfile gives each
C_CALLS = {
    "zstd compress": "<method 'compress' of 'zstandard.backend_c.ZstdCompressor' objects>",
    "zstd decompress": "<method 'decompress' of 'zstandard.backend_c.ZstdDecompressor' objects>",
    "protobuf parse": "<built-in method FromString>",
    "orjson dumps": "<built-in method orjson.dumps>",
    "orjson loads": "<built-in method orjson.loads>",
}
Rows = list[dict[str, Any]]


async def _stored_rows(url: str, payloads: list[bytes]) -> tuple[Rows, dict[int, bytes]]:
    conn = await asyncpg.connect(url)
    try:
        await migrate(conn)
        await span_writer.prepare(conn)
        for body in payloads:
            batch = otlp_batch(ExportTraceServiceRequest.FromString(body), "derive-cost")
            async with conn.transaction():
                await span_writer.write_spans(conn, batch.rows.values(), batch.resources)
        rows = await conn.fetch(
            f"SELECT s.project, {derivation_store.SPAN_FIELDS}, s.attributes FROM spans s")
        envelopes = await trace_reads.resources(
            conn, sorted({r["resource_id"] for r in rows if r["resource_id"] is not None}))
        return [dict(r) for r in rows], dict(envelopes)
    finally:
        await conn.close()


def _one_pass(rows: Rows, envelopes: dict[int, bytes]) -> float:
    """CPU seconds of deriving every trace of `rows` once."""
    by_trace: dict[tuple[str, str], Rows] = defaultdict(list)
    for row in rows:
        by_trace[(row["project"], row["trace_id"])].append(dict(row))  # derive_trace empties it
    received = datetime(2026, 1, 1, tzinfo=UTC)
    start = time.process_time()
    for (project, trace_id), trace_rows in by_trace.items():
        derive_trace(project, trace_id, trace_rows, envelopes, received, timedelta(0))
    return time.process_time() - start


def _c_share(rows: Rows, envelopes: dict[int, bytes]) -> None:
    profile = cProfile.Profile()
    profile.enable()
    _one_pass(rows, envelopes)
    profile.disable()
    stats: Any = pstats.Stats(profile).stats  # {(file, line, name): (cc, nc, tt, ct, callers)}
    total = sum(v[2] for v in stats.values())
    by_name = {(f"<{name[1:-1]}>" if name.startswith("<") else name): v[2]
               for (_, _, name), v in stats.items()}
    c_total = 0.0
    print("under cProfile (inflates the Python part), share of the pass:")
    for label, name in C_CALLS.items():
        seconds = by_name.get(name, 0.0)
        c_total += seconds
        print(f"  {label:<16} {seconds / total:6.1%}")
    print(f"  {'C calls, in all':<16} {c_total / total:6.1%}")
    print(f"  {'everything else':<16} {1 - c_total / total:6.1%}  (Python, and the protobuf "
          "field reads it makes)")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--requests", type=int, default=40, help="512-span loadgen requests")
    ap.add_argument("--passes", type=int, default=5, help="timed passes over every trace")
    ap.add_argument("--profile", action="store_true",
                    help="one more pass under cProfile: the C functions' share")
    ap.add_argument("--shared", type=Path, default=HERE.parent.parent / "shared" / "bench")
    args = ap.parse_args()
    sys.path.insert(0, str(args.shared))
    import loadgen  # the reference load generator's payload builder

    payloads = [body for k in range(args.requests)
                for _, body in loadgen.build_payloads(512, 512, os.urandom(4), k, "bench", [])]
    with tempfile.TemporaryDirectory(prefix="trajhub-derive-cost-") as data_dir:
        postgres = EmbeddedPostgres(Path(data_dir))
        try:
            rows, envelopes = asyncio.run(_stored_rows(postgres.url, payloads))
        finally:
            postgres.stop()
    seconds = [_one_pass(rows, envelopes) for _ in range(args.passes)]
    per_span = [s / len(rows) * 1e6 for s in seconds]
    print(f"derive_trace over {len(rows):,} loadgen spans ({len(rows) // 8:,} traces), "
          f"{args.passes} passes: CPU µs per span fastest {min(per_span):.1f}, "
          f"median {statistics.median(per_span):.1f} "
          f"(= {min(per_span) / 100:.2f} CPU-s per 10k spans)")
    if args.profile:
        _c_share(rows, envelopes)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
