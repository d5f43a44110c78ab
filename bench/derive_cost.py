"""What deriving one trace costs the deriving process, and how much of that is C-library work.

    .venv/bin/python bench/derive_cost.py [--requests 40] [--passes 5] [--split]

Stores --requests requests of `../shared/bench/loadgen.py` (512 spans, 64 whole traces each;
`--shared DIR` points elsewhere) in a fresh embedded PostgreSQL, reads their rows back once as
the derivation round does (`derivation_store.load_spans`' columns), then runs
`service.derivation.derive_trace` over every trace --passes times with no database in the
timed part: stored bodies to span models, the normalizers, the trace and trajectory rows, the
compressed document. It prints the CPU µs per span of the fastest and of the median pass: the
Python the derivation round spends per span besides its statements (bench/README.md, "Current
figures"). This machine's speed drifts within minutes (bench/README.md, "Running the
benchmarks"): compare two trees by running each in turn several times (`PYTHONPATH=<other
tree>` runs another checkout's `trajhub`).

With --split, it also replays the C-library calls of a pass alone, on that pass's own inputs
and outputs: the span bodies decompressed (zstd) and parsed (protobuf), the documents
serialized (orjson) and compressed with the explanations (zstd), the span attributes' JSON
parsed (orjson). Their sum is the part of the cost that neither a faster interpreter nor a
compiler of the normalizers could touch; the rest is Python, and the protobuf field reads it
makes one attribute at a time.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import time
from collections import defaultdict
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import asyncpg
import orjson
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.trace.v1.trace_pb2 import Span as OtlpSpan

from trajhub.service import derivation
from trajhub.service.ingest.decode import otlp_batch
from trajhub.storage import compression, derivation_store, span_writer, trace_reads
from trajhub.storage.migrate import migrate

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from _common import loadgen_requests, scratch_postgres  # noqa: E402

Rows = list[dict[str, Any]]
#: when the spans were received (fixed: it only sets each trajectory's settle time)
RECEIVED = datetime(2026, 1, 1, tzinfo=UTC)


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


def _traces(rows: Rows) -> dict[tuple[str, str], Rows]:
    """`rows` by trace, in lists of their own (`derive_trace` empties the list it is given)."""
    by_trace: dict[tuple[str, str], Rows] = defaultdict(list)
    for row in rows:
        by_trace[(row["project"], row["trace_id"])].append(row)
    return by_trace


def _derive(traces: dict[tuple[str, str], Rows], envelopes: dict[int, bytes]
            ) -> list[derivation.Result]:
    return [derivation.derive_trace(project, trace_id, trace_rows, envelopes, RECEIVED,
                                    timedelta(0))
            for (project, trace_id), trace_rows in traces.items()]


def _one_pass(rows: Rows, envelopes: dict[int, bytes]) -> float:
    """CPU seconds of deriving every trace of `rows` once."""
    traces = _traces(rows)
    start = time.process_time()
    _derive(traces, envelopes)
    return time.process_time() - start


def _timed(work: Callable[[], object], repeat: int = 3) -> float:
    """CPU seconds of the fastest of `repeat` runs of `work`."""
    best = float("inf")
    for _ in range(repeat):
        start = time.process_time()
        work()
        best = min(best, time.process_time() - start)
    return best


def _c_share(rows: Rows, envelopes: dict[int, bytes], per_span: float) -> None:
    """The C-library work of a pass, replayed alone on the pass's own inputs and outputs."""
    written = [trajectory for _, trajectory in _derive(_traces(rows), envelopes)]
    stored = [row["body"] for row in rows]
    bodies = [compression.decompress(b) for b in stored]
    documents = [compression.decompress(w.document) for w in written]
    explanations = [compression.decompress(w.explanation) for w in written]
    dicts = [orjson.loads(d) for d in documents]
    attributes = [row["attributes"] for row in rows]
    work: dict[str, Callable[[], object]] = {
        "zstd: span bodies decompressed": lambda: [compression.decompress(b) for b in stored],
        "protobuf: spans parsed": lambda: [OtlpSpan.FromString(b) for b in bodies],
        "zstd: documents compressed": lambda: [compression.compress_document(d)
                                               for d in documents],
        "zstd: explanations compressed": lambda: [compression.compress(e) for e in explanations],
        "orjson: documents serialized": lambda: [orjson.dumps(d, option=orjson.OPT_SORT_KEYS)
                                                 for d in dicts],
        "orjson: attributes parsed": lambda: [orjson.loads(a) for a in attributes if a],
    }
    print("the C-library calls of a pass, replayed alone (CPU µs per span):")
    total = 0.0
    for label, call in work.items():
        micros = _timed(call) / len(rows) * 1e6
        total += micros
        print(f"  {label:<32} {micros:5.1f}")
    print(f"  {'in all':<32} {total:5.1f} of {per_span:.1f} ({total / per_span:.0%}); the rest "
          "is Python and the protobuf field reads it makes")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--requests", type=int, default=40, help="512-span loadgen requests")
    ap.add_argument("--passes", type=int, default=5, help="timed passes over every trace")
    ap.add_argument("--split", action="store_true",
                    help="also replay the pass's C-library calls alone: their share")
    ap.add_argument("--shared", type=Path, default=HERE.parent.parent / "shared" / "bench")
    args = ap.parse_args()
    payloads = loadgen_requests(args.shared, args.requests)
    with scratch_postgres("trajhub-derive-cost-") as url:
        rows, envelopes = asyncio.run(_stored_rows(url, payloads))
    seconds = [_one_pass(rows, envelopes) for _ in range(args.passes)]
    per_span = [s / len(rows) * 1e6 for s in seconds]
    print(f"derive_trace over {len(rows):,} loadgen spans ({len(rows) // 8:,} traces), "
          f"{args.passes} passes: CPU µs per span fastest {min(per_span):.1f}, "
          f"median {statistics.median(per_span):.1f} "
          f"(= {min(per_span) / 100:.2f} CPU-s per 10k spans)")
    if args.split:
        _c_share(rows, envelopes, min(per_span))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
