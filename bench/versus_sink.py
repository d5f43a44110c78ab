"""trajhub against the reference "raw" sink, side by side in one sitting.

    .venv/bin/python bench/versus_sink.py [--rounds 3] [--spans 100000] [--concurrency 4]
        [--measure burst|pipeline|both] [--derive-at-ingest auto|true|false] [--probe range|like]
        [--gap SECONDS]

Two ratios (../shared/bench/README.md, "Two ratios"), each against the sink's durable rate of
the same round:
- burst: spans durable (counted in `spans`) per second: what an SDK's export queue feels;
- pipeline: spans whose trace has a final trajectory, per second, from the first send to the
  last final trajectory (loadgen's traces are 8 spans each): what the product costs end to end.
  The run also reports the time from the last acknowledgement to the last final trajectory.

The reference load generator and sink are `../shared/bench/loadgen.py` and `raw_sink.py`
(`--shared DIR` points elsewhere). Every round, on ONE PostgreSQL data directory that keeps
every earlier round's rows (so later rounds pay for bigger tables, like a running service):

1. `trajhub serve` (embedded PostgreSQL on that directory, tuned by trajhub); loadgen sends
   --spans spans over OTLP/HTTP protobuf and over OTLP/gRPC, counting durable rows in `spans`;
   trajhub stops. The protocols alternate which goes first, and each starts on an idle server:
   after a run, trajhub's leftover work (queued traces, open trajectories, words for free text
   not yet filled, then a vacuum or analyze still running) is waited out, and then the store
   is vacuumed and analyzed (`maintain`, its time and CPU printed apart), so the second
   protocol pays neither for the first one's derivation nor for its maintenance.
2. The same PostgreSQL directory under pgserver, a database `sink`; `raw_sink.py` (one
   process: parse, one COPY per request, acknowledge after commit); the same loadgen run over
   HTTP.

It prints each run and the medians: durable spans/s of trajhub (HTTP, gRPC) and the sink,
trajhub HTTP ÷ sink, gRPC ÷ HTTP. For each run it also prints the CPU seconds per 10k spans
of the load generator (the client: gRPC serializes its messages, HTTP sends bytes) and of the
server (trajhub's processes, or the sink's, and their PostgreSQL), and what PostgreSQL did
meanwhile (checkpoints, autovacuum and autoanalyze runs, WAL written): the figures that say
why a later round is slower than the first. loadgen's traces are 8 spans each and travel
whole, so trajhub derives their trajectories while it ingests; the rows in `trajectories` are
counted too. Exit status 1 when loadgen reports a lost or missing span.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import asyncpg
from _common import Server, machine_busy

HERE = Path(__file__).resolve().parent
SINK_PORT = 4319


def loadgen_command(shared: Path, target: str, protocol: str, dsn: str, sql: str,
                    args: argparse.Namespace, out: Path) -> list[str]:
    """The loadgen run of a round (--spans and --concurrency from `args`), counting `sql`'s
    rows and writing its result to `out`."""
    cmd = [sys.executable, str(shared / "loadgen.py"), "--target", target, "--protocol",
           protocol, "--spans", str(args.spans), "--concurrency", str(args.concurrency),
           "--verify-dsn", dsn, "--verify-sql", sql, "--poll-interval", "0.2",
           "--json-out", str(out)]
    if "trajectories" in sql:  # trajectories are final a settle period after their spans
        cmd += ["--settle", "15"]
    return cmd


def loadgen(shared: Path, target: str, protocol: str, dsn: str, sql: str,
            args: argparse.Namespace) -> dict[str, Any]:
    out = Path(tempfile.mkstemp(suffix=".json")[1])
    cmd = [*loadgen_command(shared, target, protocol, dsn, sql, args, out), "--quiet"]
    before = _children_cpu()
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=900)
    if done.returncode != 0:
        raise SystemExit(f"loadgen failed ({done.returncode}):\n{done.stdout}\n{done.stderr}")
    result: dict[str, Any] = json.loads(out.read_text())
    result["client_cpu_s"] = _children_cpu() - before
    out.unlink()
    return result


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)  # of the waited-for loadgen runs
    return usage.ru_utime + usage.ru_stime


# PostgreSQL's background activity during a run (cumulative counters; a run reports deltas;
# autovacuum's, by table, are `_AUTOVACUUMED`)
_PG_ACTIVITY = """
SELECT (SELECT checkpoints_timed + checkpoints_req FROM pg_stat_bgwriter) AS checkpoints,
       pg_current_wal_lsn() - '0/0'::pg_lsn AS wal_bytes,
       (SELECT sum(pg_total_relation_size(relid)) FROM pg_partition_tree('spans')) AS spans_bytes
