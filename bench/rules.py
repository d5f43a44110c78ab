"""Online evaluation rules' throughput: runs per second of the rule worker for a code evaluator.

    .venv/bin/python bench/rules.py [--requests 20] [--evaluator efficiency] [--config JSON]

In one process, no server: a fresh embedded PostgreSQL gets `--requests` loadgen requests
(512 spans, 64 whole traces each, from the reference load generator; `--shared DIR` points
elsewhere) stored and made final as ingest does it, then one rule with the evaluator is
backfilled over every trajectory, and the rule worker (trajhub/service/workers/rules.py) runs
the queue dry with its own claiming loop (BATCH runs held, CONCURRENCY evaluating). It prints
runs/s over the whole drain, and the CPU seconds per 1,000 runs of this process (the evaluator
and the worker's Python) and of PostgreSQL's backends. The figures move with the machine's
other work.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import asyncpg
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

from trajhub.service import derivation
from trajhub.service.config import Settings
from trajhub.service.ingest.decode import otlp_batch
from trajhub.service.workers import rules as rule_worker
from trajhub.storage import derivation_store, span_writer
from trajhub.storage import rules as rule_store
from trajhub.storage.migrate import migrate
from trajhub.storage.trajectory_reads import TrajectoryFilter

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from _common import loadgen_requests, scratch_postgres  # noqa: E402

PROJECT = "rules-bench"


def _backends_cpu_ns(pids: list[int]) -> int:
    total = 0
    for pid in pids:
        try:
            with open(f"/proc/{pid}/schedstat") as f:
                total += int(f.read().split()[0])
        except OSError:
            pass
    return total


async def store(url: str, payloads: list[bytes]) -> int:
    """Ingest and finalize the payloads as ingest does; how many trajectories are final."""
    conn = await asyncpg.connect(url)
    try:
        await migrate(conn)
        await span_writer.prepare(conn)
        for body in payloads:
            batch = otlp_batch(ExportTraceServiceRequest.FromString(body), PROJECT)
            received = datetime.now(UTC)
            derived = {key: derivation.derive_trace(*key, [r._asdict() for r in rows],
                                                    batch.resources, received,
                                                    timedelta(0), batch.parsed)
                       for key, rows in derivation.whole_traces(batch.rows.values()).items()}
            async with conn.transaction():
                await span_writer.write_spans(conn, batch.rows.values(), batch.resources)
                stored = await derivation_store.claim_whole(
                    conn, {k: r[0].values["span_count"] for k, r in derived.items()})
                await derivation.store_results(conn, [derived[k] for k in stored])
        while await derivation_store.finalize_settled(conn, 300.0):
            pass
        return int(await conn.fetchval(
            "SELECT count(*) FROM trajectories WHERE status = 'final'"))
    finally:
        await conn.close()


async def drain(url: str, evaluator: str, config: dict[str, object]) -> tuple[int, float,
                                                                             float, float]:
    """Backfill one rule over everything and run the queue dry: (runs, seconds, this
    process's CPU s, PostgreSQL backends' CPU s)."""
    pool = await asyncpg.create_pool(url, min_size=12, max_size=12)
    assert pool is not None
    try:
        async with pool.acquire() as conn:
            rule = await rule_store.create(conn, PROJECT, {
                "name": "bench", "evaluator": evaluator, "config": config, "filter": {},
                "sample_rate": 1.0, "enabled": True})
            assert rule is not None
            job = await rule_store.backfill(conn, PROJECT, rule.id, TrajectoryFilter())
        pids = [r["pid"] for r in await pool.fetch(
            "SELECT pid FROM pg_stat_activity WHERE datname = current_database()")]
        worker = rule_worker.RuleWorker(pool, Settings())
        started, cpu, backends = time.monotonic(), time.process_time(), _backends_cpu_ns(pids)
        task = asyncio.create_task(worker.run())
        while await pool.fetchval("SELECT count(*) FROM rule_runs"):
            await asyncio.sleep(0.05)
        elapsed = time.monotonic() - started
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
        scored = int(await pool.fetchval(
            "SELECT count(*) FROM scores WHERE rule_id = $1", rule.id))
        assert scored == job["total_count"], (scored, job["total_count"])
        return (scored, elapsed, time.process_time() - cpu,
                (_backends_cpu_ns(pids) - backends) / 1e9)
    finally:
        await pool.close()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--requests", type=int, default=20, help="512-span requests to store")
    ap.add_argument("--evaluator", default="efficiency")
    ap.add_argument("--config", default='{"max_steps": 50, "max_tokens": 100000}')
    ap.add_argument("--shared", type=Path, default=HERE.parent.parent / "shared" / "bench")
    args = ap.parse_args()
    payloads = loadgen_requests(args.shared, args.requests)
    with scratch_postgres("trajhub-rules-bench-") as url:
        final = asyncio.run(store(url, payloads))
        runs, seconds, cpu, backends = asyncio.run(
            drain(url, args.evaluator, json.loads(args.config)))
    print(f"{final} final trajectories; rule {args.evaluator} {args.config}: {runs} runs in "
          f"{seconds:.2f} s = {runs / seconds:.0f} runs/s; CPU per 1,000 runs: worker "
          f"{cpu / runs * 1000:.2f} s, PostgreSQL {backends / runs * 1000:.2f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
