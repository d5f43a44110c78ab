"""Trajectory-worker benchmark: derivations per second and acknowledgement → final delay.

    .venv/bin/python bench/derive.py [--traces 2000 | --duration 60] [--settle 0.5]
                                       [--latency-traces 100] [--latency-rate 5]
                                       [--derive-at-ingest true|false] [--derivation-workers 1]

Starts its own `trajhub serve` (embedded PostgreSQL in a temporary data directory, or
`--database-url`) with TRAJHUB_SETTLE_SECONDS=--settle, then:

1. Throughput: ingests --traces realistic traces (15–30 spans, ≈2.45 KB/span, whole traces in
   512-span OTLP/HTTP protobuf requests) as fast as --senders concurrent connections allow, and
   polls `trajectories` every 50 ms. derivations/s = traces / (first ack → every trace has a
   trajectory, any status); also the time until all are `final`, the ingest rate in traces/s
   (does the worker keep up?) and a check of the derived step and token counts against what
   was generated. With --duration it ingests for that long instead (fresh trace ids per
   request) and reports the backlog when the load stops, in seconds of derivation work.
2. Latency: sends single traces (one request each) at --latency-rate per second and polls
   GET /api/v1/trajectories/{trace_id} every 20 ms until `X-Trajectory-Status: final`;
   reports p50/p99 of ack → final, and the same minus the settle period.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import asyncpg
import httpx
from _common import Server, Template, build_request, machine_busy, percentile, trace_sizes

POLL_S = 0.05
#: what a sent trace adds to the expected totals: total -> the TraceShape field it sums
_SHAPE_COUNTS = {"spans": "spans", "model": "model_steps", "tool": "tool_steps",
                 "in": "input_tokens", "out": "output_tokens"}


def _unique(t: Template) -> tuple[bytes, list[str]]:
    prefix = os.urandom(12)
    return t.body.replace(t.marker, prefix), [(prefix + s).hex() for s in t.trace_suffixes]


def _post(client: httpx.Client, body: bytes, project: str) -> tuple[int, int]:
    """POST until acknowledged; returns (503 count, other errors)."""
    n503 = errors = 0
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            r = client.post("/v1/traces", content=body, headers={
                "Content-Type": "application/x-protobuf", "trajhub-project": project})
        except httpx.HTTPError:
            errors += 1
            time.sleep(0.05)
            continue
        if r.status_code == 200:
            return n503, errors
        if r.status_code == 503:
            n503 += 1
        else:
            errors += 1
            print(f"  HTTP {r.status_code}: {r.text[:200]}")
        time.sleep(0.05)
    raise SystemExit("a request was not acknowledged within 60 s")


async def _counts(conn: asyncpg.Connection, project: str) -> tuple[int, int]:
    row = await conn.fetchrow(
        "SELECT count(*) AS n, count(*) FILTER (WHERE status = 'final') AS f "
        "FROM trajectories WHERE project = $1", project)
    return int(row["n"]), int(row["f"])


def throughput(server: Server, args: argparse.Namespace) -> dict[str, Any]:
    project = f"bench-derive-{os.urandom(3).hex()}"
    rng = random.Random(args.seed)
    # whole traces per request; without --duration, --traces traces once each (the last
    # request takes what is left); with it, these templates again and again with fresh ids
    templates: list[Template] = []
    left = args.traces
    while left > 0 and (not args.duration or len(templates) < 8):
        sizes = trace_sizes(rng, 512)[:left]
        templates.append(build_request(rng, sizes))
        left -= len(sizes)
    expect = {"traces": 0, "spans": 0, "model": 0, "tool": 0, "in": 0, "out": 0,
              "requests": 0}
    stats = {"n503": 0, "errors": 0, "first_ack": 0.0, "last_ack": 0.0}
    lock = threading.Lock()
    deadline = time.time() + args.duration

    def send(t: Template) -> None:
        body, _ = _unique(t)
        with httpx.Client(base_url=server.http, timeout=60) as client:
            n503, errors = _post(client, body, project)
        now = time.time()
        with lock:
            stats["n503"] += n503
            stats["errors"] += errors
            stats["first_ack"] = min(stats["first_ack"] or now, now)
            stats["last_ack"] = max(stats["last_ack"], now)
            expect["requests"] += 1
            for shape in t.traces:
                expect["traces"] += 1
                for key, count in _SHAPE_COUNTS.items():
                    expect[key] += getattr(shape, count)

    def sender(i: int) -> None:
        if not args.duration:
            for t in templates[i::args.senders]:
                send(t)
            return
        k = i
        while time.time() < deadline:
            send(templates[k % len(templates)])
            k += args.senders

    async def watch(done_sending: threading.Event) -> dict[str, float]:
        conn = await asyncpg.connect(server.database_url)
        marks: dict[str, float] = {}
        give_up = time.time() + args.duration + args.timeout
        n = f = 0
        try:
            while time.time() < give_up:
                n, f = await _counts(conn, project)
                now = time.time()
                if done_sending.is_set():
                    if "backlog_at_end" not in marks:
                        # the first poll after the last ack: traces acknowledged, not derived
                        marks["backlog_at_end"] = expect["traces"] - n
                        marks["backlog_at"] = now
                    if n >= expect["traces"] and "all_derived" not in marks:
                        marks["all_derived"] = now
                    if f >= expect["traces"]:
                        marks["all_final"] = now
                        break
                await asyncio.sleep(POLL_S)
            marks["derived_at_end"], marks["final_at_end"] = n, f
            row = await conn.fetchrow(
                """SELECT sum(model_step_count) AS m, sum(tool_step_count) AS t,
                          sum(input_tokens) AS i, sum(output_tokens) AS o,
                          count(*) FILTER (WHERE derivation_error IS NOT NULL) AS e,
                          count(*) FILTER (WHERE revision > 1) AS r
                   FROM trajectories WHERE project = $1""", project)
            marks.update({k: int(row[k] or 0) for k in ("m", "t", "i", "o", "e", "r")})
            marks["spans"] = await conn.fetchval(
                "SELECT count(*) FROM spans WHERE project = $1", project)
        finally:
            await conn.close()
        return marks

    cpu0 = server.process_tree_cpu()
    busy0, total0 = machine_busy()
    t0 = time.time()
    done = threading.Event()
    watcher: dict[str, Any] = {}
    wt = threading.Thread(target=lambda: watcher.update(asyncio.run(watch(done))))
    wt.start()
    with ThreadPoolExecutor(args.senders) as pool:
        list(pool.map(sender, range(args.senders)))
    t_sent = time.time()
    cpu1 = server.process_tree_cpu()
    busy1, total1 = machine_busy()
    done.set()
    wt.join(args.duration + args.timeout + 30)
    first, last = stats["first_ack"], stats["last_ack"]
    traces = expect["traces"]
    ingest_s = max(last - t0, 1e-9)
    res: dict[str, Any] = {
        "project": project, "traces": traces, "spans": expect["spans"],
        "requests": expect["requests"], "retries_503": stats["n503"],
        "errors": stats["errors"], "ingest_s": round(ingest_s, 2),
        "ingest_traces_per_s": round(traces / ingest_s),
        "ingest_spans_per_s": round(expect["spans"] / ingest_s),
        "spans_stored": watcher.get("spans"),
        "derived": watcher.get("derived_at_end"), "final": watcher.get("final_at_end"),
        # CPU while ingesting (until the last ack)
        "cpu_cores": server.cpu_breakdown(cpu0, cpu1, t_sent - t0),
        "machine_cpu_busy_pct": round(100 * (busy1 - busy0) / max(total1 - total0, 1e-9)),
    }
    if "all_derived" in watcher:
        span = watcher["all_derived"] - first
        res["first_ack_to_all_derived_s"] = round(span, 2)
        res["derivations_per_s"] = round(traces / span)
        res["last_ack_to_all_derived_s"] = round(watcher["all_derived"] - last, 2)
        # the backlog when the load stopped, in seconds of the derivation rate seen
        res["backlog_at_end"] = int(watcher.get("backlog_at_end", 0))
        res["backlog_s_of_work"] = round(res["backlog_at_end"] / max(traces / span, 1e-9), 2)
        # the worker keeps up if it finishes about when ingestion does (one poll round +
        # one worker round of slack)
        res["worker_keeps_up"] = res["last_ack_to_all_derived_s"] <= 1.0
    if "all_final" in watcher:
        res["first_ack_to_all_final_s"] = round(watcher["all_final"] - first, 2)
        res["last_ack_to_all_final_s"] = round(watcher["all_final"] - last, 2)
        res["final_within_settle_plus_1s"] = res["last_ack_to_all_final_s"] <= args.settle + 1
    res["derivation_check"] = {
        "model_steps": [watcher.get("m"), expect["model"]],
        "tool_steps": [watcher.get("t"), expect["tool"]],
        "input_tokens": [watcher.get("i"), expect["in"]],
        "output_tokens": [watcher.get("o"), expect["out"]],
        "derivation_errors": watcher.get("e"),
        "trajectories_with_revision_gt_1": watcher.get("r"),
    }
    res["derivation_ok"] = all(
        v[0] == v[1] for k, v in res["derivation_check"].items() if isinstance(v, list)) and \
        not watcher.get("e")
    return res


async def latency(server: Server, args: argparse.Namespace) -> dict[str, Any]:
    project = f"bench-latency-{os.urandom(3).hex()}"
    rng = random.Random(args.seed + 1)
    templates = [build_request(rng, [n]) for n in (15, 18, 20, 22, 25, 28, 30)]
    delays: list[float] = []
    open_seen = 0
    n503 = 0
    timeouts = 0
    async with httpx.AsyncClient(base_url=server.http, timeout=30) as client:

        async def one(i: int) -> None:
            nonlocal open_seen, n503, timeouts
            body, ids = _unique(templates[i % len(templates)])
            while True:
                r = await client.post("/v1/traces", content=body, headers={
                    "Content-Type": "application/x-protobuf", "trajhub-project": project})
                if r.status_code == 200:
                    break
                if r.status_code != 503:
                    raise SystemExit(f"HTTP {r.status_code}: {r.text[:200]}")
                n503 += 1
                await asyncio.sleep(0.05)
            acked = time.monotonic()
            seen_open = False
            while time.monotonic() - acked < args.settle + 30:
                g = await client.get(f"/api/v1/trajectories/{ids[0]}",
                                     headers={"trajhub-project": project})
                status = g.headers.get("x-trajectory-status")
                if status == "final":
                    delays.append(time.monotonic() - acked)
                    open_seen += seen_open
                    return
                if status == "open":
                    seen_open = True
                await asyncio.sleep(0.02)
            timeouts += 1

        tasks = []
        start = time.monotonic()
        for i in range(args.latency_traces):
            # a steady rate: start trace i at start + i / rate
            await asyncio.sleep(max(0.0, start + i / args.latency_rate - time.monotonic()))
            tasks.append(asyncio.create_task(one(i)))
        await asyncio.gather(*tasks)
    return {
        "project": project, "traces": args.latency_traces, "rate_per_s": args.latency_rate,
        "settle_s": args.settle, "finalized": len(delays), "timeouts": timeouts,
        "retries_503": n503, "seen_open_first": open_seen,
        "ack_to_final_p50_ms": round(percentile(delays, 50) * 1000),
        "ack_to_final_p99_ms": round(percentile(delays, 99) * 1000),
        "ack_to_final_max_ms": round(max(delays) * 1000) if delays else None,
        "minus_settle_p50_ms": round((percentile(delays, 50) - args.settle) * 1000),
        "minus_settle_p99_ms": round((percentile(delays, 99) - args.settle) * 1000),
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--traces", type=int, default=2000, help="traces for the throughput part")
    ap.add_argument("--duration", type=float, default=0.0, help=(
        "instead of --traces: ingest at full speed for this many seconds (fresh trace ids "
        "per request), then measure the backlog left and the time until all is final"))
    ap.add_argument("--derive-at-ingest", choices=("true", "false"), default="true",
                    help="TRAJHUB_DERIVE_AT_INGEST of the server under test")
    ap.add_argument("--senders", type=int, default=4, help="concurrent ingest connections")
    ap.add_argument("--settle", type=float, default=0.5, help="TRAJHUB_SETTLE_SECONDS")
    ap.add_argument("--latency-traces", type=int, default=100)
    ap.add_argument("--latency-rate", type=float, default=5.0, help="single traces per second")
    ap.add_argument("--timeout", type=float, default=90.0,
                    help="give up waiting for the worker after this many seconds")
    ap.add_argument("--database-url", default="", help="external PostgreSQL (default embedded)")
    ap.add_argument("--skip", choices=("throughput", "latency"), default=None)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--json", default="", help="also write the results to this file")
    ap.add_argument("--derivation-workers", type=int, default=1,
                    help="TRAJHUB_DERIVATION_WORKERS")
    args = ap.parse_args()

    server = Server(args.database_url, {"TRAJHUB_LOG_LEVEL": "warning",
                                        "TRAJHUB_SETTLE_SECONDS": str(args.settle),
                                        "TRAJHUB_DERIVE_AT_INGEST": args.derive_at_ingest,
                                        "TRAJHUB_DERIVATION_WORKERS":
                                            str(args.derivation_workers)})
    print(f"trajhub started: http {server.http}, settle {args.settle} s, log "
          f"{server.log_path}")
    out: dict[str, Any] = {}
    code = None
    try:
        if args.skip != "throughput":
            r = throughput(server, args)
            out["throughput"] = r
            print(f"\n== derivation throughput ({r['traces']} traces, {r['spans']} spans, "
                  f"{r['requests']} requests)")
            print(f"  ingest               {r['ingest_s']} s: {r['ingest_traces_per_s']} "
                  f"traces/s ({r['ingest_spans_per_s']} spans/s), 503s {r['retries_503']}, "
                  f"errors {r['errors']}, spans stored {r['spans_stored']}")
            if "derivations_per_s" in r:
                print(f"  derivations/s        {r['derivations_per_s']}  (first ack → all "
                      f"{r['traces']} derived in {r['first_ack_to_all_derived_s']} s)")
                print(f"  last ack → all derived {r['last_ack_to_all_derived_s']} s; "
                      f"worker keeps up with ingest: {r['worker_keeps_up']}")
                print(f"  backlog at the end   {r['backlog_at_end']} traces = "
                      f"{r['backlog_s_of_work']} s of derivation work")
            else:
                print(f"  NOT all derived within {args.timeout} s: {r['derived']} of "
                      f"{r['traces']}")
            if "first_ack_to_all_final_s" in r:
                print(f"  all final            {r['first_ack_to_all_final_s']} s after the "
                      f"first ack, {r['last_ack_to_all_final_s']} s after the last (within "
                      f"settle + 1 s: {r['final_within_settle_plus_1s']})")
            else:
                print(f"  NOT all final within {args.timeout} s: {r['final']} of {r['traces']}")
            print(f"  derivation check     {'OK' if r['derivation_ok'] else 'MISMATCH'} "
                  f"(derived vs generated) {r['derivation_check']}")
            print(f"  CPU (cores)          {r['cpu_cores']}; machine "
                  f"{r['machine_cpu_busy_pct']} % busy")
        if args.skip != "latency":
            r = asyncio.run(latency(server, args))
            out["latency"] = r
            print(f"\n== ack → final ({r['traces']} single traces at {r['rate_per_s']}/s, "
                  f"settle {r['settle_s']} s, polling every 20 ms)")
            print(f"  ack → final p50/p99  {r['ack_to_final_p50_ms']} / "
                  f"{r['ack_to_final_p99_ms']} ms (max {r['ack_to_final_max_ms']} ms)")
            print(f"  minus settle p50/p99 {r['minus_settle_p50_ms']} / "
                  f"{r['minus_settle_p99_ms']} ms")
            print(f"  finalized {r['finalized']}/{r['traces']}, timeouts {r['timeouts']}, "
                  f"503s {r['retries_503']}, seen 'open' before 'final': {r['seen_open_first']}")
    finally:
        code = server.stop_and_report()
    if args.json:
        with open(args.json, "w") as f:
            json.dump({**out, "server_exit_code": code}, f, indent=2, default=str)
    t = out.get("throughput", {})
    bad = (t and (not t.get("derivation_ok") or "first_ack_to_all_final_s" not in t)) or \
        out.get("latency", {}).get("timeouts")
    return 1 if bad or code != 0 else 0


if __name__ == "__main__":
    sys.exit(main())
