"""Throughput through the OpenTelemetry Collector against trajhub directly.

    .venv/bin/python bench/collector.py [--rounds 3] [--requests 60] [--senders 4]

Two `trajhub serve` replicas on one embedded PostgreSQL (deploy/SCALING.md, step 2). Each round
sends the same load twice, over OTLP/gRPC, 512-span requests of bench/_common.py's ~2.4 KB
LangGraph spans with fresh trace ids:
- direct: the requests go to the replicas in turn (whole traces per request, as routing by
  trace ID would send them), each UNAVAILABLE retried after 50 ms;
- collector: every request goes to the Collector of deploy/otelcol-builder.yaml running
  deploy/otel-collector-replicas.yaml as shipped (only its addresses and queue directory
  changed, bench/_collector.py), which batches, queues on disk and routes by trace ID to the
  two replicas.

A way's figure is stored spans per second: spans counted in PostgreSQL, from the first send to
the moment the last one is stored (polled every 0.1 s). Also printed: the rate at which the
sender was acknowledged (by trajhub, or by the Collector, which acknowledges before storing),
the seconds from the last span stored to the last trajectory final (settle time included), the
ingest requests whose derivation trajhub queued rather than did before the ack (it does so while
ingest is saturated), and the Collector's CPU. The medians of the rounds come last. The
Collector is built first if deploy/otelcol-build.sh has no cached build (minutes; needs Go).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import asyncpg
import grpc
import httpx
import psutil

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from _collector import Collector, collector_binary, free_port, replicas_config
from _common import (
    Server,
    build_request,
    machine_busy,
    scratch_postgres,
    trace_sizes,
    unique_body,
)

EXPORT = "/opentelemetry.proto.collector.trace.v1.TraceService/Export"


def stored(url: str) -> int:
    return count(url, "SELECT count(*) FROM spans")


def final(url: str) -> int:
    return count(url, "SELECT count(*) FROM trajectories WHERE status = 'final'")


def count(url: str, query: str) -> int:
    async def fetch() -> int:
        conn = await asyncpg.connect(url)
        try:
            return int(await conn.fetchval(query))
        finally:
            await conn.close()

    return asyncio.run(fetch())


def send(targets: list[str], bodies: list[bytes], senders: int) -> tuple[float, float, int]:
    """Sends `bodies`, sender i to targets[i % len(targets)]; returns (first send, last ack,
    UNAVAILABLE answers retried)."""
    retries = 0
    lock = threading.Lock()
    first_send = time.time()

    def sender(i: int) -> None:
        nonlocal retries
        channel = grpc.insecure_channel(targets[i % len(targets)], options=[
            ("grpc.max_send_message_length", 64 << 20), ("grpc.use_local_subchannel_pool", 1)])
        call = channel.unary_unary(EXPORT, request_serializer=None,
                                   response_deserializer=None)
        for body in bodies[i::senders]:
            while True:
                try:
                    call(body, timeout=120)
                    break
                except grpc.RpcError as exc:
                    if exc.code() != grpc.StatusCode.UNAVAILABLE:
                        raise
                    with lock:
                        retries += 1
                    time.sleep(0.05)
        channel.close()

    threads = [threading.Thread(target=sender, args=(i,)) for i in range(senders)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return first_send, time.time(), retries


def deferred(replicas: list[Server]) -> float:
    """Ingest requests whose derivation the replicas queued instead of doing it before the
    ack (ingest saturated, `TRAJHUB_DERIVE_AT_INGEST=auto`), summed over the replicas."""
    total = 0.0
    for replica in replicas:
        text = httpx.get(f"{replica.http}/metrics", timeout=30).text
        total += sum(float(line.split()[-1]) for line in text.splitlines()
                     if line.startswith("trajhub_ingest_deferred_total"))
    return total


def one_way(name: str, targets: list[str], url: str, bodies: list[bytes], spans: int,
            traces: int, senders: int, collector: Collector | None,
            replicas: list[Server]) -> dict[str, Any]:
    before, final_before, deferred_before = stored(url), final(url), deferred(replicas)
    cpu = psutil.Process(collector.process.pid).cpu_times() if collector else None
    busy0, total0 = machine_busy()
    first, last_ack, retries = send(targets, bodies, senders)
    while stored(url) < before + spans:
        time.sleep(0.1)
    done = time.time()
    while final(url) < final_before + traces:
        time.sleep(0.1)
    all_final = time.time()
    busy1, total1 = machine_busy()
    result = {"way": name, "spans": spans, "stored_spans_per_s": round(spans / (done - first)),
              "acked_spans_per_s": round(spans / (last_ack - first)),
              "last_final_after_last_stored_s": round(all_final - done, 1),
              "unavailable_retried": retries,
              "requests_deferred": round(deferred(replicas) - deferred_before),
              "machine_busy": round((busy1 - busy0) / max(total1 - total0, 1e-9), 2)}
    if collector and cpu:
        after = psutil.Process(collector.process.pid).cpu_times()
        used = after.user + after.system - cpu.user - cpu.system
        result["collector_cpu_s_per_10k_spans"] = round(used / spans * 10_000, 2)
    extra = stored(url) - before - spans
    assert extra == 0, f"{name}: {extra} spans more than sent"
    return result


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--requests", type=int, default=60, help="512-span requests per way")
    ap.add_argument("--senders", type=int, default=4)
    ap.add_argument("--json", help="write the results here")
    args = ap.parse_args()

    started = time.monotonic()
    binary = collector_binary()
    print(f"collector: {binary} (ready after {time.monotonic() - started:.1f} s)")
    rng = random.Random(43)
    templates = [build_request(rng, trace_sizes(rng, 512)) for _ in range(8)]
    results: list[dict[str, Any]] = []
    with scratch_postgres("trajhub-bench-collector-") as url, \
            tempfile.TemporaryDirectory(prefix="trajhub-bench-otelcol-") as tmp:
        # a short settle, so that "every trajectory final" follows the last span closely
        env = {"TRAJHUB_SETTLE_SECONDS": "0.5"}
        replicas = [Server(url, env), Server(url, env)]
        collector = None
        try:
            grpc_port, health_port = free_port(), free_port()
            config = replicas_config([r.grpc for r in replicas], Path(tmp) / "queue",
                                     grpc_port=grpc_port, http_port=free_port(),
                                     health_port=health_port)
            (Path(tmp) / "queue").mkdir()
            collector = Collector(binary, config, Path(tmp), health_port)
            collector.wait_ready()
            ways = [("direct", [r.grpc for r in replicas], None),
                    ("collector", [f"127.0.0.1:{grpc_port}"], collector)]
            for round_no in range(1, args.rounds + 1):
                for name, targets, via in ways:
                    bodies = [unique_body(templates[i % len(templates)])[0]
                              for i in range(args.requests)]
                    used = [templates[i % len(templates)] for i in range(args.requests)]
                    result = one_way(name, targets, url, bodies, sum(t.spans for t in used),
                                     sum(len(t.traces) for t in used), args.senders, via,
                                     replicas)
                    result["round"] = round_no
                    results.append(result)
                    print(json.dumps(result))
        finally:
            collector_exit = collector.stop() if collector else None
            codes = [r.stop_and_report() for r in replicas]
        log = collector.log() if collector else ""
        dropped = [ln for ln in log.splitlines() if "Dropping data" in ln]
        print(f"collector exited with {collector_exit}; {len(dropped)} 'Dropping data' lines")

    print("\nmedians of", args.rounds, "rounds:")
    for name in ("direct", "collector"):
        mine = [r for r in results if r["way"] == name]
        line = {k: statistics.median(r[k] for r in mine) for k in mine[0]
                if k not in ("way", "round", "spans")}
        print(f"  {name:9} {json.dumps(line)}")
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=1))
    ok = collector_exit == 0 and codes == [0, 0] and not dropped
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
