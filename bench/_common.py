"""Shared by the benchmarks: realistic agent traces as OTLP protobuf, and a `trajhub serve`
started in a temporary data directory (embedded PostgreSQL) or pointed at a database URL.

Traces look like what openinference-instrumentation-langchain sends for a LangGraph ReAct agent
(tests/fixtures/real-clients/openinference): a root `LangGraph` CHAIN, per model turn an `agent`
AGENT node with `call_model` / `RunnableSequence` / `Prompt` CHAINs, an LLM span (≈1 KB
input.value and output.value, token counts, llm.input_messages/output_messages, tool calls) and a
`should_continue` CHAIN, and per tool turn a `tools` CHAIN with TOOL spans. 15–30 spans per trace,
≈2.4 KB per span on the wire.

Bodies are built once as templates. Every trace id in a template starts with the same random
12-byte marker; `unique_body()` replaces that marker with fresh random bytes (one
`bytes.replace`, same length), so each request carries new trace ids at almost no CPU cost.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Coroutine, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Self

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.trace.v1.trace_pb2 import ResourceSpans, Span, Status

from trajhub.normalizers.atif import key_value

# the repository's root: the benchmarks run as scripts, and start and stop their servers with the
# test harness's helpers
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from tests.harness import LoopbackPorts, ready_ports, stop_process

MARKER_LEN = 12

_TEXT = (
    "the agent plans a step and calls a tool to look up the weather forecast for the city "
    "then it adds numbers checks the result summarises findings for the user and answers "
    "politely with citations from the retrieved documents about travel budgets"
)
_WORDS = _TEXT.split()


def _text(rng: random.Random, size: int) -> str:
    out: list[str] = []
    n = 0
    while n < size:
        w = rng.choice(_WORDS)
        out.append(w)
        n += len(w) + 1
    return " ".join(out)[:size]


TOOLS = (("get_weather", "Return the current weather for a city."),
         ("search_docs", "Search the knowledge base."),
         ("add", "Add two integers."),
         ("fetch_url", "Fetch a web page and return its text."))


@dataclass
class TraceShape:
    """What a generated trace should derive into (for checking the derivation worker)."""
    spans: int
    model_steps: int
    tool_steps: int
    input_tokens: int
    output_tokens: int


@dataclass
class _Builder:
    rng: random.Random
    trace_id: bytes
    t0: int
    spans: list[Span] = field(default_factory=list)
    clock: int = 0

    def new_id(self) -> bytes:
        return self.rng.getrandbits(64).to_bytes(8, "big")

    def add(self, name: str, parent: bytes, kind: str, attrs: dict[str, Any], dur_ms: int,
            start: int | None = None) -> tuple[bytes, int, int]:
        sid = self.new_id()
        start_ns = self.t0 + (self.clock if start is None else start)
        end_ns = start_ns + dur_ms * 1_000_000
        attrs = {**attrs, "openinference.span.kind": kind}
        self.spans.append(Span(
            trace_id=self.trace_id, span_id=sid, parent_span_id=parent, name=name,
            kind=Span.SPAN_KIND_INTERNAL, start_time_unix_nano=start_ns,
            end_time_unix_nano=end_ns, attributes=[key_value(k, v) for k, v in attrs.items()],
            status=Status(code=Status.STATUS_CODE_OK)))
        return sid, start_ns - self.t0, end_ns - self.t0


def _meta(session: str, step: int, node: str, extra: dict[str, Any] | None = None) -> str:
    m = {"session_id": session, "user_id": "user-42", "thread_id": session,
         "ls_integration": "langgraph", "langgraph_step": step, "langgraph_node": node,
         "langgraph_triggers": [f"branch:to:{node}"], "langgraph_path": ["__pregel_pull", node],
         "langgraph_checkpoint_ns": f"{node}:0fa5048b-66c6-0758-b9af-fe7b97a3b514"}
    if extra:
        m.update(extra)
    return json.dumps(m)


def _plan(rng: random.Random, n: int) -> tuple[list[bool], list[int]]:
    """For an exact span count n (15..30): which agent turns carry should_continue, and tool
    spans per tool turn. Spans = 1 + Σ(5 or 6 per agent turn) + Σ(1 + tools per tool turn)."""
    for a in rng.sample([2, 3, 4], 3):
        for drop in range(a + 1):
            base = 1 + 6 * a - drop
            rest = n - base
            turns = a - 1
            # each tool turn: 1 `tools` CHAIN + k ≥ 1 TOOL spans
            if rest < 2 * turns:
                continue
            tools_total = rest - turns
            if turns == 0 or tools_total < turns:
                continue
            per = [1] * turns
            for _ in range(tools_total - turns):
                per[rng.randrange(turns)] += 1
            if max(per) > 6:
                continue
            conts = [True] * (a - drop) + [False] * drop
            return conts, per
    raise ValueError(f"cannot plan a trace of {n} spans")


def build_trace(rng: random.Random, trace_id: bytes, n: int) -> tuple[list[Span], TraceShape]:
    conts, tool_turns = _plan(rng, n)
    t0 = time.time_ns() - 60_000_000_000
    b = _Builder(rng, trace_id, t0)
    session = f"session-{rng.getrandbits(32):08x}"
    question = _text(rng, 160)
    root_in = json.dumps({"messages": [{"type": "human", "data": {"content": question}}]})
    io_size = 780
    root_id = b.new_id()  # root added last, spanning everything
    history = [{"role": "system", "content": "You are a helpful assistant. Use tools."},
               {"role": "user", "content": question}]
    in_tok = out_tok = tools_n = 0
    for turn, cont in enumerate(conts):
        step = 2 * turn + 1
        final = turn == len(conts) - 1
        calls = [] if final else [
            (rng.choice(TOOLS), f"call_{rng.getrandbits(40):010x}")
            for _ in range(tool_turns[turn])]
        answer = _text(rng, 300)
        node_in = json.dumps({"messages": history[1:], "pad": _text(rng, io_size - 200)})
        node_out = json.dumps({"messages": [{"type": "ai", "content": answer, "tool_calls": [
            {"name": t[0], "args": {"q": "x"}, "id": cid} for t, cid in calls]}]})
        meta = _meta(session, step, "agent")
        common = {"input.value": node_in, "input.mime_type": "application/json",
                  "output.value": node_out, "output.mime_type": "application/json",
                  "session.id": session, "metadata": meta}
        start = b.clock
        agent_id, _, _ = b.add("agent", root_id, "AGENT", common, 1, start)
        b.add("call_model", agent_id, "CHAIN", common, 1, start)
        seq_id, _, _ = b.add("RunnableSequence", agent_id, "CHAIN", common, 1, start)
        b.add("Prompt", seq_id, "CHAIN", {**common, "output.value": node_in[:400]}, 1, start)
        p_tok, c_tok = 100 + 60 * turn + rng.randrange(50), 20 + rng.randrange(40)
        in_tok += p_tok
        out_tok += c_tok
        llm: dict[str, Any] = {
            "input.value": json.dumps({"messages": [history], "pad": _text(rng, io_size)}),
            "input.mime_type": "application/json",
            "output.value": json.dumps({"generations": [[{"text": answer, "type":
                                        "ChatGeneration", "pad": _text(rng, io_size - 300)}]]}),
            "output.mime_type": "application/json",
            "llm.model_name": "gpt-4o-mini", "llm.provider": "openai", "llm.system": "openai",
            "llm.token_count.prompt": p_tok, "llm.token_count.completion": c_tok,
            "llm.token_count.total": p_tok + c_tok,
            "llm.invocation_parameters": json.dumps({"model_name": "gpt-4o-mini",
                                                     "temperature": 0.0}),
            "metadata": _meta(session, step, "agent", {"ls_provider": "openai",
                                                        "ls_model_name": "gpt-4o-mini"}),
        }
        for i, m in enumerate(history[-3:]):
            llm[f"llm.input_messages.{i}.message.role"] = m["role"]
            llm[f"llm.input_messages.{i}.message.content"] = m["content"][:200]
        llm["llm.output_messages.0.message.role"] = "assistant"
        llm["llm.output_messages.0.message.content"] = answer
        for i, (tool, cid) in enumerate(calls):
            p = f"llm.output_messages.0.message.tool_calls.{i}.tool_call."
            llm[p + "id"] = cid
            llm[p + "function.name"] = tool[0]
            llm[p + "function.arguments"] = '{"q": "x"}'
        llm["llm.finish_reason"] = "stop" if final else "tool_calls"
        b.clock += 2_000_000
        b.add("ChatOpenAI", seq_id, "LLM", llm, 800 + rng.randrange(1500), b.clock)
        b.clock += 2_500_000_000
        if cont:
            b.add("should_continue", agent_id, "CHAIN",
                  {**common, "output.value": "end" if final else "tools"}, 1, b.clock)
        b.clock += 1_000_000
        history.append({"role": "assistant", "content": answer})
        if final:
            break
        tools_id, _, _ = b.add("tools", root_id, "CHAIN", {
            "input.value": node_out, "input.mime_type": "application/json",
            "output.value": json.dumps({"messages": []}), "session.id": session,
            "metadata": _meta(session, step + 1, "tools")}, 400, b.clock)
        for tool, cid in calls:
            result = _text(rng, 600)
            b.add(tool[0], tools_id, "TOOL", {
                "input.value": '{"q": "x"}', "input.mime_type": "application/json",
                "output.value": json.dumps({"type": "tool", "data": {
                    "content": result, "tool_call_id": cid, "name": tool[0],
                    "status": "success"}}),
                "output.mime_type": "application/json", "tool.name": tool[0],
                "tool.description": tool[1], "session.id": session,
                "metadata": _meta(session, step + 1, "tools")}, 300, b.clock + 1_000_000)
            history.append({"role": "tool", "content": result[:200]})
            tools_n += 1
        b.clock += 500_000_000
    b.spans.insert(0, Span(
        trace_id=trace_id, span_id=root_id, name="LangGraph", kind=Span.SPAN_KIND_INTERNAL,
        start_time_unix_nano=t0, end_time_unix_nano=t0 + b.clock,
        attributes=[key_value(k, v) for k, v in {
            "input.value": root_in, "input.mime_type": "application/json",
            "output.value": json.dumps({"messages": history[-2:]}),
            "output.mime_type": "application/json", "session.id": session,
            "metadata": json.dumps({"session_id": session, "ls_integration": "langgraph"}),
            "openinference.span.kind": "CHAIN"}.items()],
        status=Status(code=Status.STATUS_CODE_OK)))
    assert len(b.spans) == n, (len(b.spans), n)
    return b.spans, TraceShape(n, len(conts), tools_n, in_tok, out_tok)


def resource_spans(service: str = "bench-agent") -> ResourceSpans:
    """The spans' resource: the service and the OpenTelemetry Python SDK that sent them."""
    rs = ResourceSpans()
    rs.resource.attributes.extend(key_value(k, v) for k, v in {
        "service.name": service, "telemetry.sdk.language": "python",
        "telemetry.sdk.name": "opentelemetry", "telemetry.sdk.version": "1.45.2"}.items())
    return rs


