"""What one retention batch costs as the tables grow: fills the tables with synthetic traces
(`--spans-per-trace` spans each, received long ago) at each of `--sizes`, then times
`storage.retention.expire_batch` (500 traces with their spans, summaries and trajectories in
one transaction) a few times at each size and prints the figures. The batch finds its traces
through the (project, last_received_at) index and deletes by primary-key prefix, so its time
should stay flat while the table grows tenfold.

    .venv/bin/python bench/retention.py                        # 10k then 100k traces
    .venv/bin/python bench/retention.py --sizes 2000 20000     # quicker
    .venv/bin/python bench/retention.py --database-url postgresql://…/scratch   # wipes it

It uses an embedded PostgreSQL in a temporary directory unless `--database-url` is given; the
database's trajhub tables are emptied first.
"""

from __future__ import annotations

import argparse
import statistics
import time
from datetime import UTC, datetime, timedelta

import asyncpg
from _common import run_on_postgres

from trajhub.storage import retention
from trajhub.storage.migrate import migrate

PROJECT = "bench-retention"

_FILL_TRACES = """
INSERT INTO traces (project, trace_id, root_span_id, root_name, service_name, start_ns, end_ns,
                    span_count, error_count, last_received_at)
SELECT $1, md5(g::text), 'root', 'agent', 'bench', 0, 1, $4, 0,
       $3::timestamptz - make_interval(secs => ($2 + 1 - g))
FROM generate_series($5::bigint, $2::bigint) g
"""

_FILL_SPANS = """
INSERT INTO spans (project, trace_id, span_id, parent_span_id, name, kind, start_ns, end_ns,
                   status_code, service_name, resource_id, format, attributes, body)
SELECT $1, md5(g::text), lpad(to_hex(s), 16, '0'), '', 'op', 1, 0, 1, 0, 'bench', NULL, 1,
       '{}'::jsonb, repeat('x', 300)::bytea
FROM generate_series($3::bigint, $2::bigint) g, generate_series(1, $4) s
"""


# every trace's partition key (migration 0021), as ingest records it with its first span
_FILL_KEYS = """
INSERT INTO trace_keys (project, trace_id, first_seen)
SELECT $1, md5(g::text), trajhub_partition_time(now())
FROM generate_series($3::bigint, $2::bigint) g
"""


async def fill(conn: asyncpg.Connection, start: int, size: int, spans: int,
               received: datetime) -> None:
    async with conn.transaction():  # one now(): the rows' first_seen default is the keys'
        await conn.execute(_FILL_KEYS, PROJECT, size, start)
        await conn.execute(_FILL_TRACES, PROJECT, size, received, spans, start)
        await conn.execute(_FILL_SPANS, PROJECT, size, start, spans)
    await conn.execute("ANALYZE traces; ANALYZE spans")


async def bench(conn: asyncpg.Connection, sizes: list[int], spans: int, rounds: int) -> None:
    await migrate(conn)
    await conn.execute(
        "TRUNCATE spans, traces, trajectories, trace_changes, trace_keys CASCADE")
    received = datetime.now(UTC) - timedelta(days=30)
    cutoff = datetime.now(UTC) - timedelta(days=1)
    filled = 0
    print(f"{'traces':>10} {'spans':>11} {'batch (500 traces)':>20}   (table sizes before)")
    for size in sizes:
        # refill what earlier rounds deleted, then grow to `size`
        await fill(conn, filled + 1, size + retention.BATCH * rounds, spans, received)
        filled = size + retention.BATCH * rounds
        total = await conn.fetchval("SELECT count(*) FROM traces")
        span_total = await conn.fetchval("SELECT count(*) FROM spans")
        times = []
        for _ in range(rounds):
            started = time.perf_counter()
            deleted = await retention.expire_batch(conn, PROJECT, cutoff)
            times.append(time.perf_counter() - started)
            assert deleted == retention.BATCH, deleted
        print(f"{total:>10,} {span_total:>11,} "
              f"{statistics.median(times) * 1000:>15.0f} ms (median of {rounds})")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000])
    parser.add_argument("--spans-per-trace", type=int, default=10)
    parser.add_argument("--rounds", type=int, default=3)
    run_on_postgres(parser, "trajhub-bench-retention-", lambda conn, args: bench(
        conn, sorted(args.sizes), args.spans_per_trace, args.rounds))


if __name__ == "__main__":
    main()
