"""Ingest throughput benchmark: realistic LLM-agent spans over OTLP/HTTP and OTLP/gRPC.

    /work/venv/bin/python bench/ingest.py [--protocol http|grpc|both] [--duration 20]
                                          [--senders 4] [--connections 1]

Starts its own `trajhub serve` (embedded PostgreSQL in a temporary data directory, or
`--database-url`) unless `--http URL --grpc HOST:PORT` name a running one (then pass
`--database-url` too, or the durable count is skipped). Each sender process builds a few
512-span ExportTraceServiceRequest templates once (≈2.45 KB per span) and re-sends them with
fresh trace ids (one `bytes.replace` per request), so the load generator stays light on CPU.

Reported per protocol: requests, spans acked, acked spans/s, DURABLE spans/s (rows counted in
`spans` after the run, over the wall time from the first send to the last acknowledgement),
p50/p99 latency, 503/UNAVAILABLE answers (retried after --retry-sleep), other errors, CPU used
by the server tree (trajhub + workers + PostgreSQL) and by the senders, and a check that the
stored rows equal the acknowledged spans (no loss, no duplicates).
"""

from __future__ import annotations

import argparse
import asyncio
import http.client
import json
import multiprocessing as mp
import os
import random
import sys
import threading
import time
import urllib.parse
from dataclasses import asdict, dataclass, field
from typing import Any

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from _common import (
    Server,
    Template,
    build_request,
    machine_busy,
    percentile,
    trace_sizes,
    unique_body,
)

EXPORT = "/opentelemetry.proto.collector.trace.v1.TraceService/Export"
RETRY_GIVE_UP_S = 30.0  # a single request stops retrying after this long


@dataclass
class SenderResult:
    requests: int = 0
    spans: int = 0
    traces: int = 0
    retries_503: int = 0
    errors: int = 0
    failed_requests: int = 0  # gave up (counted separately from acked)
    error_samples: list[str] = field(default_factory=list)
    latencies: list[float] = field(default_factory=list)  # successful attempt, seconds
    e2e_latencies: list[float] = field(default_factory=list)  # first attempt → ack, seconds
    first_send: float = 0.0
    last_ack: float = 0.0
    cpu_s: float = 0.0

    def note_error(self, text: str) -> None:
        self.errors += 1
        if len(self.error_samples) < 5:
            self.error_samples.append(text[:300])


class _HttpSender:
    def __init__(self, url: str, project: str) -> None:
        u = urllib.parse.urlsplit(url)
        self.host, self.port = u.hostname or "127.0.0.1", u.port or 80
        self.path = (u.path.rstrip("/") or "") + "/v1/traces"
        self.headers = {"Content-Type": "application/x-protobuf", "trajhub-project": project}
        self.conn: http.client.HTTPConnection | None = None

    def send(self, body: bytes) -> tuple[str, str]:
        """('ok'|'retry'|'error', detail)."""
        try:
            if self.conn is None:
                self.conn = http.client.HTTPConnection(self.host, self.port, timeout=60)
            self.conn.request("POST", self.path, body, self.headers)
            resp = self.conn.getresponse()
            data = resp.read()
        except (OSError, http.client.HTTPException) as exc:
            if self.conn is not None:
                self.conn.close()
            self.conn = None
            return "error", f"connection: {exc!r}"
        if resp.status == 200:
            if data:
                from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
                    ExportTraceServiceResponse,
                )

                r = ExportTraceServiceResponse.FromString(data)
                if r.partial_success.rejected_spans:
                    return "error", f"partial_success: {r.partial_success}"
            return "ok", ""
        if resp.status == 503:
            return "retry", ""
        return "error", f"HTTP {resp.status}: {data[:200]!r}"


class _GrpcSender:
    def __init__(self, target: str, project: str) -> None:
        import grpc

        self.grpc = grpc
        self.channel = grpc.insecure_channel(target, options=[
            ("grpc.max_send_message_length", 64 * 1024 * 1024),
            ("grpc.max_receive_message_length", 64 * 1024 * 1024),
            ("grpc.use_local_subchannel_pool", 1)])  # one connection per sender thread
        self.call = self.channel.unary_unary(EXPORT, request_serializer=None,
                                             response_deserializer=None)
        self.metadata = (("trajhub-project", project),)

    def send(self, body: bytes) -> tuple[str, str]:
        try:
            self.call(body, metadata=self.metadata, timeout=60)
        except self.grpc.RpcError as exc:
            code = exc.code()
            if code == self.grpc.StatusCode.UNAVAILABLE:
                return "retry", ""
            return "error", f"gRPC {code.name}: {exc.details()}"
        return "ok", ""