"""
# trajhub's work left after the last ack: queued traces, trajectories not yet final, and
# trajectories whose words for free text are not filled yet (migration 0068)
_LEFTOVER = """
SELECT (SELECT count(*) FROM trace_changes) + (SELECT count(*) FROM open_trajectories)
       + (SELECT count(*) FROM trajectory_words_queue)
"""


async def _rows(dsn: str, sql: str) -> list[asyncpg.Record]:
    conn = await asyncpg.connect(dsn)
    try:
        return await conn.fetch(sql)
    finally:
        await conn.close()


async def _fetch(dsn: str, sql: str) -> dict[str, Any]:
    rows = await _rows(dsn, sql)
    return dict(rows[0]) if rows else {}


def pg_activity(dsn: str) -> dict[str, float]:
    # a counter of a table the database does not have (the sink has no trajhub tables) is NULL
    return {k: float(v or 0) for k, v in asyncio.run(_fetch(dsn, _PG_ACTIVITY)).items()}


# which tables autovacuum visited: (vacuums, analyzes) by table
_AUTOVACUUMED = """
SELECT relname, autovacuum_count, autoanalyze_count FROM pg_stat_all_tables
WHERE autovacuum_count + autoanalyze_count > 0
"""


def autovacuumed(dsn: str) -> dict[str, tuple[int, int]]:
    return {r[0]: (r[1], r[2]) for r in asyncio.run(_rows(dsn, _AUTOVACUUMED))}


# the vacuums and analyzes still running when a run ends, autovacuum's or trajhub's, and for
# how long: pg_stat_all_tables counts one only once it has finished, so one that began during
# the run and ends after it is not among the tables the run's line says autovacuum visited
_STILL_RUNNING = """
SELECT p.relid::regclass::text AS relation, p.kind, a.backend_type,
       extract(epoch FROM now() - a.query_start)::float8 AS running_s
FROM (SELECT pid, relid, 'vacuum' AS kind FROM pg_stat_progress_vacuum
      WHERE datname = current_database()
      UNION ALL
      SELECT pid, relid, 'analyze' FROM pg_stat_progress_analyze
      WHERE datname = current_database()) p
JOIN pg_stat_activity a ON a.pid = p.pid
"""


def still_running(dsn: str) -> list[str]:
    return [f"{r['relation']} {r['kind']} ({r['backend_type']}, for {r['running_s']:.1f} s)"
            for r in asyncio.run(_rows(dsn, _STILL_RUNNING))]


_DISK = """
SELECT coalesce(sum(pg_total_relation_size(c.oid)), 0) FROM pg_class c
JOIN pg_namespace n ON n.oid = c.relnamespace
WHERE n.nspname = 'public' AND c.relkind = 'r'
"""


def disk_bytes(dsn: str) -> float:
    """Bytes per stored span: every table of the database with its indexes and TOAST (after
    a CHECKPOINT), ÷ the rows in `spans`."""
    async def size() -> float:
        conn = await asyncpg.connect(dsn)
        try:
            await conn.execute("CHECKPOINT")
            spans = int(await conn.fetchval("SELECT count(*) FROM spans"))
            return float(await conn.fetchval(_DISK)) / max(spans, 1)
        finally:
            await conn.close()
    return asyncio.run(size())


#: the machine counts as quiet below this share of its cores busy, over a second
QUIET_PERCENT = 10.0
_VACUUMING = """
SELECT (SELECT count(*) FROM pg_stat_progress_vacuum)
       + (SELECT count(*) FROM pg_stat_progress_analyze)
