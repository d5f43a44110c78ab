"""Where a pipeline run's time goes: the machine's cores, by process, every quarter second.

    .venv/bin/python bench/pipeline_timeline.py [--protocol http|grpc] [--spans 100000]
        [--concurrency 4] [--database-url URL]

One `versus_sink.py` pipeline run (`../shared/bench/loadgen.py` with --concurrency senders, the
range probe counting spans whose trace has a final trajectory; `--shared DIR` points elsewhere)
against a
fresh `trajhub serve`, while this script samples every --interval seconds how many cores were
busy and which processes used them: the receiver (trajhub's own process), the ingest workers,
the derivation workers (niced, so told apart by their priority), PostgreSQL, and the rest (the
load generator). Beside each sample, the spans loadgen had counted by then. Then, for the two
phases of the run, the burst (first send to last acknowledgement) and the drain (last
acknowledgement to last final trajectory): how busy the machine was, and the CPU-s per 10k
spans of each component.

The embedded PostgreSQL has no pg_stat_statements. With --database-url naming a database of
a PostgreSQL that preloads it (`shared_preload_libraries = 'pg_stat_statements'`), the script
also prints the drain's statements by total time: its statistics are reset at the last
acknowledgement.
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, NamedTuple

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import asyncpg
import psutil
from _common import BackgroundSampler, Server, machine_busy
from versus_sink import PROBES, loadgen_command

HERE = Path(__file__).resolve().parent
COMPONENTS = ("receiver", "ingest", "derivation", "postgres")


class CpuSample(NamedTuple):
    at: float  # time.monotonic()
    #: the machine's busy and total CPU seconds so far, summed over its cores
    busy: float
    total: float
    #: each component's CPU seconds so far
    used: dict[str, float]


class Sampler(BackgroundSampler):
    """CPU seconds so far of the machine and of each component, every `interval` seconds."""

    def __init__(self, server: Server, interval: float) -> None:
        super().__init__(interval)
        self.root = psutil.Process(server.proc.pid)
        self.postmaster = psutil.Process(server.postmaster_pid)
        self.samples: list[CpuSample] = []

    def _cpu(self) -> dict[str, float]:
        out = dict.fromkeys(COMPONENTS, 0.0)

        def add(component: str, process: psutil.Process) -> None:
            try:
                t = process.cpu_times()
                out[component] += t.user + t.system
            except psutil.NoSuchProcess:
                pass

        add("receiver", self.root)
        for child in self.root.children(recursive=True):
            try:  # the derivation workers lower their priority (service/workers/derivation.py)
                niced = child.nice() > 0
            except psutil.NoSuchProcess:
                continue
            add("derivation" if niced else "ingest", child)
        for process in (self.postmaster, *self.postmaster.children(recursive=True)):
            add("postgres", process)
        return out

    def sample(self) -> None:
        started = time.monotonic()
        busy, total = machine_busy()
        self.samples.append(CpuSample(started, busy, total, self._cpu()))


async def _reset_statements(url: str) -> None:
    conn = await asyncpg.connect(url)
    try:
        await conn.execute("CREATE EXTENSION IF NOT EXISTS pg_stat_statements")
        await conn.execute("SELECT pg_stat_statements_reset()")
    finally:
        await conn.close()


async def _top_statements(url: str) -> list[asyncpg.Record]:
    conn = await asyncpg.connect(url)
    try:
        return list(await conn.fetch(
            "SELECT calls, total_exec_time, rows, "
            "left(regexp_replace(query, '\\s+', ' ', 'g'), 110) AS query "
            "FROM pg_stat_statements ORDER BY total_exec_time DESC LIMIT 12"))
    finally:
        await conn.close()


async def _postmaster(url: str) -> int:
    conn = await asyncpg.connect(url)
    try:
        backend = int(await conn.fetchval("SELECT pg_backend_pid()"))
        return int(psutil.Process(backend).ppid())
    finally:
        await conn.close()


def _loadgen(shared: Path, server: Server, args: argparse.Namespace
             ) -> tuple[dict[str, Any], float, float]:
    """loadgen's result, and when (monotonic) it began sending and got its last
    acknowledgement (read from its progress lines)."""
    out = Path(tempfile.mkstemp(suffix=".json")[1])
    target = server.http if args.protocol == "http" else server.grpc
    cmd = loadgen_command(shared, target, args.protocol, server.database_url,
                          PROBES["range"]["pipeline"], args, out)
    began = acked = 0.0
    with subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                          text=True) as proc:
        assert proc.stderr is not None
        for line in proc.stderr:
            if line.startswith("run "):  # printed just before the first send
                began = time.monotonic()
            elif line.startswith("sending done"):
                acked = time.monotonic()
                if args.database_url:
                    asyncio.run(_reset_statements(server.database_url))
    if proc.returncode != 0:
        raise SystemExit(f"loadgen failed ({proc.returncode})")
    result: dict[str, Any] = json.loads(out.read_text())
    out.unlink()
    return result, began, acked


def _phase(samples: list[CpuSample], start: float, end: float, spans: int) -> str:
    inside = [s for s in samples if start <= s.at <= end]
    if len(inside) < 2:
        return "too short to sample"
    first, last = inside[0], inside[-1]
    busy = (last.busy - first.busy) / max(last.total - first.total, 1e-9)
    per = 10_000 / spans
    parts = ", ".join(f"{c} {(last.used[c] - first.used[c]) * per:.2f}" for c in COMPONENTS)
    return f"{last.at - first.at:5.1f} s, machine {busy:.0%} busy; CPU-s per 10k spans: {parts}"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--protocol", choices=("http", "grpc"), default="http")
    ap.add_argument("--spans", type=int, default=100_000)
    ap.add_argument("--concurrency", type=int, default=4)
    ap.add_argument("--interval", type=float, default=0.25, help="seconds between samples")
    ap.add_argument("--database-url", default="",
                    help="a database of a PostgreSQL with pg_stat_statements (default: embedded)")
    ap.add_argument("--shared", type=Path, default=HERE.parent.parent / "shared" / "bench")
    args = ap.parse_args()
    server = Server(database_url=args.database_url)
    try:
        if args.database_url:  # not embedded: the postmaster is a backend's parent
            server.postmaster_pid = asyncio.run(_postmaster(args.database_url))
        time.sleep(2)  # the workers start
        with Sampler(server, args.interval) as sampler:
            result, began, acked = _loadgen(args.shared, server, args)
            time.sleep(args.interval * 2)
        final = began + result["durable_seconds"]
        spans = int(result["spans_stored"])
        timeline = result["stored_timeline"]
        print(f"{args.protocol}: {result['durable_throughput_spans_s']:,.0f} spans/s with a final "
              f"trajectory; last final {result['storage_lag_after_last_ack_s']:.1f} s after the "
              "last ack\n")
        print("    t  busy  " + "  ".join(f"{c[:10]:>10}" for c in COMPONENTS)
              + "     other  final spans")
        samples = sampler.samples
        for before, after in itertools.pairwise(samples):
            if after.at < began or before.at > final:
                continue
            seconds = after.at - before.at
            used = {c: (after.used[c] - before.used[c]) / seconds for c in COMPONENTS}
            other = (after.busy - before.busy) / seconds - sum(used.values())
            t = after.at - began
            counted = max((c for ts, c in timeline if ts <= t), default=0)
            busy = (after.busy - before.busy) / max(after.total - before.total, 1e-9)
            print(f"{t:5.2f} {busy:5.0%}  "
                  + "  ".join(f"{used[c]:10.2f}" for c in COMPONENTS)
                  + f"  {other:8.2f}  {counted:11,}")
        print(f"\nburst (first send to last ack): {_phase(samples, began, acked, spans)}")
        print(f"drain (last ack to last final): {_phase(samples, acked, final, spans)}")
        if args.database_url:
            print("\nthe drain's statements by total time (ms):")
            for r in asyncio.run(_top_statements(server.database_url)):
                print(f"  {r['calls']:6} calls {r['total_exec_time']:8.0f} ms "
                      f"{r['rows']:7} rows  {r['query']}")
    finally:
        code = server.stop_and_report()
    return 0 if code == 0 else 1


if __name__ == "__main__":
    raise SystemExit(main())
