"""Memory benchmark: does any trajhub process grow under a long sustained load?

    .venv/bin/python bench/memory.py [--minutes 10] [--rate SPANS_PER_S] [--warmup-minutes 2]

Starts its own `trajhub serve` (embedded PostgreSQL in a temporary data directory, or
`--database-url`). Without `--rate` it first measures the maximum durable ingest rate for
`--probe-seconds` with bench/ingest.py's load (OTLP/HTTP, `--senders` processes). Then it sends
HALF that rate (or `--rate`) for `--minutes` with the same workload (512-span requests of
realistic agent traces, fresh trace ids each), paced evenly over time, and samples the resident
set size (RSS, from /proc) of every trajhub process every `--sample-seconds`: the receiving
process, each ingest worker, each derivation worker and multiprocessing's resource tracker.
PostgreSQL is not trajhub's and is not judged (its RSS is mostly shared buffers).

It prints RSS over time as a table and, per process, the growth from the start of the measured
part (after `--warmup-minutes`) to the end: the mean of the first 3 samples after warm-up
against the mean of the last 3. Verdict: every process grows less than `--max-growth` (10 %).
Exit status non-zero on a failed verdict, lost spans, errors, a worker that was replaced, or a
server that did not exit 0.
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import random
import sys
import threading
import time
import urllib.parse
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from _common import Server, Template, build_request, trace_sizes, unique_body

from tests.harness import proc_stat

PAGE = os.sysconf("SC_PAGE_SIZE")


# ---------------------------------------------------------------------------------------------
# processes and their RSS, from /proc (psutil is not a declared dependency)


def rss_bytes(pid: int) -> int | None:
    fields = proc_stat(pid)
    return int(fields[21]) * PAGE if fields else None  # field 24: rss in pages


def descendants(root: int) -> list[int]:
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            fields = proc_stat(int(entry))
            if fields:
                children.setdefault(int(fields[1]), []).append(int(entry))
    out, todo = [], [root]
    while todo:
        for child in children.get(todo.pop(), []):
            out.append(child)
            todo.append(child)
    return sorted(out)


def role(pid: int, root: int) -> str:
    """What a trajhub process is. Derivation workers lower their priority (os.nice(10)) and
    ingest workers do not; both are multiprocessing `spawn` children."""
    if pid == root:
        return "receiver"
    try:
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
    except OSError:
        return "gone"
    if "resource_tracker" in cmdline:
        return "resource tracker"
    fields = proc_stat(pid)
    if fields and int(fields[16]) > 0:  # field 19: nice
        return "derivation worker"
    return "ingest worker"


@dataclass
class Tracked:
    pid: int
    label: str
    role: str
    samples: dict[float, int] = field(default_factory=dict)  # elapsed s → RSS bytes


class RssSampler:
    def __init__(self, root: int) -> None:
        self.root = root
        self.procs: dict[int, Tracked] = {}
        self.times: list[float] = []

    def _label(self, base: str) -> str:
        if base == "receiver":
            return base
        n = sum(1 for t in self.procs.values() if t.role == base)
        return f"{base} {n + 1}"

    def sample(self, elapsed: float) -> None:
        self.times.append(elapsed)
        for pid in [self.root, *descendants(self.root)]:
            # a derivation worker lowers its priority only once it has started: until then
            # it looks like an ingest worker, so the role is looked at again on every sample
            base = role(pid, self.root)
            if pid not in self.procs:
                self.procs[pid] = Tracked(pid, self._label(base), base)
            elif base not in (self.procs[pid].role, "gone"):
                self.procs[pid].label = self._label(base)
                self.procs[pid].role = base
            rss = rss_bytes(pid)
            if rss is not None:
                self.procs[pid].samples[elapsed] = rss


# ---------------------------------------------------------------------------------------------
# paced load


@dataclass
class LoadResult:
    requests: int = 0
    spans: int = 0
    retries_503: int = 0
    errors: list[str] = field(default_factory=list)
    late_s: float = 0.0  # the longest time from a request's scheduled send to its answer


def paced_sender(url: str, project: str, templates: list[Template], start: float,
                 interval: float, offset: int, stride: int, stop_at: float, res: LoadResult,
                 lock: threading.Lock) -> None:
    """Send request number offset, offset + stride, … each at start + number × interval."""
    u = urllib.parse.urlsplit(url)
    conn = http.client.HTTPConnection(u.hostname or "127.0.0.1", u.port or 80, timeout=60)
    headers = {"Content-Type": "application/x-protobuf", "trajhub-project": project}
    n = offset
    while True:
        due = start + n * interval
        if due >= stop_at:
            break
        now = time.time()
        if now < due:
            time.sleep(due - now)
        template = templates[n % len(templates)]
        body, _ = unique_body(template)
        while True:
            try:
                conn.request("POST", "/v1/traces", body, headers)
                resp = conn.getresponse()
                data = resp.read()
            except (OSError, http.client.HTTPException) as exc:
                conn.close()
                with lock:
                    res.errors.append(f"connection: {exc!r}")
                break
            if resp.status == 503:
                with lock:
                    res.retries_503 += 1
                time.sleep(0.05)
                continue
            with lock:
                if resp.status == 200 and not data:  # an empty answer: no partial_success
                    res.requests += 1
                    res.spans += template.spans
                else:
                    res.errors.append(f"HTTP {resp.status}: {data[:200]!r}")
                res.late_s = max(res.late_s, time.time() - due)
            break
        n += stride
    conn.close()


# ---------------------------------------------------------------------------------------------


def probe_max_rate(server: Server, args: argparse.Namespace) -> int:
    """Durable spans/s at full speed, measured by bench/ingest.py's run_phase."""
    import ingest

    ns = argparse.Namespace(seed=args.seed + 100, connections=1, templates=3,
                            duration=args.probe_seconds, retry_sleep=0.05,
                            senders=args.senders, drain_timeout=120.0)
    report = ingest.run_phase("http", ns, server.http, server.grpc,
                              server.database_url, server)
    print(f"max rate: {report['durable_spans_per_s']} durable spans/s over "
          f"{report['wall_s']} s (stored == acked: {report['stored_equals_acked']}); "
          f"trajectory backlog drained in {report.get('trajectory_backlog_drain_s', 0)} s")
    return int(report["durable_spans_per_s"])


