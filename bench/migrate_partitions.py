"""How long migration 0021 (time partitions) takes on an existing store: builds the schema as
the previous version left it (migrations before 0021), fills it by COPY with `--spans`
synthetic spans (`--spans-per-trace` per trace, `--body-bytes` of body each, received over
`--days` days) with a summary, a trajectory and its revision per trace, then times the
migration, which copies every row into the partitioned tables and builds their indexes. Then it
times dropping the two oldest partitions the way retention does (storage/retention.py).

    .venv/bin/python bench/migrate_partitions.py                      # 1M spans
    .venv/bin/python bench/migrate_partitions.py --spans 100000       # quicker
    .venv/bin/python bench/migrate_partitions.py --database-url postgresql://…/scratch  # wipes it

It uses an embedded PostgreSQL in a temporary directory unless `--database-url` is given (that
database must be empty or hold only trajhub's tables: they are dropped first).
"""

from __future__ import annotations

import argparse
import os
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import asyncpg
from _common import run_on_postgres

from trajhub.storage import retention, span_writer
from trajhub.storage.migrate import migrate

PROJECT = "bench-migrate"
CHUNK = 20_000


def span_rows(spans: int, per_trace: int, body_bytes: int, days: float,
              now: datetime) -> Iterator[tuple[Any, ...]]:
    noise = os.urandom(body_bytes + 4096)
    traces = spans // per_trace
    for t in range(traces):
        trace_id = f"{t:032x}"
        # traces spread evenly over the last `days` days, their spans a few seconds apart
        received = now - timedelta(days=days) + timedelta(days=days) * t / traces
        for s in range(per_trace):
            offset = (t * per_trace + s) % 4096
            yield (PROJECT, trace_id, f"{s:016x}", "" if s == 0 else f"{0:016x}",
                   "agent" if s == 0 else f"step {s}", 1, 1_700_000_000_000_000_000 + s,
                   1_700_000_000_000_100_000 + s, 0, "bench", None, 1,
                   '{"gen_ai.system": "openai", "llm.model_name": "gpt-4o"}',
                   noise[offset:offset + body_bytes], received + timedelta(seconds=s))


async def fill(conn: asyncpg.Connection, spans: int, per_trace: int, body_bytes: int,
               days: float) -> None:
    now = datetime.now(UTC)
    columns = (*span_writer.SPAN_COLUMNS, "received_at")
    batch: list[tuple[Any, ...]] = []
    for row in span_rows(spans, per_trace, body_bytes, days, now):
        batch.append(row)
        if len(batch) == CHUNK:
            await conn.copy_records_to_table("spans", records=batch, columns=columns)
            batch = []
    if batch:
        await conn.copy_records_to_table("spans", records=batch, columns=columns)
    await conn.execute(
        """INSERT INTO traces (project, trace_id, root_span_id, root_name, service_name,
                               start_ns, end_ns, span_count, error_count, last_received_at)
           SELECT project, trace_id, min(span_id), 'agent', 'bench', min(start_ns), max(end_ns),
                  count(*), 0, max(received_at)
           FROM spans GROUP BY project, trace_id""")
    # a trajectory per trace, with the summary columns the list reads and a ~2 KB document
    await conn.execute(
        """INSERT INTO trajectories (project, trace_id, status, revision, normalizer_version,
                                     settle_at, root_ended, document, explanation, framework,
                                     root_name, root_input, root_output, agent_names,
                                     tool_names, model_names, start_ns, step_count)
           SELECT project, trace_id, 'final', 1, 'bench', last_received_at, true,
                  repeat('{"step": "model"}', 120), '[]', 'langgraph', 'agent',
                  'what is the weather in paris ' || trace_id, 'sunny', '{agent}', '{search}',
                  '{gpt-4o}', start_ns, span_count
           FROM traces""")
    await conn.execute("VACUUM ANALYZE")
    await conn.execute("CHECKPOINT")


async def bench(conn: asyncpg.Connection, spans: int, per_trace: int, body_bytes: int,
                days: float) -> None:
    await conn.execute("DROP SCHEMA public CASCADE; CREATE SCHEMA public")
    await migrate(conn, before=21)
    started = time.perf_counter()
    await fill(conn, spans, per_trace, body_bytes, days)
    filled_s = time.perf_counter() - started
    size = await conn.fetchval("SELECT pg_size_pretty(pg_database_size(current_database()))")
    counts = {t: await conn.fetchval(f"SELECT count(*) FROM {t}")
              for t in ("spans", "traces", "trajectories", "trajectory_revisions")}
    print(f"filled in {filled_s:.0f} s: {counts}, database {size}")

    started = time.perf_counter()
    applied = await migrate(conn)
    migrate_s = time.perf_counter() - started
    assert applied == ["0021_time_partitions.sql"], applied
    after = {t: await conn.fetchval(f"SELECT count(*) FROM {t}") for t in counts}
    assert after == counts, (after, counts)
    parts = await retention.partitions(conn)
    print(f"migration 0021: {migrate_s:.1f} s for {counts['spans']:,} spans "
          f"({counts['spans'] / migrate_s:,.0f} spans/s), {len(parts)} partitions")

    # the oldest partition holds part of a day; the next one a whole day
    for part in parts[:2]:
        held = await conn.fetchval(f"SELECT count(*) FROM {part.name('spans')}")
        started = time.perf_counter()
        dropped = await retention.drop_partition(
            conn, part, lambda project: 1.0, datetime.now(UTC) + timedelta(days=days + 2))
        drop_s = time.perf_counter() - started
        assert dropped
        print(f"dropping the partition of {part.lower:%Y-%m-%d} ({held:,} spans): "
              f"{drop_s * 1000:.0f} ms")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--spans", type=int, default=1_000_000)
    parser.add_argument("--spans-per-trace", type=int, default=20)
    parser.add_argument("--body-bytes", type=int, default=2500)
    parser.add_argument("--days", type=float, default=7)
    run_on_postgres(parser, "trajhub-bench-migrate-", lambda conn, args: bench(
        conn, args.spans, args.spans_per_trace, args.body_bytes, args.days))


if __name__ == "__main__":
    main()