def trace_sizes(rng: random.Random, total: int) -> list[int]:
    """Trace sizes in 15..30 summing exactly to `total` (≥ 15)."""
    sizes: list[int] = []
    left = total
    while left > 0:
        if 15 <= left <= 30:
            sizes.append(left)
            break
        if left < 45:
            sizes += [left // 2, left - left // 2]
            break
        n = rng.randint(15, 30)
        sizes.append(n)
        left -= n
    return sizes


@dataclass
class Template:
    body: bytes
    marker: bytes
    spans: int
    traces: list[TraceShape]
    trace_suffixes: list[bytes]  # the last 4 bytes of each trace id, in order


def build_request(rng: random.Random, sizes: list[int]) -> Template:
    """One ExportTraceServiceRequest with one trace per entry of `sizes`."""
    marker = rng.getrandbits(8 * MARKER_LEN).to_bytes(MARKER_LEN, "big")
    rs = resource_spans()
    ss = rs.scope_spans.add()
    ss.scope.name = "openinference.instrumentation.langchain"
    ss.scope.version = "0.1.80"
    shapes, suffixes = [], []
    for i, n in enumerate(sizes):
        suffix = i.to_bytes(4, "big")
        spans, shape = build_trace(rng, marker + suffix, n)
        ss.spans.extend(spans)
        shapes.append(shape)
        suffixes.append(suffix)
    req = ExportTraceServiceRequest(resource_spans=[rs])
    body = req.SerializeToString()
    assert body.count(marker) == sum(sizes), "marker must occur once per span"
    return Template(body, marker, sum(sizes), shapes, suffixes)


def unique_body(t: Template) -> tuple[bytes, bytes]:
    """A copy of the template with fresh trace ids; returns (body, the new 12-byte prefix)."""
    prefix = os.urandom(MARKER_LEN)
    return t.body.replace(t.marker, prefix), prefix


# ---------------------------------------------------------------------------------------------
# the server under test


class Server(LoopbackPorts):
    """`trajhub serve` on free ports; embedded PostgreSQL in a temp dir unless database_url."""

    def __init__(self, database_url: str = "", env: dict[str, str] | None = None,
                 keep_dir: bool = False, data_dir: Path | None = None) -> None:
        self.tmp = Path(tempfile.mkdtemp(prefix="trajhub-bench-"))
        self.log_path = self.tmp / "server.log"
        # a data directory of the caller's is the caller's to remove
        self.keep_dir = keep_dir or data_dir is not None
        self.data_dir = data_dir or self.tmp / "data"
        cmd = [str(Path(sys.executable).with_name("trajhub")), "serve", "--http-port", "0",
               "--grpc-port", "0", "--data-dir", str(self.data_dir)]
        full_env = {k: v for k, v in os.environ.items() if not k.startswith("TRAJHUB_")}
        full_env.update(env or {})
        if database_url:
            full_env["TRAJHUB_DATABASE_URL"] = database_url
        self._log = open(self.log_path, "wb")  # noqa: SIM115
        self.proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=self._log, env=full_env)
        self.http_port = self.grpc_port = 0
        ready = threading.Event()

        def read() -> None:
            assert self.proc.stdout is not None
            for line in self.proc.stdout:
                ports = ready_ports(line.decode(errors="replace"))
                if ports:
                    self.http_port, self.grpc_port = ports
                    ready.set()

        threading.Thread(target=read, daemon=True).start()
        deadline = time.monotonic() + 120
        while not ready.wait(0.2):
            if self.proc.poll() is not None or time.monotonic() > deadline:
                self.stop()
                raise SystemExit(f"trajhub serve did not start; log:\n{self.log_text()[-3000:]}")
        self.postmaster_pid = 0
        self.database_url = database_url or self._embedded_url()

    def _embedded_url(self) -> str:
        import warnings

        warnings.filterwarnings("ignore", message=".*XDG_RUNTIME_DIR.*")
        from pgserver.utils import PostmasterInfo

        info = PostmasterInfo.read_from_pgdata(self.data_dir / "pgdata")
        if info is None:
            raise SystemExit("cannot find the embedded PostgreSQL's postmaster.pid")
        self.postmaster_pid = info.pid
        return info.get_uri()

    def process_tree_cpu(self) -> dict[str, float]:
        """CPU seconds (user+sys) so far: "trajhub" (the receiving process), "child <pid>" for
        each of its children (ingest workers, derivation worker) and "postgres" (all PostgreSQL
        processes when embedded; pg_ctl daemonizes them, so they are not trajhub's children).
        Processes that already exited (e.g. backends of closed connections) are not counted."""
        import psutil

        out: dict[str, float] = {}

        def cpu(p: Any) -> float:
            try:
                t = p.cpu_times()
                return float(t.user + t.system)
            except psutil.NoSuchProcess:
                return 0.0

        try:
            root = psutil.Process(self.proc.pid)
            out["trajhub"] = cpu(root)
            for c in root.children(recursive=True):
                out[f"child {c.pid}"] = cpu(c)
        except psutil.NoSuchProcess:
            pass
        if self.postmaster_pid:
            try:
                pm = psutil.Process(self.postmaster_pid)
                out["postgres"] = cpu(pm) + sum(cpu(c) for c in pm.children(recursive=True))
            except psutil.NoSuchProcess:
                pass
        return out

    def cpu_breakdown(self, before: dict[str, float], after: dict[str, float],
                      seconds: float) -> dict[str, float]:
        """Cores used per component between two process_tree_cpu() snapshots."""
        return {k: round((v - before.get(k, 0.0)) / max(seconds, 1e-9), 2)
                for k, v in after.items()}

    def log_text(self) -> str:
        if not self._log.closed:
            self._log.flush()
        return self.log_path.read_text(errors="replace")

    def problems(self) -> list[str]:
        """Log lines at WARNING or above, and tracebacks."""
        return [ln for ln in self.log_text().splitlines()
                if any(w in ln for w in (" WARNING ", " ERROR ", " CRITICAL ", "Traceback"))]

    def stop_and_report(self) -> int | None:
        """Stop the server and print its exit status and its warning/error log lines (the
        benchmarks' last words); returns the exit status."""
        code = self.stop()
        problems = self.problems()
        print(f"\ntrajhub exited with {code}; {len(problems)} warning/error log lines")
        for line in problems[:20]:
            print("  " + line)
        return code

    def stop(self) -> int | None:
        code = stop_process(self.proc)
        self._log.close()
        if not self.keep_dir:
            import shutil

            shutil.rmtree(self.data_dir, ignore_errors=True)
        return code


