"""One very large trace: how long after its last span its trajectory is final, what
reading it costs, paged and whole, how much trajhub's processes grow, and how soon the web UI
shows it.

The trace is what a long-running OpenInference-traced agent sends: one root AGENT span, then
per turn one LLM span (model step) and two TOOL spans (tool steps), each with ~1 KB input and
output, all children of the root. `--spans 30000` gives 10,000 model steps and 20,000 tool
steps (a long agent's shape: two tool calls per model turn); the root is sent last, as an SDK
exports it when the run ends. The spans go over OTLP/HTTP in requests of 512, one at a time.

Reported:
- seconds from the last acknowledgement to the trajectory being final;
- first page (100 items) of each paged endpoint, median of --runs: GET
  /api/v1/trajectories/{id}/steps, /api/v1/traces/{id}/spans, /api/v1/trajectories/{id}/events
  ?limit=100; and the last page of steps (offset total-100);
- the exports, once each: GET /api/v1/trajectories/{id} (the whole document), GET
  /api/v1/traces/{id} and GET /api/v1/trajectories/{id}/events (all events);
- the resident memory of trajhub's processes (the server, its ingest and derivation workers;
  PostgreSQL not included) before (once they have settled after starting), at its peak while
  sending and reading (sampled every 0.2 s), and after; which processes grew most, and each
  one's share of the peak;
- with --browser (Debian's Chromium via Playwright): the web UI's first screen, navigation to
  the trajectory page -> its first step rows and lanes drawn, median of --runs.

    .venv/bin/python bench/large_trace.py --spans 30000 --browser
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import random
import shutil
import statistics
import sys
import time
from pathlib import Path

import asyncpg
import httpx
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.trace.v1.trace_pb2 import ResourceSpans, Span, Status

from trajhub.normalizers.atif import key_value

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from _common import BackgroundSampler, Server, _text  # noqa: E402

BATCH = 512


def build_spans(n: int, rng: random.Random) -> tuple[bytes, list[Span]]:
    trace_id = os.urandom(16)
    root_id = os.urandom(8)
    t0 = time.time_ns() - 3_600_000_000_000
    spans: list[Span] = []
    clock = t0
    turn = 0
    while len(spans) < n - 1:
        turn += 1
        kinds = ["LLM", "TOOL", "TOOL"][: n - 1 - len(spans)]
        for kind in kinds:
            attrs = {"openinference.span.kind": kind,
                     "input.value": _text(rng, 1000), "output.value": _text(rng, 1000)}
            if kind == "LLM":
                attrs.update({"llm.model_name": "gpt-4o-mini", "llm.token_count.prompt": 900,
                              "llm.token_count.completion": 120})
                name = "ChatOpenAI"
            else:
                attrs["tool.name"] = f"tool_{turn % 7}"
                name = attrs["tool.name"]
            spans.append(Span(
                trace_id=trace_id, span_id=os.urandom(8), parent_span_id=root_id, name=name,
                kind=Span.SPAN_KIND_INTERNAL, start_time_unix_nano=clock,
                end_time_unix_nano=clock + 5_000_000,
                attributes=[key_value(k, v) for k, v in attrs.items()],
                status=Status(code=Status.STATUS_CODE_OK)))
            clock += 6_000_000
    spans.append(Span(
        trace_id=trace_id, span_id=root_id, name="agent", kind=Span.SPAN_KIND_INTERNAL,
        start_time_unix_nano=t0, end_time_unix_nano=clock,
        attributes=[key_value("openinference.span.kind", "AGENT"),
                    key_value("input.value", _text(rng, 1000)),
                    key_value("output.value", _text(rng, 1000))],
        status=Status(code=Status.STATUS_CODE_OK)))
    return trace_id, spans


def body(spans: list[Span]) -> bytes:
    rs = ResourceSpans()
    rs.resource.attributes.extend([key_value("service.name", "large-trace-agent")])
    ss = rs.scope_spans.add()
    ss.scope.name = "openinference.instrumentation.langchain"
    ss.spans.extend(spans)
    return ExportTraceServiceRequest(resource_spans=[rs]).SerializeToString()


class RssSampler(BackgroundSampler):
    """The summed resident memory of trajhub's processes, every 0.2 s, and its peak; and each
    process's own peak above its first sample, by role (bench/memory.py's `role`)."""

    def __init__(self, server: Server) -> None:
        import psutil

        super().__init__(0.2)
        self.root = psutil.Process(server.proc.pid)
        self.peak = 0
        self.first: dict[int, int] = {}
        self.growth: dict[int, int] = {}
        #: each process's growth over its first sample when the sum last peaked
        self.at_peak: dict[int, int] = {}

    def now(self) -> int:
        total = 0
        grown: dict[int, int] = {}
        for p in (self.root, *self.root.children(recursive=True)):
            with contextlib.suppress(Exception):  # a process that just exited
                rss = p.memory_info().rss
                total += rss
                first = self.first.setdefault(p.pid, rss)
                grown[p.pid] = rss - first
                self.growth[p.pid] = max(self.growth.get(p.pid, 0), rss - first)
        if total > self.peak:
            self.at_peak = grown
        return total

    def settle(self, timeout: float = 15.0) -> int:
        """Waits until the processes have stopped growing (the workers import their modules
        after `trajhub ready`), then counts growth from there; returns the sum."""
        deadline = time.monotonic() + timeout
        last = self.now()
        while time.monotonic() < deadline:
            time.sleep(0.5)
            total = self.now()
            if abs(total - last) < 2**20:
                break
            last = total
        self.first.clear()
        self.growth.clear()
        self.peak = 0
        return self.now()

    def roles(self) -> str:
        """The processes that grew most, each as `<role> +<growth> MiB`."""
        from memory import role

        grown = sorted(self.growth.items(), key=lambda g: -g[1])[:4]
        return ", ".join(f"{role(pid, self.root.pid)} +{g / 2**20:,.0f}" for pid, g in grown)

    def roles_at_peak(self) -> str:
        """Each process's share of the peak, e.g. `derivation worker +200, receiver +40`."""
        from memory import role

        grown = sorted(self.at_peak.items(), key=lambda g: -g[1])[:4]
        return ", ".join(f"{role(pid, self.root.pid)} {g / 2**20:+,.0f}" for pid, g in grown)

    def sample(self) -> None:
        self.peak = max(self.peak, self.now())


