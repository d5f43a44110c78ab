"""What storing free text's form costs a trajectory insert: the store's upsert of the root input
and output as derived (main before migration 0018) against the upsert as it is (cut to 100,000
characters in Python, lower-cased by PostgreSQL), alternating batch by batch on one table in a
scratch database, so both meet the same indexes, the same GIN pending list and the same
machine. Batches of 23 rows (one request's traces), each in its own transaction, commit
included. Prints per-trajectory medians and the mean of the paired differences.

    .venv/bin/python bench/store_text.py --database-url URL              # this workload's text
    .venv/bin/python bench/store_text.py --database-url URL --text long  # 6,000 characters
    .venv/bin/python bench/store_text.py --database-url URL --text huge --rows 920

The rows (documents, explanations, names, counts) are copied from `--project` of the store at
`--database-url`, e.g. one `bench/scale.py --keep` filled; `--text long` and `huge` replace their
root input and output with mixed-case prose. The scratch database is created beside it on the
same server and dropped at the end.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import re
import statistics
import time
import uuid

import asyncpg

from trajhub.storage import derivation_store
from trajhub.storage.derivation_store import TRAJECTORY_COLUMNS, TrajectoryWrite
from trajhub.storage.migrate import migrate

#: the statement before migration 0018: the text as derived
AS_DERIVED = re.sub(r"lower\((\(r\)\.\w+)\)", r"\1", derivation_store.STORE_TRAJECTORIES)
assert AS_DERIVED != derivation_store.STORE_TRAJECTORIES

_PROSE = ("The agent plans a Step and calls a Tool to look up the Weather forecast for the City "
          "then it adds numbers checks the Result summarises findings for the User and answers "
          "politely with Citations from the retrieved Documents about Travel budgets Zürich "
          "Ärger naïve café")
WORDS = _PROSE.split(" ")


def prose(rng: random.Random, size: int) -> str:
    out: list[str] = []
    n = 0
    while n < size:
        out.append(rng.choice(WORDS))
        n += len(out[-1]) + 1
    return " ".join(out)[:size]


def scratch_url(url: str, name: str) -> str:
    base, _, query = url.partition("?")
    return base.rsplit("/", 1)[0] + "/" + name + (("?" + query) if query else "")


async def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--database-url", required=True, help="a filled store (rows are read)")
    ap.add_argument("--project", default="scale-0")
    ap.add_argument("--rows", type=int, default=4600)
    ap.add_argument("--batch", type=int, default=23)
    ap.add_argument("--rounds", type=int, default=5, help="the first one warms up")
    ap.add_argument("--text", choices=("workload", "long", "huge"), default="workload")
    args = ap.parse_args()

    conn = await asyncpg.connect(args.database_url)
    columns = ", ".join(c if c != "model_usage" else "model_usage::text"
                        for c in TRAJECTORY_COLUMNS)
    records = await conn.fetch(f"SELECT {columns} FROM trajectories WHERE project = $1 "
                               f"ORDER BY trace_id LIMIT {args.rows}", args.project)
    if not records:
        raise SystemExit(f"no trajectories in project {args.project}")
    scratch = "store_text_" + uuid.uuid4().hex[:8]
    await conn.execute(f'CREATE DATABASE "{scratch}"')
    rng = random.Random(1)
    rows = []
    for r in records:
        # the columns before the summary's values (the fields but `values` and `chunks`)
        fixed = len(TrajectoryWrite._fields) - 2
        values = list(r.values())
        row = TrajectoryWrite(*values[:fixed], values=dict(zip(TRAJECTORY_COLUMNS[fixed:],
                                                               values[fixed:], strict=True)))
        if args.text == "long":
            row = row._replace(values={**row.values, "root_input": prose(rng, 4000),
                                       "root_output": prose(rng, 2000)})
        elif args.text == "huge":
            row = row._replace(values={**row.values, "root_input": prose(rng, 300_000),
                                       "root_output": prose(rng, 2000)})
        rows.append(row)
    try:
        target = await asyncpg.connect(scratch_url(args.database_url, scratch))
        try:
            await migrate(target)
            times: dict[str, list[float]] = {"as derived": [], "stored for search": []}
            k = 0
            for round_ in range(args.rounds):
                for i in range(0, len(rows), args.batch):
                    # ABBA order, so neither variant always goes first
                    variant = list(times)[(k + k // 2) % 2]
                    k += 1
                    batch = [r._replace(trace_id=uuid.uuid4().hex, project="bench")
                             for r in rows[i:i + args.batch]]
                    t0 = time.perf_counter()
                    async with target.transaction():
                        if variant == "as derived":
                            as_rows = await derivation_store.trajectory_rows(target, batch)
                            await target.execute(AS_DERIVED, as_rows,
                                                 [r.project for r in batch],
                                                 [r.trace_id for r in batch])
                        else:
                            await derivation_store.store(target, [], batch)
                    if round_ > 0:
                        times[variant].append((time.perf_counter() - t0) / len(batch) * 1e6)
        finally:
            await target.close()
    finally:
        await conn.execute(f'DROP DATABASE IF EXISTS "{scratch}" WITH (FORCE)')
        await conn.close()
    diffs = [b - a for a, b in zip(times["as derived"], times["stored for search"], strict=False)]
    print(json.dumps({
        "text": args.text,
        **{v: {"median_us": round(statistics.median(x)), "batches": len(x)}
           for v, x in times.items()},
        "difference_us": {"mean": round(statistics.mean(diffs), 1),
                          "stderr": round(statistics.stdev(diffs) / len(diffs) ** 0.5, 1),
                          "median": round(statistics.median(diffs), 1)},
    }))


if __name__ == "__main__":
    asyncio.run(main())