class BackgroundSampler:
    """Calls `sample` every `interval` seconds, on a thread of its own, while in a `with`
    block (the first call at once)."""

    def __init__(self, interval: float) -> None:
        self.interval = interval
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def sample(self) -> None:
        raise NotImplementedError

    def _run(self) -> None:
        while not self._stop.is_set():
            started = time.monotonic()
            self.sample()
            self._stop.wait(max(0.0, self.interval - (time.monotonic() - started)))

    def __enter__(self) -> Self:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()


def machine_busy() -> tuple[float, float]:
    """(busy, total) CPU seconds of the whole machine so far, summed over cores."""
    import psutil

    t = psutil.cpu_times()
    total = sum(t)
    return total - t.idle - getattr(t, "iowait", 0.0), total


def percentile(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    s = sorted(values)
    k = min(len(s) - 1, max(0, round(q / 100 * (len(s) - 1))))
    return s[k]


def loadgen_requests(shared: Path, count: int) -> list[bytes]:
    """`count` request bodies of the reference load generator (`shared`/loadgen.py: 512
    OpenInference-like spans of ~2.5 KB each, 64 whole traces of 8), with fresh trace ids."""
    sys.path.insert(0, str(shared))
    import loadgen  # the reference load generator's payload builder

    return [body for k in range(count)
            for _, body in loadgen.build_payloads(512, 512, os.urandom(4), k, "bench", [])]


@contextmanager
def scratch_postgres(prefix: str) -> Iterator[str]:
    """The URL of an embedded PostgreSQL in a temporary data directory, stopped and removed
    afterwards (for the benchmarks that start no server)."""
    from trajhub.storage.embedded import EmbeddedPostgres

    with tempfile.TemporaryDirectory(prefix=prefix) as data_dir:
        postgres = EmbeddedPostgres(Path(data_dir))
        try:
            yield postgres.url
        finally:
            postgres.stop()


def run_on_postgres(parser: argparse.ArgumentParser, prefix: str,
                    bench: Callable[[Any, argparse.Namespace], Coroutine[Any, Any, None]]
                    ) -> None:
    """Parses the command line, with `--database-url` added, and runs `bench` on a connection
    to that database, or without one to an embedded PostgreSQL of its own (scratch_postgres,
    `prefix`)."""
    import asyncpg

    async def on(url: str, args: argparse.Namespace) -> None:
        conn = await asyncpg.connect(url)
        try:
            await bench(conn, args)
        finally:
            await conn.close()

    parser.add_argument("--database-url", default="")
    args = parser.parse_args()
    if args.database_url:
        asyncio.run(on(args.database_url, args))
        return
    with scratch_postgres(prefix) as url:
        asyncio.run(on(url, args))