"""


def wait_idle(dsn: str, gap: float | None = None, timeout: float = 600) -> float:
    """Seconds until trajhub has no work left over (polled every 0.5 s), then no vacuum or
    analyze runs and the machine is quiet (under QUIET_PERCENT of its cores busy), over two
    seconds in a row: a vacuum or analyze, autovacuum's or trajhub's own
    (storage/search_words.py), is the previous run's work too, and would otherwise fall into
    the next run. With `gap`, only the leftover work is waited out, then `gap` seconds,
    whatever runs meanwhile: bursts with quiet spells of that length between them."""
    import psutil

    started = time.monotonic()
    while time.monotonic() - started < timeout:
        left = asyncio.run(_fetch(dsn, _LEFTOVER))
        if not next(iter(left.values()), 0):
            break
        time.sleep(0.5)
    if gap is not None:
        time.sleep(gap)
        return time.monotonic() - started
    quiet = 0
    while quiet < 2 and time.monotonic() - started < timeout:
        busy = psutil.cpu_percent(interval=1.0)
        vacuuming = next(iter(asyncio.run(_fetch(dsn, _VACUUMING)).values()), 0)
        quiet = quiet + 1 if busy < QUIET_PERCENT and not vacuuming else 0
    return time.monotonic() - started


def maintain(dsn: str) -> dict[str, float]:
    """Vacuum and analyze the whole store, as autovacuum would after the run just waited out;
    returns its seconds and the machine's busy CPU-s over them. Autovacuum's launcher looks at
    a database once a minute, so after a run shorter than that it has not started when the
    machine is quiet: the next run, the other protocol's, paid for vacuuming this one's rows
    (bench/README.md, "Current figures"). Done here, each run starts on a store with its
    maintenance done, as the sink's does, and the cost is reported apart."""
    busy_before, started = machine_busy(), time.monotonic()
    asyncio.run(_rows(dsn, "VACUUM (ANALYZE)"))
    return {"seconds": time.monotonic() - started,
            "machine_cpu_s": machine_busy()[0] - busy_before[0]}


def sink_cpu(sink_pid: int, pgdata: Path) -> float:
    """CPU seconds so far of the sink and of its PostgreSQL (the postmaster on `pgdata` and
    its children), as trajhub's are counted (bench/_common.py, Server.process_tree_cpu)."""
    import psutil
    from pgserver.utils import PostmasterInfo

    info = PostmasterInfo.read_from_pgdata(pgdata)
    total = 0.0
    for pid in (sink_pid, info.pid if info else None):
        if pid is None:
            continue
        try:
            root = psutil.Process(pid)
            for p in (root, *root.children(recursive=True)):
                t = p.cpu_times()
                total += t.user + t.system
        except psutil.NoSuchProcess:
            pass
    return total


def measured_run(shared: Path, target: str, protocol: str, dsn: str, sql: str,
                 args: argparse.Namespace, server_cpu: Callable[[], float]) -> dict[str, Any]:
    """One loadgen run with the server's CPU (trajhub and its PostgreSQL, or the sink and its
    PostgreSQL) and PostgreSQL's background activity over it."""
    pg_before = pg_activity(dsn)
    visited_before = autovacuumed(dsn)
    cpu_before = server_cpu()
    busy_before = machine_busy()
    run = loadgen(shared, target, protocol, dsn, sql, args)
    busy_after = machine_busy()
    run["server_cpu_s"] = server_cpu() - cpu_before
    # read after the run's figures, which its connection is not to count in
    run["still_running"] = still_running(dsn)
    # how full the machine was over the run (loadgen's start-up included)
    run["machine_busy"] = ((busy_after[0] - busy_before[0])
                           / max(busy_after[1] - busy_before[1], 1e-9))
    run["pg"] = {k: v - pg_before.get(k, 0.0) for k, v in pg_activity(dsn).items()}
    run["pg"]["spans_bytes"] = pg_before["spans_bytes"]  # the table's size when the run began
    visited: dict[str, list[int]] = {}  # the tables autovacuum visited: [vacuums, analyzes]
    for name, (v, a) in autovacuumed(dsn).items():
        v0, a0 = visited_before.get(name, (0, 0))
        if (v, a) != (v0, a0):
            visited[name] = [v - v0, a - a0]
    run["autovacuumed"] = visited
    run["pg"]["autovacuums"] = float(sum(v for v, _ in visited.values()))
    run["pg"]["autoanalyzes"] = float(sum(a for _, a in visited.values()))
    return run