def _sender_thread(make: Any, templates: list[Template], deadline: float, retry_sleep: float,
                   res: SenderResult, lock: threading.Lock) -> None:
    client = make()
    i = random.randrange(len(templates))
    while time.time() < deadline:
        t = templates[i % len(templates)]
        i += 1
        body, _ = unique_body(t)
        first = time.time()
        while True:
            start = time.time()
            outcome, detail = client.send(body)
            now = time.time()
            if outcome == "ok":
                with lock:
                    res.requests += 1
                    res.spans += t.spans
                    res.traces += len(t.traces)
                    res.latencies.append(now - start)
                    res.e2e_latencies.append(now - first)
                    res.first_send = min(res.first_send or first, first)
                    res.last_ack = max(res.last_ack, now)
                break
            with lock:
                if outcome == "retry":
                    res.retries_503 += 1
                else:
                    res.note_error(detail)
            if now - first > RETRY_GIVE_UP_S:
                with lock:
                    res.failed_requests += 1
                break
            time.sleep(retry_sleep)


def sender_main(protocol: str, target: str, project: str, seed: int, connections: int,
                n_templates: int, duration: float, retry_sleep: float, ready: Any, go: Any,
                out: Any) -> None:
    rng = random.Random(seed)
    templates = [build_request(rng, trace_sizes(rng, 512)) for _ in range(n_templates)]

    def make() -> Any:
        return _HttpSender(target, project) if protocol == "http" else _GrpcSender(target,
                                                                                   project)

    ready.put(os.getpid())
    go.wait(120)
    cpu0 = time.process_time()
    res, lock = SenderResult(), threading.Lock()
    deadline = time.time() + duration
    threads = [threading.Thread(target=_sender_thread,
                                args=(make, templates, deadline, retry_sleep, res, lock))
               for _ in range(connections)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    res.cpu_s = time.process_time() - cpu0
    out.put(asdict(res))


async def _count(database_url: str, project: str) -> tuple[int, int, int]:
    import asyncpg

    conn = await asyncpg.connect(database_url, timeout=10)
    try:
        row = await conn.fetchrow(
            "SELECT count(*) AS n, count(DISTINCT trace_id) AS t FROM spans WHERE project = $1",
            project)
        pending = await conn.fetchval("SELECT count(*) FROM trace_changes")
        return int(row["n"]), int(row["t"]), int(pending)
    finally:
        await conn.close()


def count(database_url: str, project: str) -> tuple[int, int, int]:
    return asyncio.run(_count(database_url, project))


def run_phase(protocol: str, args: argparse.Namespace, http_url: str, grpc_target: str,
              database_url: str, server: Server | None) -> dict[str, Any]:
    project = f"bench-{protocol}-{os.urandom(3).hex()}"
    target = http_url if protocol == "http" else grpc_target
    ctx = mp.get_context("spawn")
    ready, out, go = ctx.Queue(), ctx.Queue(), ctx.Event()
    procs = [ctx.Process(target=sender_main, daemon=True, args=(
        protocol, target, project, args.seed * 1000 + i, args.connections, args.templates,
        args.duration, args.retry_sleep, ready, go, out)) for i in range(args.senders)]
    for p in procs:
        p.start()
    for _ in procs:
        ready.get(timeout=120)
    before = count(database_url, project) if database_url else (0, 0, 0)
    cpu0 = server.process_tree_cpu() if server else {}
    busy0, total0 = machine_busy()
    t0 = time.time()
    go.set()
    results = [out.get(timeout=args.duration + RETRY_GIVE_UP_S + 120) for _ in procs]
    t_end = time.time()
    cpu1 = server.process_tree_cpu() if server else {}
    busy1, total1 = machine_busy()
    for p in procs:
        p.join(30)
    after = count(database_url, project) if database_url else (0, 0, 0)

    agg = SenderResult()
    for r in results:
        agg.requests += r["requests"]
        agg.spans += r["spans"]
        agg.traces += r["traces"]
        agg.retries_503 += r["retries_503"]
        agg.errors += r["errors"]
        agg.failed_requests += r["failed_requests"]
        agg.error_samples += r["error_samples"]
        agg.latencies += r["latencies"]
        agg.e2e_latencies += r["e2e_latencies"]
        agg.cpu_s += r["cpu_s"]
    first = min((r["first_send"] for r in results if r["first_send"]), default=t0)
    last = max((r["last_ack"] for r in results), default=t_end)
    wall = max(last - first, 1e-9)
    stored = after[0] - before[0]
    report: dict[str, Any] = {
        "protocol": protocol, "project": project, "senders": args.senders,
        "connections_per_sender": args.connections, "requests": agg.requests,
        "spans_acked": agg.spans, "traces_acked": agg.traces, "wall_s": round(wall, 2),
        "acked_spans_per_s": round(agg.spans / wall),
        "acked_mb_per_s": None,
        "latency_p50_ms": round(percentile(agg.latencies, 50) * 1000, 1),
        "latency_p99_ms": round(percentile(agg.latencies, 99) * 1000, 1),
        "latency_incl_retries_p50_ms": round(percentile(agg.e2e_latencies, 50) * 1000, 1),
        "latency_incl_retries_p99_ms": round(percentile(agg.e2e_latencies, 99) * 1000, 1),
        "retries_503": agg.retries_503, "errors": agg.errors,
        "failed_requests": agg.failed_requests, "error_samples": agg.error_samples[:5],
        "sender_cpu_s": round(agg.cpu_s, 1),
        "machine_cpu_busy_pct": round(100 * (busy1 - busy0) / max(total1 - total0, 1e-9)),
    }
    if server:
        parts = server.cpu_breakdown(cpu0, cpu1, t_end - t0)
        report["server_cpu_cores"] = round(sum(parts.values()), 2)
        report["server_cpu_breakdown"] = parts
        report["other_processes_cores"] = round(
            (busy1 - busy0) / max(t_end - t0, 1e-9) - sum(parts.values())
            - agg.cpu_s / max(t_end - t0, 1e-9), 2)
    if database_url:
        report.update({
            "spans_stored": stored, "durable_spans_per_s": round(stored / wall),
            "traces_stored": after[1] - before[1],
            "stored_equals_acked": stored == agg.spans and after[1] - before[1] == agg.traces,
            "trace_changes_pending_at_end": after[2],
        })
        if args.drain_timeout > 0 and after[2] > 0:
            d0 = time.time()
            pending = after[2]
            while pending > 0 and time.time() - d0 < args.drain_timeout:
                time.sleep(0.5)
                pending = count(database_url, project)[2]
            report["trajectory_backlog_drain_s"] = round(time.time() - d0, 1)
            report["trace_changes_pending_after_drain"] = pending
    return report


def _print(report: dict[str, Any], bytes_per_span: float) -> None:
    report["acked_mb_per_s"] = round(report["acked_spans_per_s"] * bytes_per_span / 1e6, 1)
    p = report["protocol"].upper()
    print(f"\n== {p}: {report['senders']} senders × {report['connections_per_sender']} "
          f"connection(s), {report['wall_s']} s")
    print(f"  requests            {report['requests']}  ({report['spans_acked']} spans, "
          f"{report['traces_acked']} traces)")
    print(f"  acked spans/s       {report['acked_spans_per_s']}  "
          f"({report['acked_mb_per_s']} MB/s of OTLP protobuf)")
    if "durable_spans_per_s" in report:
        print(f"  DURABLE spans/s     {report['durable_spans_per_s']}  "
              f"(stored {report['spans_stored']} rows)")
    print(f"  latency p50 / p99   {report['latency_p50_ms']} / {report['latency_p99_ms']} ms "
          f"(incl. 503 retries: {report['latency_incl_retries_p50_ms']} / "
          f"{report['latency_incl_retries_p99_ms']} ms)")
    print(f"  503 / UNAVAILABLE   {report['retries_503']}   other errors {report['errors']}   "
          f"gave up {report['failed_requests']}")
    for s in report["error_samples"]:
        print(f"    error: {s}")
    if "server_cpu_cores" in report:
        print(f"  CPU                 server tree {report['server_cpu_cores']} cores "
              f"(trajhub + workers + PostgreSQL), senders {report['sender_cpu_s']} s total, "
              f"machine {report['machine_cpu_busy_pct']} % busy")
        print(f"    per process (cores): {report['server_cpu_breakdown']}; "
              f"other processes on this machine: {report['other_processes_cores']} cores")
    if "stored_equals_acked" in report:
        verdict = "OK" if report["stored_equals_acked"] else "MISMATCH"
        print(f"  stored == acked     {verdict} (spans {report['spans_stored']} vs "
              f"{report['spans_acked']}, traces {report['traces_stored']} vs "
              f"{report['traces_acked']})")
        print(f"  trajectory backlog  {report['trace_changes_pending_at_end']} trace changes "
              f"queued at the end" + (
                  f"; drained to {report['trace_changes_pending_after_drain']} in "
                  f"{report['trajectory_backlog_drain_s']} s"
                  if "trajectory_backlog_drain_s" in report else ""))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--protocol", choices=("http", "grpc", "both"), default="both")
    ap.add_argument("--duration", type=float, default=20.0, help="seconds of load per protocol")
    ap.add_argument("--senders", type=int, default=4, help="sender processes")
    ap.add_argument("--connections", type=int, default=1,
                    help="connections (threads) per sender process")
    ap.add_argument("--templates", type=int, default=3,
                    help="512-span request templates built per sender")
    ap.add_argument("--retry-sleep", type=float, default=0.05,
                    help="seconds to wait before retrying a 503 / UNAVAILABLE")
    ap.add_argument("--http", default="", help="URL of a running trajhub (with --grpc)")
    ap.add_argument("--grpc", default="", help="HOST:PORT of a running trajhub (with --http)")
    ap.add_argument("--database-url", default="",
                    help="PostgreSQL URL: for the server started here, or for counting rows "
                         "of a running one")
    ap.add_argument("--ingest-workers", type=int, default=0,
                    help="TRAJHUB_INGEST_WORKERS of the server started here (default: its own)")
    ap.add_argument("--drain-timeout", type=float, default=60.0,
                    help="after each protocol, wait up to this long for the derivation worker "
                         "to drain its queue (0: do not wait)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--json", default="", help="also write the results to this file")
    args = ap.parse_args()

    server = None
    if args.http or args.grpc:
        http_url, grpc_target, database_url = args.http, args.grpc, args.database_url
    else:
        env = {"TRAJHUB_LOG_LEVEL": "warning"}
        if args.ingest_workers:
            env["TRAJHUB_INGEST_WORKERS"] = str(args.ingest_workers)
        t = time.time()
        server = Server(args.database_url, env)
        http_url, grpc_target, database_url = server.http, server.grpc, \
            server.database_url
        print(f"trajhub started in {time.time() - t:.1f} s: http {http_url}, grpc "
              f"{grpc_target}, database {'external' if args.database_url else 'embedded'}, "
              f"log {server.log_path}")

    rng = random.Random(args.seed)
    sample = build_request(rng, trace_sizes(rng, 512))
    bytes_per_span = len(sample.body) / sample.spans
    print(f"workload: 512-span requests of {len(sample.body) / 1e6:.2f} MB, "
          f"{bytes_per_span:.0f} B/span, traces of 15-30 spans "
          f"({len(sample.traces)} traces/request)")
    protocols = ["http", "grpc"] if args.protocol == "both" else [args.protocol]
    reports = []
    exit_code = None
    try:
        for proto in protocols:
            if (proto == "http" and not http_url) or (proto == "grpc" and not grpc_target):
                raise SystemExit(f"no {proto} endpoint")
            r = run_phase(proto, args, http_url, grpc_target, database_url, server)
            _print(r, bytes_per_span)
            reports.append(r)
    finally:
        if server is not None:
            exit_code = server.stop_and_report()
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"bytes_per_span": bytes_per_span, "runs": reports,
                       "server_exit_code": exit_code}, f, indent=2)
    bad = any(not r.get("stored_equals_acked", True) or r["errors"] or r["failed_requests"]
              for r in reports)
    return 1 if bad or exit_code not in (None, 0) else 0


if __name__ == "__main__":
    sys.exit(main())
