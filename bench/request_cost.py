"""What one ingest request costs, phase by phase, with derivation at ingest.

    .venv/bin/python bench/request_cost.py [--requests 40] [--variant NAME SQL]...

In one process, no server: each request of `../shared/bench/loadgen.py` (512 spans, 64 whole
traces; `--shared DIR` points elsewhere) goes through the ingest worker's own steps, timed one
by one: decode (protobuf → rows), derive (the 64 trajectories, Python), COPY of the spans,
claim (lock and count), store (trace and trajectory rows), commit. It prints the median of each
phase in ms per request, after the first 5 requests (warm-up).

Each `--variant NAME SQL` runs the same requests again on a fresh embedded PostgreSQL after
running SQL on the migrated schema (e.g. `--variant no-agents "DROP INDEX trajectories_agents"`),
so what a schema element costs the store is the difference from the `as-is` row. Absolute
figures move with the machine's other work; compare rows of one sitting.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import asyncpg
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

from trajhub.service import derivation
from trajhub.service.ingest.decode import otlp_batch
from trajhub.service.workers.derivation import DerivationWorker
from trajhub.storage import derivation_store, span_writer
from trajhub.storage.migrate import migrate

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from _common import loadgen_requests, scratch_postgres  # noqa: E402

PHASES = ("decode", "derive", "copy", "claim", "store", "commit")
#: what finalizing the stored trajectories costs, per request (measured once, after them all)
FINALIZE = "finalize"
#: merging the GIN indexes' pending entries (measured once, after them all)
GIN_MERGE = "gin-merge"
WARM_UP = 5


def _backend_ns(pid: int) -> int:
    """CPU time of a PostgreSQL backend so far, in ns (/proc/PID/schedstat: precise, and
    unaffected by what else the machine runs)."""
    with open(f"/proc/{pid}/schedstat") as f:
        return int(f.read().split()[0])


class Meter:
    """Per phase: this thread's CPU (Python, asyncpg included), the backend's CPU, WAL bytes."""

    def __init__(self, conn: asyncpg.Connection, backend: int) -> None:
        self.conn, self.backend = conn, backend
        self.cpu: dict[str, list[float]] = {}
        self.wal: dict[str, float] = {}
        self.counted = False

    async def _wal(self) -> int:
        return int(await self.conn.fetchval("SELECT pg_current_wal_insert_lsn() - '0/0'::pg_lsn"))

    async def start(self) -> tuple[int, int, int]:
        return time.thread_time_ns(), _backend_ns(self.backend), await self._wal()

    async def lap(self, phase: str, since: tuple[int, int, int]) -> tuple[int, int, int]:
        now = (time.thread_time_ns(), _backend_ns(self.backend), await self._wal())
        if self.counted:
            py, pg = self.cpu.setdefault(phase, [0.0, 0.0]), None
            py[0] += (now[0] - since[0]) / 1e6
            py[1] += (now[1] - since[1]) / 1e6
            self.wal[phase] = self.wal.get(phase, 0.0) + now[2] - since[2]
            del pg
        # the WAL query's own cost is left out of the next phase
        return time.thread_time_ns(), _backend_ns(self.backend), now[2]


async def measure(url: str, setup_sql: str, payloads: list[bytes], deferred: bool
                  ) -> tuple[dict[str, list[float]], dict[str, float], int]:
    """CPU ms [Python, PostgreSQL] and WAL bytes per phase, summed over the requests after the
    warm-up; and how many requests that is."""
    conn = await asyncpg.connect(url)
    try:
        await migrate(conn)
        if setup_sql:
            await conn.execute(setup_sql)
        await span_writer.prepare(conn)
        meter = Meter(conn, int(await conn.fetchval("SELECT pg_backend_pid()")))
        settle = timedelta(seconds=0)
        worker = DerivationWorker(url, 0.0)
        worker.conn = conn
        for n, body in enumerate(payloads):
            meter.counted = n >= WARM_UP
            t = await meter.start()
            batch = otlp_batch(ExportTraceServiceRequest.FromString(body), "request-cost")
            t = await meter.lap("decode", t)
            received = datetime.now(UTC)
            derived = {} if deferred else {
                key: derivation.derive_trace(*key, [r._asdict() for r in rows],
                                             batch.resources, received, settle, batch.parsed)
                for key, rows in derivation.whole_traces(batch.rows.values()).items()}
            t = await meter.lap("derive", t)
            transaction = conn.transaction()
            await transaction.start()
            await span_writer.write_spans(conn, batch.rows.values(), batch.resources)
            t = await meter.lap("copy", t)
            stored = await derivation_store.claim_whole(
                conn, {key: result[0].values["span_count"] for key, result in derived.items()})
            t = await meter.lap("claim", t)
            await derivation.store_results(conn, [derived[key] for key in stored])
            traces = {(r.project, r.trace_id) for r in batch.rows.values()}
            await span_writer.queue_changes(conn, traces.difference(stored))
            t = await meter.lap("store", t)
            await transaction.commit()
            t = await meter.lap("commit", t)
            if deferred:  # the derivation worker's round for what the request queued
                while await worker.derive_round():
                    pass
                t = await meter.lap("worker", t)
        meter.counted = True
        t = await meter.start()
        while await worker.finalize_round():
            pass
        t = await meter.lap(FINALIZE, t)
        # GIN indexes take new entries into a pending list first and merge them into the
        # index later (when the list outgrows gin_pending_list_limit, or at vacuum): that
        # merge is part of what an insert costs, so it is counted here
        await conn.execute("SELECT gin_clean_pending_list(c.oid) FROM pg_class c "
                           "JOIN pg_am a ON a.oid = c.relam "
                           # a partitioned table's index is only a parent: its partitions'
                           # indexes hold the entries (relkind 'i')
                           "WHERE a.amname = 'gin' AND c.relkind = 'i'")
        await meter.lap(GIN_MERGE, t)
        counted = len(payloads) - WARM_UP
        # these ran over every request's trajectories, warm-up included
        for phase in (FINALIZE, GIN_MERGE):
            meter.cpu[phase] = [v * counted / len(payloads) for v in meter.cpu[phase]]
            meter.wal[phase] *= counted / len(payloads)
        return meter.cpu, meter.wal, counted
    finally:
        await conn.close()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--requests", type=int, default=40, help="512-span requests per variant")
    ap.add_argument("--variant", nargs=2, action="append", default=[], metavar=("NAME", "SQL"),
                    help="also measure after running SQL on the schema (repeatable)")
    ap.add_argument("--deferred", action="store_true",
                    help="queue every trace and derive it in the derivation worker's round "
                         "(what a saturated server does) instead of at ingest")
    ap.add_argument("--shared", type=Path, default=HERE.parent.parent / "shared" / "bench")
    args = ap.parse_args()
    if args.requests <= WARM_UP:
        ap.error(f"--requests must be more than {WARM_UP}")
    payloads = loadgen_requests(args.shared, args.requests)
    print(f"{args.requests} requests of 512 loadgen spans (64 whole traces), "
          f"{'deferred to the derivation worker' if args.deferred else 'derived at ingest'}; "
          f"after {WARM_UP} warm-up requests, per 10k spans: CPU-s of Python + PostgreSQL "
          f"backend, and MiB of WAL")
    per = 10_000 / 512
    for name, sql in [("as-is", ""), *args.variant]:
        with scratch_postgres("trajhub-request-cost-") as url:
            cpu, wal, counted = asyncio.run(measure(url, sql, payloads, args.deferred))
            disk = asyncio.run(_disk(url))
        print(f"variant {name}:")
        total = [0.0, 0.0, 0.0]
        for phase in cpu:
            py, pg = (v / counted * per / 1000 for v in cpu[phase])
            mib = wal[phase] / counted * per / 2**20
            total = [total[0] + py, total[1] + pg, total[2] + mib]
            print(f"  {phase:<9} python {py:6.3f}  postgres {pg:6.3f}  CPU-s   WAL {mib:6.1f} MiB")
        print(f"  {'total':<9} python {total[0]:6.3f}  postgres {total[1]:6.3f}  CPU-s   "
              f"WAL {total[2]:6.1f} MiB   (CPU {total[0] + total[1]:.3f} CPU-s per 10k spans)")
        spans = len(payloads) * 512
        for table, size in disk.items():
            print(f"  disk {table:<22} {size / spans:7.0f} B per span")
    return 0


async def _disk(url: str) -> dict[str, int]:
    conn = await asyncpg.connect(url)
    try:
        await conn.execute("CHECKPOINT")
        rows = await conn.fetch(
            "SELECT relname, pg_total_relation_size(c.oid) AS size FROM pg_class c "
            "JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = 'public' "
            "AND c.relkind = 'r' ORDER BY 2 DESC LIMIT 8")
        return {r["relname"]: int(r["size"]) for r in rows}
    finally:
        await conn.close()


if __name__ == "__main__":
    sys.exit(main())