# The probes loadgen polls every 0.2 s to count what is durable. `like`, as
# ../shared/bench/README.md writes them, scans the whole table on each poll: trace_id is not
# the first key column of trajhub's tables, and under the C.UTF-8 collation LIKE uses no
# index on either side. On a store that keeps every round's rows, each poll of trajhub's
# `spans` costs more than the last (bench/README.md, "Running the benchmarks"), and the sink
# resets its table each round: the probe, not the server, slowed later rounds.
# `range` asks for the same rows (loadgen's trace ids are its 8-hex-digit prefix followed by
# lowercase hex, and C.UTF-8 compares by code point, so "starts with P" is P <= id < P || 'g')
# through each side's primary key: trajhub's is (project, trace_id, ...), and loadgen sends
# without a project header, so its spans are in project `default`; the sink's is
# (trace_id, span_id).
_RANGE = "trace_id >= '{prefix}' and trace_id < '{prefix}g'"
PROBES = {
    "like": {"spans": "select count(*) from spans where trace_id like '{prefix}%'",
             # loadgen sends 8 spans per trace, whole: a final trajectory stands for 8 spans
             "pipeline": ("select 8*count(*) from trajectories where status = 'final' "
                          "and trace_id like '{prefix}%'"),
             "sink": "select count(*) from spans where trace_id like '{prefix}%'"},
    "range": {"spans": f"select count(*) from spans where project = 'default' and {_RANGE}",
              "pipeline": ("select 8*count(*) from trajectories where project = 'default' "
                           f"and status = 'final' and {_RANGE}"),
              "sink": f"select count(*) from spans where {_RANGE}"},
}


def trajhub_round(shared: Path, data_dir: Path, args: argparse.Namespace, index: int
                  ) -> dict[str, Any]:
    env = {"TRAJHUB_DERIVE_AT_INGEST": args.derive_at_ingest}
    if args.derivation_workers is not None:
        env["TRAJHUB_DERIVATION_WORKERS"] = str(args.derivation_workers)
    server = Server(data_dir=data_dir, env=env)
    try:
        out: dict[str, Any] = {}
        runs = [("http", server.http), ("grpc", server.grpc)]
        spans_sql, pipeline_sql = PROBES[args.probe]["spans"], PROBES[args.probe]["pipeline"]
        measures = {"burst": [("", spans_sql)], "pipeline": [("pipeline_", pipeline_sql)],
                    "both": [("", spans_sql), ("pipeline_", pipeline_sql)]}[args.measure]
        for protocol, target in runs if index % 2 == 0 else runs[::-1]:
            for prefix, sql in measures:
                name = prefix + protocol
                out[name] = measured_run(shared, target, protocol, server.database_url, sql,
                                         args, lambda: sum(server.process_tree_cpu().values()))
                out[name]["idle_after_s"] = wait_idle(server.database_url, args.gap)
                if args.gap is None:
                    out[name]["maintenance"] = maintain(server.database_url)

        async def trajectories() -> int:
            conn = await asyncpg.connect(server.database_url)
            try:
                return int(await conn.fetchval("SELECT count(*) FROM trajectories"))
            finally:
                await conn.close()

        out["trajectories"] = asyncio.run(trajectories())
        out["disk_bytes"] = disk_bytes(server.database_url)
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
            run = measured_run(shared, f"http://127.0.0.1:{SINK_PORT}", "http", dsn,
                               PROBES[args.probe]["sink"], args,
                               lambda: sink_cpu(sink.pid, data_dir / "pgdata"))
            run["disk_bytes"] = disk_bytes(dsn)  # raw_sink.py --reset: this run's rows only
            return run
        finally:
            sink.terminate()
            sink.wait(30)
    finally:
        pg.cleanup()


