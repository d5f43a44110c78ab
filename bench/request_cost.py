"""What one ingest request costs, phase by phase, with derivation at ingest.

    .venv/bin/python bench/request_cost.py [--requests 40] [--variant NAME SQL]...

In one process, no server: each request of `../shared/bench/loadgen.py` (512 spans, 64 whole
traces; `--shared DIR` points elsewhere) goes through the ingest worker's own steps, timed one
by one: decode (protobuf → rows), derive (the 64 trajectories, Python), COPY of the spans,
claim (lock and count), store (trace and trajectory rows), commit. It prints the median of each
phase in ms per request, after the first 5 requests (warm-up).

Each `--variant NAME SQL` runs the same requests again on a fresh embedded PostgreSQL after
running SQL on the migrated schema (e.g. `--variant no-words "DROP INDEX trajectories_words"`),
so what a schema element costs the store is the difference from the `as-is` row. Absolute
figures move with the machine's other work; compare rows of one sitting.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import asyncpg
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

from trajhub.service import derivation
from trajhub.service.ingest.decode import otlp_batch
from trajhub.storage import derivation_store, span_writer
from trajhub.storage.embedded import EmbeddedPostgres
from trajhub.storage.migrate import migrate

HERE = Path(__file__).resolve().parent
PHASES = ("decode", "derive", "copy", "claim", "store", "commit")
WARM_UP = 5


async def measure(url: str, setup_sql: str, payloads: list[bytes]) -> dict[str, float]:
    conn = await asyncpg.connect(url)
    try:
        await migrate(conn)
        if setup_sql:
            await conn.execute(setup_sql)
        await span_writer.prepare(conn)
        times: dict[str, list[float]] = {phase: [] for phase in PHASES}
        settle = timedelta(seconds=3)
        for body in payloads:
            t = [time.perf_counter()]
            batch = otlp_batch(ExportTraceServiceRequest.FromString(body), "request-cost")
            t.append(time.perf_counter())
            received = datetime.now(UTC)
            derived = {key: derivation.derive_trace(*key, [r._asdict() for r in rows],
                                                    batch.resources, received, settle,
                                                    batch.parsed)
                       for key, rows in derivation.whole_traces(batch.rows.values()).items()}
            t.append(time.perf_counter())
            transaction = conn.transaction()
            await transaction.start()
            await span_writer.write_spans(conn, batch.rows.values(), batch.resources)
            t.append(time.perf_counter())
            stored = await derivation_store.claim_whole(
                conn, {key: result[0].span_count for key, result in derived.items()})
            t.append(time.perf_counter())
            await derivation.store_results(conn, [derived[key] for key in stored])
            t.append(time.perf_counter())
            await transaction.commit()
            t.append(time.perf_counter())
            for i, phase in enumerate(PHASES):
                times[phase].append((t[i + 1] - t[i]) * 1000)
        return {phase: statistics.median(v[WARM_UP:]) for phase, v in times.items()}
    finally:
        await conn.close()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--requests", type=int, default=40, help="512-span requests per variant")
    ap.add_argument("--variant", nargs=2, action="append", default=[], metavar=("NAME", "SQL"),
                    help="also measure after running SQL on the schema (repeatable)")
    ap.add_argument("--shared", type=Path, default=HERE.parent.parent / "shared" / "bench")
    args = ap.parse_args()
    if args.requests <= WARM_UP:
        ap.error(f"--requests must be more than {WARM_UP}")
    sys.path.insert(0, str(args.shared))
    import loadgen  # the reference load generator's payload builder

    payloads = [body for k in range(args.requests)
                for _, body in loadgen.build_payloads(512, 512, os.urandom(4), k, "bench", [])]
    print(f"{args.requests} requests of 512 loadgen spans (64 whole traces); median ms per "
          f"request after {WARM_UP} warm-up requests")
    print(f"{'variant':<16}" + "".join(f"{phase:>9}" for phase in PHASES) + f"{'total':>9}")
    for name, sql in [("as-is", ""), *args.variant]:
        with tempfile.TemporaryDirectory(prefix="trajhub-request-cost-") as data_dir:
            postgres = EmbeddedPostgres(Path(data_dir))
            try:
                result = asyncio.run(measure(postgres.url, sql, payloads))
            finally:
                postgres.stop()
        print(f"{name:<16}" + "".join(f"{result[phase]:>9.1f}" for phase in PHASES)
              + f"{sum(result.values()):>9.1f}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