async def wait_final(url: str, trace_id: str) -> int:
    """Waits until the trajectory is final; returns its revision (how often it was derived)."""
    conn = await asyncpg.connect(url)
    try:
        while True:
            row = await conn.fetchrow(
                "SELECT status, revision FROM trajectories WHERE trace_id = $1", trace_id)
            if row is not None and row["status"] == "final":
                return int(row["revision"])
            await asyncio.sleep(0.1)
    finally:
        await conn.close()


def timed_get(client: httpx.Client, url: str) -> tuple[float, int, int]:
    started = time.perf_counter()
    r = client.get(url)
    return time.perf_counter() - started, len(r.content), r.status_code


def median_get(client: httpx.Client, url: str, runs: int) -> tuple[float, int, int]:
    results = [timed_get(client, url) for _ in range(runs)]
    return statistics.median(r[0] for r in results), results[0][1], results[-1][2]


CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run"]
#: the first screen: the step table's first rows and the lane drawn
FIRST_SCREEN = ("() => document.querySelectorAll('#step-table tbody tr[data-step-id]').length "
                ">= 10 && document.querySelector('.timeline .lane-track') !== null")


def first_screen(base: str, trace_id: str, runs: int) -> list[float]:
    """Milliseconds from navigation start to the trajectory page's first screen, per run."""
    from playwright.sync_api import sync_playwright

    chromium = shutil.which("chromium")
    if chromium is None:
        raise SystemExit("no Chromium on PATH (apt-get install chromium)")
    times = []
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium, args=CHROMIUM_ARGS)
        for _ in range(runs):
            context = browser.new_context(viewport={"width": 1400, "height": 900})
            page = context.new_page()
            errors: list[str] = []
            page.on("pageerror", lambda e: errors.append(str(e)))  # noqa: B023
            page.goto(f"{base}/#/trajectories/{trace_id}")
            page.wait_for_function(FIRST_SCREEN, polling="raf", timeout=120_000)
            times.append(page.evaluate("performance.now()"))
            if errors:
                raise SystemExit(f"JavaScript errors: {errors}")
            context.close()
        browser.close()
    return times


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--spans", type=int, default=30_000)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--browser", action="store_true", help="also the web UI's first screen")
    ap.add_argument("--database-url", default="")
    args = ap.parse_args()
    rng = random.Random(20)
    trace_id, spans = build_spans(args.spans, rng)
    bodies = [body(spans[i:i + BATCH]) for i in range(0, len(spans), BATCH)]
    del spans
    server = Server(args.database_url, {"TRAJHUB_LOG_LEVEL": "warning"})
    try:
        with RssSampler(server) as rss, httpx.Client(base_url=server.http,
                                                       timeout=300) as client:
            before = rss.settle()
            for b in bodies:
                r = client.post("/v1/traces", content=b,
                                headers={"Content-Type": "application/x-protobuf"})
                r.raise_for_status()
            last_ack = time.perf_counter()
            tid = trace_id.hex()
            revision = asyncio.run(wait_final(server.database_url, tid))
            final_after = time.perf_counter() - last_ack
            total = client.get(f"/api/v1/trajectories/{tid}/steps?limit=1").json()["total"]
            pages = {
                "steps, first 100": median_get(
                    client, f"/api/v1/trajectories/{tid}/steps?limit=100", args.runs),
                "steps, last 100": median_get(
                    client, f"/api/v1/trajectories/{tid}/steps?limit=100&offset={total - 100}",
                    args.runs),
                "spans, first 100": median_get(
                    client, f"/api/v1/traces/{tid}/spans?limit=100", args.runs),
                "events, first 100": median_get(
                    client, f"/api/v1/trajectories/{tid}/events?limit=100", args.runs),
            }
            paged_peak = rss.peak
            exports = {
                "GET trajectory": timed_get(client, f"/api/v1/trajectories/{tid}"),
                "GET trace": timed_get(client, f"/api/v1/traces/{tid}"),
                "GET events": timed_get(client, f"/api/v1/trajectories/{tid}/events"),
            }
            screens = first_screen(server.http, tid, args.runs) if args.browser else []
            after = rss.now()
        print(f"{args.spans:,} spans in {len(bodies)} requests ({total:,} steps): final "
              f"{final_after:.1f} s after the last ack, derived {revision} times")
        print(f"  first pages (median of {args.runs}):")
        for name, (seconds, size, status) in pages.items():
            print(f"    {name:<18} {seconds * 1000:8.1f} ms  {size / 2**10:8.0f} KiB  "
                  f"HTTP {status}")
        print("  exports (once):")
        for name, (seconds, size, status) in exports.items():
            print(f"    {name:<18} {seconds * 1000:8.0f} ms  {size / 2**20:8.1f} MiB  "
                  f"HTTP {status}")
        print(f"  trajhub RSS: before {before / 2**20:,.0f} MiB, peak while ingesting, deriving "
              f"and paging {paged_peak / 2**20:,.0f} MiB (+{(paged_peak - before) / 2**20:,.0f}),"
              f" peak with the exports {rss.peak / 2**20:,.0f} MiB "
              f"(+{(rss.peak - before) / 2**20:,.0f}), after {after / 2**20:,.0f} MiB")
        print(f"  grew most (MiB, own peak over its first sample): {rss.roles()}")
        print(f"  at the last peak of the sum (MiB over each one's first sample): "
              f"{rss.roles_at_peak()}")
        if screens:
            print(f"  web UI first screen (Chromium, navigation -> first rows and lanes): median "
                  f"{statistics.median(screens):,.0f} ms, min {min(screens):,.0f}, "
                  f"max {max(screens):,.0f}")
    finally:
        server.stop_and_report()
    return 0


if __name__ == "__main__":
    sys.exit(main())