def growth(t: Tracked, after: float) -> tuple[int, int, float] | None:
    """(baseline, end, growth) of RSS after warm-up: mean of the first 3 samples at or after
    `after` against the mean of the last 3."""
    points = [rss for at, rss in sorted(t.samples.items()) if at >= after]
    if len(points) < 4:
        return None
    k = min(3, len(points) // 2)
    base, end = sum(points[:k]) / k, sum(points[-k:]) / k
    return round(base), round(end), (end - base) / base


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--minutes", type=float, default=10.0, help="sustained load duration")
    ap.add_argument("--rate", type=int, default=0,
                    help="spans/s to sustain (default: half the measured maximum)")
    ap.add_argument("--probe-seconds", type=float, default=20.0,
                    help="length of the maximum-rate measurement (without --rate)")
    ap.add_argument("--warmup-minutes", type=float, default=2.0,
                    help="excluded from the growth figures")
    ap.add_argument("--sample-seconds", type=float, default=10.0, help="RSS sampling period")
    ap.add_argument("--max-growth", type=float, default=0.10,
                    help="largest growth after warm-up that passes (fraction)")
    ap.add_argument("--senders", type=int, default=4,
                    help="sender processes of the maximum-rate measurement")
    ap.add_argument("--connections", type=int, default=8,
                    help="threads sending the paced load (each request waits for its answer)")
    ap.add_argument("--database-url", default="", help="an external PostgreSQL instead of "
                    "the embedded one")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--json", default="", help="also write the results to this file")
    args = ap.parse_args()

    t = time.time()
    server = Server(args.database_url, {"TRAJHUB_LOG_LEVEL": "warning"})
    print(f"trajhub started in {time.time() - t:.1f} s (pid {server.proc.pid}), database "
          f"{'external' if args.database_url else 'embedded'}, log {server.log_path}")
    report: dict[str, Any] = {}
    exit_code = None
    sampler = RssSampler(server.proc.pid)
    try:
        max_rate = 0
        if args.rate:
            rate = args.rate
        else:
            max_rate = probe_max_rate(server, args)
            rate = max_rate // 2
        rng = random.Random(args.seed)
        templates = [build_request(rng, trace_sizes(rng, 512)) for _ in range(3)]
        spans_per_request = templates[0].spans
        interval = spans_per_request / rate
        project = f"bench-memory-{os.urandom(3).hex()}"
        duration = args.minutes * 60
        print(f"sustaining {rate} spans/s ({1 / interval:.1f} requests of "
              f"{spans_per_request} spans per second) for {args.minutes:g} min; RSS every "
              f"{args.sample_seconds:g} s; warm-up {args.warmup_minutes:g} min excluded")

        res, lock = LoadResult(), threading.Lock()
        start = time.time() + 0.5
        stop_at = start + duration
        threads = [threading.Thread(target=paced_sender, daemon=True, args=(
            server.http, project, templates, start, interval, i, args.connections,
            stop_at, res, lock)) for i in range(args.connections)]
        for th in threads:
            th.start()
        sampler.sample(0.0)
        next_sample = start + args.sample_seconds
        while time.time() < stop_at:
            time.sleep(max(0.0, min(next_sample, stop_at) - time.time()))
            if time.time() >= next_sample:
                sampler.sample(round(time.time() - start, 1))
                next_sample += args.sample_seconds
        for th in threads:
            th.join(120)
        if time.time() - start - sampler.times[-1] > 1:  # the last answers came in since
            sampler.sample(round(time.time() - start, 1))
        wall = time.time() - start
        import ingest

        spans_stored, _, pending = ingest.count(server.database_url, project)

        # the table: one row per sample, one column per process (MiB)
        procs = sorted(sampler.procs.values(), key=lambda p: (p.label != "receiver", p.label))
        print("\nRSS (MiB) over time")
        print("   t (s)  " + "".join(f"{p.label:>20}" for p in procs))
        for at in sampler.times:
            cells = "".join(f"{p.samples[at] / 2**20:>20.1f}" if at in p.samples
                            else f"{'-':>20}" for p in procs)
            print(f"{at:>8.0f}  {cells}")

        warmup = args.warmup_minutes * 60
        print(f"\ngrowth after warm-up (first 3 samples at ≥ {warmup:.0f} s vs the last 3)")
        verdicts: dict[str, Any] = {}
        for p in procs:
            g = growth(p, warmup)
            if g is None:
                print(f"  {p.label:<22} too few samples after warm-up")
                verdicts[p.label] = None
                continue
            base, end, frac = g
            ok = frac < args.max_growth
            verdicts[p.label] = {"pid": p.pid, "baseline_bytes": base, "end_bytes": end,
                                 "growth": round(frac, 4), "ok": ok}
            print(f"  {p.label:<22} {base / 2**20:8.1f} → {end / 2**20:8.1f} MiB  "
                  f"{100 * frac:+6.1f} %  {'ok' if ok else 'GROWS'}")
        replaced = [p.label for p in procs if max(p.samples, default=0) < sampler.times[-1]]
        judged = [v for v in verdicts.values() if v is not None]
        passed = bool(judged) and all(v["ok"] for v in judged) and not replaced
        print(f"\nload: {res.requests} requests, {res.spans} spans acked "
              f"({res.spans / wall:.0f} spans/s of {rate} asked), {spans_stored} stored, "
              f"{res.retries_503} × 503, {len(res.errors)} errors, every request answered within "
              f"{res.late_s:.2f} s of its scheduled send; {pending} trace changes queued at "
              f"the end")
        for e in res.errors[:5]:
            print(f"  error: {e}")
        if replaced:
            print(f"processes gone before the end (restarted?): {', '.join(replaced)}")
        print(f"verdict: {'PASS' if passed else 'FAIL'} (every trajhub process grows < "
              f"{100 * args.max_growth:g} % after warm-up)")
        report = {
            "max_durable_spans_per_s": max_rate or None, "rate_spans_per_s": rate,
            "minutes": args.minutes, "warmup_minutes": args.warmup_minutes,
            "sample_seconds": args.sample_seconds, "requests": res.requests,
            "spans_acked": res.spans, "spans_stored": spans_stored,
            "achieved_spans_per_s": round(res.spans / wall), "retries_503": res.retries_503,
            "errors": res.errors[:20], "max_late_s": round(res.late_s, 3),
            "trace_changes_pending_at_end": pending,
            "rss_bytes": {p.label: {"pid": p.pid, "samples": p.samples} for p in procs},
            "growth": verdicts, "replaced": replaced, "passed": passed,
        }
    finally:
        exit_code = server.stop_and_report()
    report["server_exit_code"] = exit_code
    if args.json:
        with open(args.json, "w") as f:
            json.dump(report, f, indent=2)
    bad = (not report.get("passed") or report.get("errors")
           or report.get("spans_stored") != report.get("spans_acked"))
    return 1 if bad or exit_code != 0 else 0


if __name__ == "__main__":
    sys.exit(main())