def describe(run: dict[str, Any], spans: int) -> str:
    """CPU per 10k spans of client and server, and PostgreSQL's background work in the run."""
    per = 10_000 / max(spans, 1)
    pg = run["pg"]
    idle = (f"; idle {run['idle_after_s']:.1f} s after" if "idle_after_s" in run else "")
    if "maintenance" in run:
        idle += (f"; then VACUUM (ANALYZE) {run['maintenance']['seconds']:.1f} s, "
                 f"{run['maintenance']['machine_cpu_s'] * per:.2f} CPU-s per 10k spans")
    visited = "".join(f"; {name} {v} vacuums {a} analyzes"
                      for name, (v, a) in sorted(run.get("autovacuumed", {}).items()))
    return (f"{rate(run):>9,.0f} spans/s, machine {run['machine_busy']:.0%} busy; per 10k "
            f"spans: loadgen "
            f"{run['client_cpu_s'] * per:.2f} CPU-s, server {run['server_cpu_s'] * per:.2f} "
            f"CPU-s, WAL {pg['wal_bytes'] * per / 2**20:.0f} MiB; during the run: "
            f"{pg['checkpoints']:.0f} checkpoints, {pg['autovacuums']:.0f} autovacuums, "
            f"{pg['autoanalyzes']:.0f} autoanalyzes; spans table "
            f"{pg['spans_bytes'] / 2**20:,.0f} MiB at the start{idle}{visited}"
            + "".join(f"; at its end still running: {r}" for r in run.get("still_running", [])))


