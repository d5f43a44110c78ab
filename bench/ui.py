"""How fast the web UI draws a large trajectory: a 500-step run in headless Chromium.

Starts its own `trajhub serve` (embedded PostgreSQL in a temp dir), sends one trace of a planner
agent with 5 sub-agents, each making 50 model calls and 50 tool calls (every 25th tool call fails),
waits for its trajectory to be final, then opens it in Debian's Chromium (Playwright, system
browser) and prints, as the median of --runs:

- cold open: navigation start → every step bar of the timeline drawn (loads the shell and the
  ES modules, fetches the trajectory, lays it out, renders the timeline and the step table);
- in-app open: from the trajectory list, hash change → every bar drawn;
- step select: click on a step → its payloads shown and the next frame laid out.

It also prints the part of the cold open spent in the UI's own layout and DOM building (a
`performance.measure` the trajectory page records); the rest is loading, fetching and the
browser's style and layout pass.

The target is under 1 s for the open: a person waits for it on every run they look at.
Usage: python bench/ui.py [--runs 5] [--steps 500]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import time
from typing import Any

import httpx
from _common import Server
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.trace.v1.trace_pb2 import Span

from trajhub.normalizers.atif import key_value

CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run"]
PROJECT = "bench-ui"
MS = 1_000_000


def build(steps: int, agents: int = 5) -> tuple[bytes, str, int]:
    """One trace: a planner and `agents` sub-agents sharing `steps` model/tool steps."""
    trace_id = os.urandom(16)
    spans: list[Span] = []
    t = 1_700_000_000_000_000_000

    def span(name: str, parent: bytes, start: int, dur: int, attrs: dict[str, Any],
             error: bool = False) -> bytes:
        s = Span(trace_id=trace_id, span_id=os.urandom(8), parent_span_id=parent, name=name,
                 kind=Span.SPAN_KIND_INTERNAL, start_time_unix_nano=start,
                 end_time_unix_nano=start + dur)
        s.attributes.extend(key_value(k, v) for k, v in attrs.items())
        if error:
            s.status.code = 2
            s.status.message = "tool backend returned HTTP 503"
        spans.append(s)
        return s.span_id

    per_agent = steps // agents
    total_ms = agents * per_agent * 12 + 10
    root = span("invoke_agent planner", b"", t, total_ms * MS,
                {"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "planner"})
    clock = t + 5 * MS
    messages = json.dumps([{"role": "system", "content": "You are a careful worker. " * 20},
                           {"role": "user", "content": "Summarise the findings so far. " * 10}])
    for a in range(agents):
        agent = span(f"invoke_agent worker_{a}", root, clock, per_agent * 12 * MS,
                     {"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": f"worker_{a}"})
        for i in range(per_agent // 2):
            span("chat gpt-4o", agent, clock, 8 * MS, {
                "gen_ai.operation.name": "chat", "gen_ai.request.model": "gpt-4o",
                "gen_ai.usage.input_tokens": 900 + i, "gen_ai.usage.output_tokens": 40,
                "gen_ai.input.messages": messages,
                "gen_ai.output.messages": json.dumps([{"role": "assistant", "content": "ok"}])})
            clock += 9 * MS
            span("execute_tool search", agent, clock, 3 * MS, {
                "gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "search",
                "gen_ai.tool.call.id": f"call_{a}_{i}",
                "gen_ai.tool.call.arguments": json.dumps({"query": f"q{i}"}),
                "gen_ai.tool.call.result": json.dumps({"hits": [f"doc{i}"]})},
                error=i % 25 == 24)
            clock += 3 * MS
    request = ExportTraceServiceRequest()
    rs = request.resource_spans.add()
    rs.resource.attributes.append(key_value("service.name", "bench-ui"))
    rs.scope_spans.add().spans.extend(spans)
    return request.SerializeToString(), trace_id.hex(), agents * per_agent + agents


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--steps", type=int, default=500)
    args = parser.parse_args()
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    if chromium is None:
        raise SystemExit("no Chromium on PATH (apt-get install chromium)")
    from playwright.sync_api import sync_playwright

    server = Server()
    try:
        body, trace_id, bars = build(args.steps)
        base = server.http
        response = httpx.post(f"{base}/v1/traces", content=body, headers={
            "content-type": "application/x-protobuf", "trajhub-project": PROJECT}, timeout=60)
        response.raise_for_status()
        url = f"{base}/api/v1/trajectories/{trace_id}"
        deadline = time.monotonic() + 120
        while True:
            r = httpx.get(url, params={"project": PROJECT})
            if r.status_code == 200 and r.headers.get("x-trajectory-status") == "final":
                break
            if time.monotonic() > deadline:
                raise SystemExit("the trajectory did not become final")
            time.sleep(0.2)
        doc = r.json()
        step_count = sum(len(a["steps"]) for a in doc["agent_steps"])
        print(f"trajectory: {step_count} steps in {len(doc['agent_steps'])} agents, "
              f"{len(r.content) / 1e6:.2f} MB of JSON")

        page_url = f"{base}/#/trajectories/{trace_id}?project={PROJECT}"
        list_url = f"{base}/#/trajectories?project={PROJECT}"
        drawn = f"() => document.querySelectorAll('.timeline .bar').length === {bars}"
        cold, warm, select, render = [], [], [], []
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=chromium, args=CHROMIUM_ARGS)
            for _ in range(args.runs):
                context = browser.new_context(viewport={"width": 1400, "height": 900})
                page = context.new_page()
                errors: list[str] = []
                page.on("pageerror", lambda e: errors.append(str(e)))  # noqa: B023
                page.goto(page_url)
                page.wait_for_function(drawn, polling="raf", timeout=30_000)
                cold.append(page.evaluate("performance.now()"))
                render.append(page.evaluate(
                    "() => performance.getEntriesByName('trajhub:render').at(-1).duration"))

                page.goto(list_url)
                page.wait_for_selector("#trajectory-table tbody tr")
                start = page.evaluate(f"(() => {{ const t = performance.now(); "
                                      f"location.hash = '#/trajectories/{trace_id}"
                                      f"?project={PROJECT}'; return t; }})()")
                page.wait_for_function(drawn, polling="raf", timeout=30_000)
                warm.append(page.evaluate("performance.now()") - start)

                # measured in the page: the click's work, then the next frame (style, layout)
                select.append(page.evaluate(f"""async () => {{
                    const buttons = document.querySelectorAll('#step-table .step-button');
                    const button = buttons[{bars // 2}];
                    const start = performance.now();
                    button.click();
                    await new Promise((done) => requestAnimationFrame(() => setTimeout(done)));
                    if (!document.querySelector('#step-detail h2')) throw new Error('no detail');
                    return performance.now() - start;
                }}"""))
                if errors:
                    raise SystemExit(f"JavaScript errors: {errors}")
                context.close()
            browser.close()

        def row(name: str, values: list[float]) -> str:
            return (f"{name:<44} median {statistics.median(values):7.0f} ms   "
                    f"min {min(values):7.0f} ms   max {max(values):7.0f} ms")

        print(f"{args.runs} runs in headless Chromium ({chromium})")
        print(row(f"cold open, navigation -> {bars} bars drawn", cold))
        print(row("  of which layout + DOM build (script)", render))
        print(row("in-app open, hash change -> bars drawn", warm))
        print(row("step select -> payloads shown", select))
    finally:
        code = server.stop()
    if code != 0:
        print(f"trajhub exited {code}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
