"""trajhub against the reference "raw" sink, side by side in one sitting.

    .venv/bin/python bench/versus_sink.py [--rounds 3] [--spans 200000] [--concurrency 4]

The reference load generator and sink are `../shared/bench/loadgen.py` and `raw_sink.py`
(`--shared DIR` points elsewhere). Every round, on ONE PostgreSQL data directory that keeps
every earlier round's rows (so later rounds pay for bigger tables, like a running service):

1. `trajhub serve` (embedded PostgreSQL on that directory, tuned by trajhub); loadgen sends
   --spans spans over OTLP/HTTP protobuf, then over OTLP/gRPC, counting durable rows in
   `spans`; trajhub stops.
2. The same PostgreSQL directory under pgserver, a database `sink`; `raw_sink.py` (one
   process: parse, one COPY per request, acknowledge after commit); the same loadgen run over
   HTTP.

It prints each round and the medians: durable spans/s of trajhub (HTTP, gRPC) and the sink,
trajhub HTTP ÷ sink, gRPC ÷ HTTP. loadgen's traces are 8 spans each and travel whole, so
trajhub derives their trajectories while it ingests; the rows in `trajectories` are counted
too (derived by the time the last span was durable). Exit status 1 when loadgen reports a
lost or missing span.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import asyncpg
from _common import Server

HERE = Path(__file__).resolve().parent
SINK_PORT = 4319


def loadgen(shared: Path, target: str, protocol: str, dsn: str, sql: str,
            args: argparse.Namespace) -> dict[str, Any]:
    out = Path(tempfile.mkstemp(suffix=".json")[1])
    cmd = [sys.executable, str(shared / "loadgen.py"), "--target", target, "--protocol",
           protocol, "--spans", str(args.spans), "--concurrency", str(args.concurrency),
           "--verify-dsn", dsn, "--verify-sql", sql, "--poll-interval", "0.2",
           "--json-out", str(out), "--quiet"]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=900)
    if done.returncode != 0:
        raise SystemExit(f"loadgen failed ({done.returncode}):\n{done.stdout}\n{done.stderr}")
    result: dict[str, Any] = json.loads(out.read_text())
    out.unlink()
    return result


def trajhub_round(shared: Path, data_dir: Path, args: argparse.Namespace) -> dict[str, Any]:
    server = Server(data_dir=data_dir,
                    env={"TRAJHUB_DERIVE_AT_INGEST": args.derive_at_ingest})
    try:
        spans_sql = "select count(*) from spans where trace_id like '{prefix}%'"
        out: dict[str, Any] = {}
        for protocol, target in (("http", server.http_url), ("grpc", server.grpc_target)):
            run = loadgen(shared, target, protocol, server.database_url, spans_sql, args)
            out[protocol] = run
        async def trajectories() -> int:
            conn = await asyncpg.connect(server.database_url)
            try:
                return int(await conn.fetchval("SELECT count(*) FROM trajectories"))
            finally:
                await conn.close()

        out["trajectories"] = asyncio.run(trajectories())
        out["problems"] = server.problems()
    finally:
        code = server.stop()
    out["exit"] = code
    return out


def sink_round(shared: Path, data_dir: Path, args: argparse.Namespace) -> dict[str, Any]:
    import pgserver

    pg = pgserver.get_server(data_dir / "pgdata", cleanup_mode="stop")
    try:
        if "sink" not in pg.psql("SELECT datname FROM pg_database"):
            pg.psql("CREATE DATABASE sink")
        dsn = pg.get_uri("sink")
        # its log goes to a file: a pipe nobody reads would stall the sink once full
        log_path = data_dir / "raw_sink.log"
        with open(log_path, "wb") as log:
            sink = subprocess.Popen([sys.executable, str(shared / "raw_sink.py"), "--dsn", dsn,
                                     "--port", str(SINK_PORT), "--reset"],
                                    stdout=subprocess.DEVNULL, stderr=log)
        try:
            time.sleep(2)  # it creates its table, then listens
            if sink.poll() is not None:
                raise SystemExit(f"raw_sink.py exited: {log_path.read_text()[-2000:]}")
            return loadgen(shared, f"http://127.0.0.1:{SINK_PORT}", "http", dsn,
                           "select count(*) from spans where trace_id like '{prefix}%'", args)
        finally:
            sink.terminate()
            sink.wait(30)
    finally:
        pg.cleanup()


def rate(run: dict[str, Any]) -> float:
    return float(run.get("durable_throughput_spans_s") or 0.0)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--spans", type=int, default=200_000)
    ap.add_argument("--concurrency", type=int, default=4)
    ap.add_argument("--shared", type=Path, default=HERE.parent.parent / "shared" / "bench")
    ap.add_argument("--derive-at-ingest", choices=("true", "false"), default="true",
                    help="TRAJHUB_DERIVE_AT_INGEST of trajhub under test")
    ap.add_argument("--json", type=Path, help="write every round's figures here")
    args = ap.parse_args()
    data_dir = Path(tempfile.mkdtemp(prefix="trajhub-versus-sink-"))
    rounds: list[dict[str, Any]] = []
    failed = False
    try:
        for i in range(args.rounds):
            t = trajhub_round(args.shared, data_dir, args)
            s = sink_round(args.shared, data_dir, args)
            row = {"trajhub_http": rate(t["http"]), "trajhub_grpc": rate(t["grpc"]),
                   "sink_http": rate(s), "trajectories": t["trajectories"],
                   "trajhub_exit": t["exit"], "trajhub_problems": t["problems"][:5]}
            for name, run in (("trajhub_http", t["http"]), ("trajhub_grpc", t["grpc"]),
                              ("sink_http", s)):
                if run.get("spans_stored") != args.spans:
                    failed = True
                    row[f"{name}_count"] = run.get("spans_stored")
            rounds.append(row)
            print(f"round {i + 1}: trajhub HTTP {row['trajhub_http']:,.0f}  gRPC "
                  f"{row['trajhub_grpc']:,.0f}  sink {row['sink_http']:,.0f} spans/s  "
                  f"(HTTP ÷ sink {row['trajhub_http'] / max(row['sink_http'], 1):.2f}×; "
                  f"trajectories so far {row['trajectories']:,}; trajhub exit "
                  f"{row['trajhub_exit']}, {len(t['problems'])} warning lines)", flush=True)
    finally:
        shutil.rmtree(data_dir, ignore_errors=True)
    med = {k: statistics.median(r[k] for r in rounds)
           for k in ("trajhub_http", "trajhub_grpc", "sink_http")}
    ratios = [r["trajhub_http"] / max(r["sink_http"], 1) for r in rounds]
    print(f"\nmedians of {len(rounds)} rounds ({args.spans:,} spans per run, "
          f"{args.concurrency} senders):")
    print(f"  trajhub OTLP/HTTP  {med['trajhub_http']:>9,.0f} durable spans/s")
    print(f"  trajhub OTLP/gRPC  {med['trajhub_grpc']:>9,.0f} durable spans/s "
          f"({med['trajhub_grpc'] / max(med['trajhub_http'], 1):.2f}× HTTP)")
    print(f"  reference sink     {med['sink_http']:>9,.0f} durable spans/s")
    print(f"  trajhub HTTP ÷ sink: median of ratios {statistics.median(ratios):.2f}× "
          f"(rounds: {', '.join(f'{r:.2f}' for r in ratios)})")
    if args.json:
        args.json.write_text(json.dumps({"rounds": rounds, "medians": med,
                                         "ratios": ratios}, indent=2))
    if failed:
        print("a run lost or missed spans (see the *_count fields in --json)", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
