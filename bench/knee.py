"""The sustained knee: the highest offered rate at which every trajectory is final within the
settle period + 2 s of its spans' acknowledgement, held for 60 s: the steady load at which
trajectories still follow their spans promptly.

At each offered rate (spans/s) the reference load generator's payloads (8-span traces, 512
spans per request) are sent over OTLP/HTTP at an even pace for `--seconds`, by as many threads
as the pace needs (a request is never sent early to catch up with a slow one: a server that
falls behind shows as missed sends). Meanwhile every `--poll` seconds one query lists the run's
traces that have become final, so each trace's latency is the time from the acknowledgement of
the request that carried it to the first poll that saw it final. A rate holds when every trace
is final within settle + 2 s and every request was sent on time. The rates are searched by
bisection between `--low` and `--high` (each on a fresh server).

    .venv/bin/python bench/knee.py --shared /work/shared/bench
"""

from __future__ import annotations

import argparse
import asyncio
import http.client
import os
import sys
import threading
import time
from pathlib import Path
from typing import Any

import asyncpg

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from _common import Server  # noqa: E402

SPANS_PER_REQUEST = 512
SPANS_PER_TRACE = 8


def trace_ids(body: bytes) -> set[str]:
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
        ExportTraceServiceRequest,
    )
    request = ExportTraceServiceRequest.FromString(body)
    return {s.trace_id.hex() for rs in request.resource_spans for ss in rs.scope_spans
            for s in ss.spans}


def offered_run(shared: Path, rate: float, seconds: float, settle: float, poll: float
                ) -> dict[str, Any]:
    sys.path.insert(0, str(shared))
    import loadgen

    requests = max(1, round(rate * seconds / SPANS_PER_REQUEST))
    prefix = os.urandom(4)
    payloads = [body for _, body in loadgen.build_payloads(
        requests * SPANS_PER_REQUEST, SPANS_PER_REQUEST, prefix, 1, "knee", [])]
    carried = [trace_ids(body) for body in payloads]
    interval = SPANS_PER_REQUEST / rate
    server = Server(env={"TRAJHUB_LOG_LEVEL": "warning"})
    acked: dict[str, float] = {}
    late_sends: list[float] = []
    failures: list[str] = []
    lock = threading.Lock()
    try:
        host, port = "127.0.0.1", int(server.http.rsplit(":", 1)[1])
        start = time.monotonic() + 1.0
        next_index = [0]

        def sender() -> None:
            conn = http.client.HTTPConnection(host, port, timeout=60)
            while True:
                with lock:
                    i = next_index[0]
                    next_index[0] += 1
                if i >= len(payloads):
                    break
                due = start + i * interval
                now = time.monotonic()
                if now < due:
                    time.sleep(due - now)
                elif now - due > interval:
                    late_sends.append(now - due)
                conn.request("POST", "/v1/traces", body=payloads[i],
                             headers={"Content-Type": "application/x-protobuf"})
                response = conn.getresponse()
                response.read()
                done = time.monotonic()
                if response.status != 200:
                    failures.append(f"request {i}: HTTP {response.status}")
                    continue
                with lock:
                    for trace_id in carried[i]:
                        acked[trace_id] = done

        # enough senders that one slow answer does not hold back the next request's send
        threads = [threading.Thread(target=sender, daemon=True)
                   for _ in range(max(2, min(16, round(rate / SPANS_PER_REQUEST) * 2)))]
        for t in threads:
            t.start()
        final_at = asyncio.run(_watch_final(server.database_url, prefix.hex(), len(
            set().union(*carried)), threads, poll, deadline=start + seconds + settle + 60))
        for t in threads:
            t.join()
    finally:
        code = server.stop()
    latencies = [final_at[t] - acked[t] for t in acked if t in final_at]
    missing = len(acked) - len(latencies)
    worst = max(latencies, default=float("inf"))
    return {"rate": rate, "traces": len(acked), "not_final": missing,
            "latency_p50": sorted(latencies)[len(latencies) // 2] if latencies else None,
            "latency_max": worst, "late_sends": len(late_sends), "failures": failures[:5],
            "holds": (not missing and not failures and not late_sends
                      and worst <= settle + 2.0),
            "exit": code}


async def _watch_final(url: str, prefix: str, traces: int, senders: list[threading.Thread],
                       poll: float, deadline: float) -> dict[str, float]:
    final_at: dict[str, float] = {}
    conn = await asyncpg.connect(url)
    try:
        while time.monotonic() < deadline:
            rows = await conn.fetch(
                "SELECT trace_id FROM trajectories WHERE status = 'final' AND trace_id LIKE $1",
                prefix + "%")
            now = time.monotonic()
            for r in rows:
                final_at.setdefault(r["trace_id"], now)
            if len(final_at) >= traces and not any(t.is_alive() for t in senders):
                break
            await asyncio.sleep(poll)
    finally:
        await conn.close()
    return final_at


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--shared", type=Path, default=HERE.parent.parent / "shared" / "bench")
    ap.add_argument("--seconds", type=float, default=60.0, help="how long a rate is held")
    ap.add_argument("--low", type=float, default=1000.0, help="spans/s known to hold")
    ap.add_argument("--high", type=float, default=8000.0, help="spans/s known not to hold")
    ap.add_argument("--steps", type=int, default=4, help="bisection steps")
    ap.add_argument("--settle", type=float, default=3.0,
                    help="the server's TRAJHUB_SETTLE_SECONDS (its default)")
    ap.add_argument("--poll", type=float, default=0.25)
    args = ap.parse_args()
    low, high = args.low, args.high
    for _ in range(args.steps):
        rate = round((low + high) / 2, -1)
        result = offered_run(args.shared, rate, args.seconds, args.settle, args.poll)
        print(f"{rate:8,.0f} spans/s offered for {args.seconds:.0f} s: "
              f"{'holds' if result['holds'] else 'does not hold'}; "
              f"final after ack p50 {result['latency_p50'] or 0:.2f} s, "
              f"max {result['latency_max']:.2f} s; {result['not_final']} not final, "
              f"{result['late_sends']} late sends, failures {result['failures']}", flush=True)
        if result["holds"]:
            low = rate
        else:
            high = rate
    print(f"knee: {low:,.0f} spans/s (held {args.seconds:.0f} s with every trajectory final "
          f"within settle + 2 s); {high:,.0f} did not hold")
    return 0


if __name__ == "__main__":
    sys.exit(main())