def rate(run: dict[str, Any]) -> float:
    return float(run.get("durable_throughput_spans_s") or 0.0)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--spans", type=int, default=100_000)
    ap.add_argument("--concurrency", type=int, default=4)
    ap.add_argument("--shared", type=Path, default=HERE.parent.parent / "shared" / "bench")
    ap.add_argument("--derive-at-ingest", choices=("auto", "true", "false"), default="auto",
                    help="TRAJHUB_DERIVE_AT_INGEST of trajhub under test")
    ap.add_argument("--derivation-workers", type=int,
                    help="TRAJHUB_DERIVATION_WORKERS of trajhub under test (default: its own)")
    ap.add_argument("--measure", choices=("burst", "pipeline", "both"), default="both",
                    help="burst: spans durable per second; pipeline: spans with a final "
                         "trajectory per second; both: one run of each per protocol")
    ap.add_argument("--probe", choices=tuple(PROBES), default="range",
                    help="how loadgen counts durable rows: range (each side's primary key) or "
                         "like (a scan, as ../shared/bench/README.md writes it)")
    ap.add_argument("--gap", type=float, help=(
        "between trajhub's runs, wait for its queues and then this many seconds, instead of "
        "for a quiet machine (a vacuum or autovacuum still running falls into the next run)"))
    ap.add_argument("--json", type=Path, help="write every round's figures here")
    args = ap.parse_args()
    data_dir = Path(tempfile.mkdtemp(prefix="trajhub-versus-sink-"))
    rounds: list[dict[str, Any]] = []
    failed = False
    try:
        for i in range(args.rounds):
            t = trajhub_round(args.shared, data_dir, args, i)
            s = sink_round(args.shared, data_dir, args)
            runs = {f"trajhub_{name}": run for name, run in t.items() if name.endswith(("http",
                                                                                    "grpc"))}
            runs["sink_http"] = s
            row: dict[str, Any] = {name: rate(run) for name, run in runs.items()}
            row.update(trajectories=t["trajectories"], trajhub_exit=t["exit"],
                       trajhub_problems=t["problems"][:5])
            row["trajhub_disk_per_span"] = t["disk_bytes"]
            row["sink_disk_per_span"] = s["disk_bytes"]
            for name, run in runs.items():
                if run.get("spans_stored") != args.spans:
                    failed = True
                    row[f"{name}_count"] = run.get("spans_stored")
                if name.startswith("trajhub_pipeline_"):
                    # last ack → last final trajectory (± loadgen's poll interval)
                    row[f"{name}_final_after_last_ack_s"] = run.get(
                        "storage_lag_after_last_ack_s")
            rounds.append(row)
            sink = max(row["sink_http"], 1)
            print(f"round {i + 1}: " + "  ".join(
                f"{name[8:] if name.startswith('trajhub_') else name} {row[name]:,.0f}"
                f" ({row[name] / sink:.2f}×)" for name in runs)
                + f" spans/s; trajectories so far {row['trajectories']:,}; trajhub exit "
                  f"{row['trajhub_exit']}, {len(t['problems'])} warning lines", flush=True)
            print(f"  disk per stored span: trajhub {row['trajhub_disk_per_span']:,.0f} B, sink "
                  f"{row['sink_disk_per_span']:,.0f} B "
                  f"({row['trajhub_disk_per_span'] / max(row['sink_disk_per_span'], 1):.2f}×)")
            for name, run in runs.items():
                lag = row.get(f"{name}_final_after_last_ack_s")
                print(f"  {name:<22} {describe(run, args.spans)}"
                      + (f"; last final trajectory {lag:.1f} s after the last ack"
                         if lag is not None else ""), flush=True)
                row[name + "_detail"] = {
                    k: run.get(k) for k in ("client_cpu_s", "server_cpu_s", "machine_busy", "pg",
                                            "idle_after_s", "maintenance",
                                            "storage_lag_after_last_ack_s")}
    finally:
        shutil.rmtree(data_dir, ignore_errors=True)
    names = [n for n in rounds[0] if n.startswith(("trajhub_", "sink_"))
             and not n.endswith(("_s", "_per_span")) and isinstance(rounds[0][n], float)]
    med = {k: statistics.median(r[k] for r in rounds) for k in names}
    print(f"\nmedians of {len(rounds)} rounds ({args.spans:,} spans per run, "
          f"{args.concurrency} senders, TRAJHUB_DERIVE_AT_INGEST={args.derive_at_ingest}):")
    ratios: dict[str, list[float]] = {}
    for name in names:
        if name == "sink_http":
            continue
        ratios[name] = [r[name] / max(r["sink_http"], 1) for r in rounds]
        kind = "pipeline" if "pipeline" in name else "burst"
        lags = [r[f"{name}_final_after_last_ack_s"] for r in rounds
                if r.get(f"{name}_final_after_last_ack_s") is not None]
        print(f"  {kind:<8} {name[8:]:<14} {med[name]:>9,.0f} spans/s   ÷ sink: median of "
              f"ratios {statistics.median(ratios[name]):.2f}× (rounds: "
              f"{', '.join(f'{r:.2f}' for r in ratios[name])})"
              + (f"; last final trajectory {statistics.median(lags):.1f} s after the last ack"
                 if lags else ""))
    print(f"  reference sink          {med['sink_http']:>9,.0f} durable spans/s")
    disk = [r["trajhub_disk_per_span"] / max(r["sink_disk_per_span"], 1) for r in rounds]
    print(f"  disk per stored span ÷ the sink's: {statistics.median(disk):.2f}×")
    if args.json:
        args.json.write_text(json.dumps({"rounds": rounds, "medians": med,
                                         "ratios": ratios}, indent=2))
    if failed:
        print("a run lost or missed spans (see the *_count fields in --json)", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
