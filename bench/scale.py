"""Reads at scale: fill the store through OTLP/HTTP, then time the read API under ingest.

    .venv/bin/python bench/scale.py [--spans 5000000] [--projects 4] [--senders 4]
                                    [--bg-rate 2500] [--requests 200] [--json FILE]

Starts its own `trajhub serve` (embedded PostgreSQL in a temporary data directory, or
`--database-url`), or targets a running one (`--http URL --database-url URL`), then:

1. Fill: sends --spans realistic agent spans (bench/_common.py shapes, whole traces in 512-span
   OTLP/HTTP protobuf requests) over --senders connections, as fast as the server acknowledges,
   spread over --projects projects (uneven: the first gets about half). Requests vary the
   service, session and user ids, agent, tool and model names, token counts, start times and
   failed steps, and a rare variant (about 0.5 % of requests) carries values that only it has,
   so every filter has values matching many rows and values matching few. Reported: durable
   spans/s (rows in `spans` ÷ first send → last ack), the time from the first send until
   every trace has a trajectory, and then until every run's words for free text are filled,
   with a search for a common word timed every 0.5 s meanwhile.
2. Reads, with ingest still running at --bg-rate spans/s in the background: --requests
   sequential requests per case, p50/p99 of
   - GET /api/v1/trajectories/{id} (random filled traces; target p99 < 20 ms),
   - GET /api/v1/trajectories with each filter on its own, free text included, with a value
     matching many rows and one matching few (target p99 < 100 ms),
   - GET /api/v1/traces with attribute filters (and the other trace filters; < 100 ms),
   - GET /api/v1/traces/{id} (< 50 ms).
   Then the sizes of the database, the big tables and their indexes.

The exit status is non-zero when a target is missed, a request fails or the fill loses spans.
"""

from __future__ import annotations

import argparse
import asyncio
import http.client
import json
import os
import random
import string
import sys
import threading
import time
import urllib.parse
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import asyncpg
import httpx
from _common import (
    MARKER_LEN,
    Server,
    build_trace,
    machine_busy,
    percentile,
    resource_spans,
    trace_sizes,
)
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.trace.v1.trace_pb2 import Span, Status

from tests.harness import CapturedQuery
from trajhub.normalizers.atif import key_value

SERVICES = ("checkout-agent", "support-agent", "search-agent", "travel-agent")
USERS = tuple(f"user-{i}" for i in range(20))
MODELS = ("gpt-4o-mini", "gpt-4o", "claude-3-5-sonnet")
HOUR_NS = 3_600_000_000_000
#: values only the rare variant carries
RARE = {"service": "ledger-agent", "user": "user-rare-7", "model": "o1-preview-rare",
        "tool": "convert_currency", "agent": "auditor", "word": "zanzibar"}
SHARED_SESSION = "session-shared-000001"
TARGETS_MS = {"trajectory": 20.0, "trajectory list": 100.0, "trace list": 100.0,
              "trace": 50.0, "session list": 100.0, "session": 100.0, "timeseries": 150.0}


@dataclass
class RequestTemplate:
    body: bytes
    marker: bytes        # 12 bytes at the start of every trace id, replaced per request
    session_marker: bytes  # 12 ASCII letters in per-request session ids, replaced per request
    suffixes: list[bytes]
    spans: int
    rare: bool


def _rewrite(spans: list[Span], subs: dict[str, str], names: dict[str, str]) -> None:
    for s in spans:
        if s.name in names:
            s.name = names[s.name]
        for kv in s.attributes:
            if kv.value.WhichOneof("value") == "string_value":
                v = kv.value.string_value
                for a, b in subs.items():
                    if a in v:
                        v = v.replace(a, b)
                kv.value.string_value = v


def _fail(span: Span, message: str) -> None:
    span.status.CopyFrom(Status(code=Status.STATUS_CODE_ERROR, message=message))


def build_template(rng: random.Random, index: int, rare: bool) -> RequestTemplate:
    """One 512-span request of whole traces, varied by `index`; `rare` = the rare variant."""
    marker = rng.getrandbits(8 * MARKER_LEN).to_bytes(MARKER_LEN, "big")
    session_marker = "".join(rng.choices(string.ascii_lowercase, k=12)).encode()
    service = RARE["service"] if rare else SERVICES[index % len(SERVICES)]
    rs = resource_spans(service)
    ss = rs.scope_spans.add()
    ss.scope.name = "openinference.instrumentation.langchain"
    ss.scope.version = "0.1.80"
    # templates are spread over the past days, an hour apart; the rare one 30 days back
    shift = -(30 * 24 if rare else index) * HOUR_NS
    sizes = trace_sizes(rng, 512)
    suffixes = []
    for i, n in enumerate(sizes):
        suffix = i.to_bytes(4, "big")
        spans, _ = build_trace(rng, marker + suffix, n)
        old_session = next(kv.value.string_value for kv in spans[0].attributes
                           if kv.key == "session.id")
        session = (SHARED_SESSION if not rare and i % 4 == 0
                   else f"s-{session_marker.decode()}-{i:04d}")
        user = RARE["user"] if rare else USERS[rng.randrange(len(USERS))]
        subs = {old_session: session, "user-42": user,
                "gpt-4o-mini": RARE["model"] if rare else MODELS[(index + i) % len(MODELS)]}
        names = {}
        if rare:
            subs["get_weather"] = RARE["tool"]
            # the root chain is the run's agent (`agent` nodes are steps of it)
            names = {"LangGraph": RARE["agent"], "get_weather": RARE["tool"]}
        _rewrite(spans, subs, names)
        root = spans[0]
        root.attributes.append(key_value("user.id", user))
        if rare:  # a word no other run has, and token counts no other run reaches
            for kv in root.attributes:
                if kv.key == "input.value":
                    kv.value.string_value = kv.value.string_value.replace(
                        '"content": "', f'"content": "{RARE["word"]} ', 1)
            for s in spans:
                for kv in s.attributes:
                    if kv.key.startswith("llm.token_count."):
                        kv.value.int_value *= 1000
        for s in spans:
            s.start_time_unix_nano += shift
            s.end_time_unix_nano += shift
        # failed steps: a tool in ~1 trace in 12, a model call in ~1 in 40 (all in the rare one)
        tools = [s for s in spans if any(kv.key == "tool.name" for kv in s.attributes)]
        llms = [s for s in spans if s.name == "ChatOpenAI"]
        if tools and (rare or rng.random() < 1 / 12):
            _fail(rng.choice(tools), "ToolException: upstream timed out")
        if rare or rng.random() < 1 / 40:
            _fail(rng.choice(llms), "RateLimitError: 429")
        ss.spans.extend(spans)
        suffixes.append(suffix)
    body = ExportTraceServiceRequest(resource_spans=[rs]).SerializeToString()
    assert body.count(marker) == sum(sizes)
    return RequestTemplate(body, marker, session_marker, suffixes, sum(sizes), rare)


@dataclass
class Sent:
    """One acknowledged request: which project, its trace ids and per-request session prefix."""
    project: str
    trace_ids: list[str]
    session_marker: str
    rare: bool


@dataclass
class Load:
    templates: list[RequestTemplate]
    rare: RequestTemplate
    projects: list[str]
    weights: list[float]
    rng: random.Random = field(default_factory=lambda: random.Random(11))
    lock: threading.Lock = field(default_factory=threading.Lock)

    def next_request(self) -> tuple[bytes, Sent]:
        with self.lock:
            t = self.rare if self.rng.random() < 0.005 else self.rng.choice(self.templates)
            project = self.rng.choices(self.projects, self.weights)[0]
        prefix = os.urandom(MARKER_LEN)
        session = os.urandom(6).hex().encode()
        body = t.body.replace(t.marker, prefix).replace(t.session_marker, session)
        return body, Sent(project, [(prefix + s).hex() for s in t.suffixes], session.decode(),
                          t.rare)


class Poster:
    """One keep-alive HTTP connection; posts until acknowledged (retrying 503s)."""

    def __init__(self, url: str) -> None:
        u = urllib.parse.urlsplit(url)
        self.host, self.port = u.hostname or "127.0.0.1", u.port or 80
        self.conn: http.client.HTTPConnection | None = None
        self.retries_503 = 0

    def post(self, body: bytes, project: str) -> None:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            try:
                if self.conn is None:
                    self.conn = http.client.HTTPConnection(self.host, self.port, timeout=120)
                self.conn.request("POST", "/v1/traces", body, {
                    "Content-Type": "application/x-protobuf", "trajhub-project": project})
                resp = self.conn.getresponse()
                text = resp.read()
            except (OSError, http.client.HTTPException):
                self.conn = None
                time.sleep(0.1)
                continue
            if resp.status == 200:
                return
            if resp.status != 503:
                raise SystemExit(f"ingest answered HTTP {resp.status}: {text[:300]!r}")
            self.retries_503 += 1
            time.sleep(0.05)
        raise SystemExit("a request was not acknowledged within 120 s")


def fill(load: Load, url: str, spans: int, senders: int) -> tuple[list[Sent], dict[str, Any]]:
    per_request = load.templates[0].spans
    n_requests = max(1, spans // per_request)
    sent: list[Sent] = []
    lock = threading.Lock()
    stats = {"first": 0.0, "last": 0.0, "spans": 0, "retries_503": 0}
    counter = iter(range(n_requests))

    def sender() -> None:
        poster = Poster(url)
        while True:
            with lock:
                if next(counter, None) is None:
                    break
            body, s = load.next_request()
            if not stats["first"]:
                stats["first"] = time.time()
            poster.post(body, s.project)
            with lock:
                sent.append(s)
                stats["last"] = time.time()
                stats["spans"] += (load.rare if s.rare else load.templates[0]).spans
                if len(sent) % 500 == 0:
                    el = stats["last"] - stats["first"]
                    print(f"  {len(sent)}/{n_requests} requests, {stats['spans']} spans, "
                          f"{stats['spans'] / max(el, 1e-9):.0f} spans/s", flush=True)
        with lock:
            stats["retries_503"] += poster.retries_503

    with ThreadPoolExecutor(senders) as pool:
        for f in [pool.submit(sender) for _ in range(senders)]:
            f.result()
    return sent, stats


async def count(database_url: str, table: str, projects: list[str]) -> int:
    conn = await asyncpg.connect(database_url)
    try:
        return int(await conn.fetchval(
            f"SELECT count(*) FROM {table} WHERE project = ANY($1::text[])", projects))
    finally:
        await conn.close()


async def wait_derived(database_url: str, projects: list[str], expect: int,
                       timeout: float) -> float | None:
    """Seconds since the epoch when `trajectories` held `expect` rows of the projects (None:
    timed out)."""
    deadline = time.time() + timeout
    last_print = 0.0
    while time.time() < deadline:
        n = await count(database_url, "trajectories", projects)
        if n >= expect:
            return time.time()
        if time.time() - last_print > 15:
            print(f"  trajectories: {n}/{expect}", flush=True)
            last_print = time.time()
        await asyncio.sleep(1.0)
    return None


# vacuums and analyzes so far: trajhub's own (the statistics of the partitioned tables as
# wholes, storage/search_words.py) and autovacuum's
_MAINTENANCE = """
SELECT coalesce(sum(vacuum_count), 0) AS vacuums, coalesce(sum(analyze_count), 0) AS analyzes,
       coalesce(sum(autovacuum_count), 0) AS autovacuums,
       coalesce(sum(autoanalyze_count), 0) AS autoanalyzes
FROM pg_stat_all_tables
"""


async def maintenance(database_url: str) -> dict[str, int]:
    conn = await asyncpg.connect(database_url)
    try:
        row = await conn.fetchrow(_MAINTENANCE)
        return {k: int(v) for k, v in dict(row or {}).items()}
    finally:
        await conn.close()


async def queued_words(database_url: str) -> int:
    """Runs whose words for free text are still to be filled (migration 0068)."""
    conn = await asyncpg.connect(database_url)
    try:
        return int(await conn.fetchval("SELECT count(*) FROM trajectory_words_queue"))
    finally:
        await conn.close()


def words_catch_up(url: str, database_url: str, project: str, timeout: float
                   ) -> dict[str, Any]:
    """Until every run's words are filled: the queue at the start, how long it took, and a
    free-text search of a common word timed every 0.5 s meanwhile (a search checks the text of
    every queued run that contains it, so it costs more the longer the queue)."""
    started, queued = time.time(), asyncio.run(queued_words(database_url))
    lat: list[float] = []
    with httpx.Client(base_url=url, timeout=60,
                      headers={"trajhub-project": project}) as client:
        while time.time() - started < timeout and asyncio.run(queued_words(database_url)):
            t0 = time.perf_counter()
            client.get("/api/v1/trajectories", params={"q": "weather", "limit": 50})
            lat.append((time.perf_counter() - t0) * 1000)
            time.sleep(0.5)
    return {"queued_at_start": queued, "filled_after_s": round(time.time() - started, 1),
            "searches": len(lat), "search_p50_ms": round(percentile(lat, 50), 1) if lat else None,
            "search_max_ms": round(max(lat), 1) if lat else None}


class Background:
    """Ingest at a steady rate (spans/s) until stopped."""

    def __init__(self, load: Load, url: str, rate: float) -> None:
        self.load, self.url, self.rate = load, url, rate
        self.stop = threading.Event()
        self.spans = 0
        self.thread = threading.Thread(target=self.run, daemon=True)

    def run(self) -> None:
        poster = Poster(self.url)
        start = time.monotonic()
        per = self.load.templates[0].spans
        i = 0
        while not self.stop.is_set() and self.rate > 0:
            # request i is due at start + i * per / rate
            delay = start + i * per / self.rate - time.monotonic()
            if delay > 0 and self.stop.wait(delay):
                break
            body, s = self.load.next_request()
            poster.post(body, s.project)
            self.spans += per
            i += 1
        self.elapsed = time.monotonic() - start

    def __enter__(self) -> Background:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop.set()
        self.thread.join(60)


@dataclass
class Case:
    group: str       # a key of TARGETS_MS
    name: str
    path: Callable[[int], str]
    params: Callable[[int], dict[str, Any]]
    rows: int = -1   # items in the last answer


def cases(sent: list[Sent], project: str, now_ns: int, rng: random.Random) -> list[Case]:
    mine = [s for s in sent if s.project == project]
    ids = [t for s in mine for t in s.trace_ids]
    rare_ids = [t for s in mine if s.rare for t in s.trace_ids]
    sample = [rng.choice(ids) for _ in range(1000)]
    unique_sessions = [f"s-{s.session_marker}-{i:04d}" for s in mine if not s.rare
                       for i in range(1, 4)]
    sessions = [rng.choice(unique_sessions) for _ in range(1000)]

    def const(**p: Any) -> Callable[[int], dict[str, Any]]:
        return lambda _i: p

    def traj(name: str, **p: Any) -> Case:
        return Case("trajectory list", name, lambda _i: "/api/v1/trajectories", const(**p))

    def trace(name: str, **p: Any) -> Case:
        return Case("trace list", name, lambda _i: "/api/v1/traces", const(**p))

    rare_day = now_ns - 30 * 24 * HOUR_NS
    out = [
        Case("trajectory", "GET /trajectories/{id}",
             lambda i: f"/api/v1/trajectories/{sample[i % len(sample)]}", const()),
        Case("trace", "GET /traces/{id}",
             lambda i: f"/api/v1/traces/{sample[i % len(sample)]}", const()),
        traj("no filter"),
        traj("start/end: last 3 h (many)", start=str(now_ns - 3 * HOUR_NS), end=str(now_ns)),
        traj("start/end: rare day (few)", start=str(rare_day - 2 * HOUR_NS),
             end=str(rare_day + 2 * HOUR_NS)),
        traj("agent=langgraph (many)", agent="langgraph"),
        traj(f"agent={RARE['agent']} (few)", agent=RARE["agent"]),
        traj("tool=get_weather (many)", tool="get_weather"),
        traj(f"tool={RARE['tool']} (few)", tool=RARE["tool"]),
        traj("model=gpt-4o (many)", model="gpt-4o"),
        traj(f"model={RARE['model']} (few)", model=RARE["model"]),
        traj("framework=langgraph (many)", framework="langgraph"),
        traj("framework=eino (none)", framework="eino"),
        traj(f"service={SERVICES[0]} (many)", service=SERVICES[0]),
        traj(f"service={RARE['service']} (few)", service=RARE["service"]),
        traj("session_id=shared (many)", session_id=SHARED_SESSION),
        Case("trajectory list", "session_id=unique (one)", lambda _i: "/api/v1/trajectories",
             lambda i: {"session_id": sessions[i % len(sessions)]}),
        traj("user_id=user-3 (many)", user_id="user-3"),
        traj(f"user_id={RARE['user']} (few)", user_id=RARE["user"]),
        traj("status=final (many)", status="final"),
        traj("status=open (few)", status="open"),
        traj("failed_tool_steps=true", failed_tool_steps="true"),
        traj("failed_tool_steps=false", failed_tool_steps="false"),
        traj("failed_model_steps=true (few)", failed_model_steps="true"),
        traj("failed_model_steps=false", failed_model_steps="false"),
        traj("has_error=true", has_error="true"),
        traj("has_error=false", has_error="false"),
        traj("min_tokens=100 (many)", min_tokens=100),
        traj("min_tokens=100000 (few)", min_tokens=100_000),
        traj("max_tokens=100000 (many)", max_tokens=100_000),
        traj("max_tokens=10 (none)", max_tokens=10),
        traj("min_duration_ms=1000 (many)", min_duration_ms=1000),
        traj("min_duration_ms=60000 (none)", min_duration_ms=60_000),
        traj("max_duration_ms=60000 (many)", max_duration_ms=60_000),
        traj("max_duration_ms=10 (none)", max_duration_ms=10),
        traj("q=weather (many)", q="weather"),
        # two common words, together in ~3 % of runs: the words index finds most runs, the
        # substring check keeps few, so the newest-first walk reads ~30 runs per match
        traj("q=weather forecast (phrase, ~3 %)", q="weather forecast"),
        traj(f"q={RARE['word']} (few)", q=RARE["word"]),
        traj("q=xylophone (none)", q="xylophone"),
        trace("no filter"),
        trace("attribute llm.model_name=gpt-4o (many)", attribute="llm.model_name=gpt-4o"),
        trace(f"attribute llm.model_name={RARE['model']} (few)",
              attribute=f"llm.model_name={RARE['model']}"),
        trace(f"attribute tool.name={RARE['tool']} (few)", attribute=f"tool.name={RARE['tool']}"),
        trace("attribute user.id=user-3 (many)", attribute="user.id=user-3"),
        trace("attribute user.id + model (many, 2 filters)",
              attribute=["user.id=user-3", "llm.model_name=gpt-4o"]),
        trace("attribute llm.provider=anthropic (none)", attribute="llm.provider=anthropic"),
        Case("trace list", "attribute session.id=unique (one)", lambda _i: "/api/v1/traces",
             lambda i: {"attribute": f"session.id={sessions[i % len(sessions)]}"}),
        trace("attribute openinference.span.kind=TOOL (many)",
              attribute="openinference.span.kind=TOOL"),
        trace("attribute llm.token_count.total=1 (none, number)",
              attribute="llm.token_count.total=1"),
        trace(f"span_name={RARE['agent']} (few)", span_name=RARE["agent"]),
        trace("span_name=ChatOpenAI (many)", span_name="ChatOpenAI"),
        trace(f"service={RARE['service']} (few)", service=RARE["service"]),
        trace("has_error=true", has_error="true"),
    ]
    def sess(name: str, **p: Any) -> Case:
        return Case("session list", name, lambda _i: "/api/v1/sessions", const(**p))

    out += [  # sessions: most runs have a session of their own, a quarter share one
        sess("no filter"),
        sess("start: last 3 h (many)", start=str(now_ns - 3 * HOUR_NS)),
        sess("user_id=user-3 (many)", user_id="user-3"),
        sess(f"user_id={RARE['user']} (few)", user_id=RARE["user"]),
        sess(f"agent={RARE['agent']} (few)", agent=RARE["agent"]),
        sess("has_error=true", has_error="true"),
        sess("min_turns=2 (one)", min_turns=2),
        Case("session", "GET /sessions/{shared} (many turns)",
             lambda _i: f"/api/v1/sessions/{SHARED_SESSION}", const(limit=50)),
        Case("session", "GET /sessions/{unique} (one turn)",
             lambda i: f"/api/v1/sessions/{sessions[i % len(sessions)]}", const()),
    ]
    def series(group_by: str) -> Case:
        return Case("timeseries", f"30 days by the hour, group_by={group_by}",
                    lambda _i: "/api/v1/timeseries",
                    const(start=str(now_ns - 30 * 24 * HOUR_NS), end=str(now_ns), bucket="hour",
                          group_by=group_by))

    # charts: the range holds the fill's hours and the rare runs' day, 30 days back
    out += [series(g) for g in ("model", "run_name", "agent", "release")]
    if not rare_ids:
        print("  (no rare request in this project: the 'few' cases match nothing)")
    return out


def measure(url: str, project: str, case: Case, n: int) -> dict[str, Any]:
    lat: list[float] = []
    with httpx.Client(base_url=url, timeout=60,
                      headers={"trajhub-project": project}) as client:
        for i in range(n + 3):
            t0 = time.perf_counter()
            r = client.get(case.path(i), params=case.params(i))
            dt = time.perf_counter() - t0
            if r.status_code != 200:
                raise SystemExit(f"{case.name}: HTTP {r.status_code}: {r.text[:300]}")
            if i >= 3:  # the first few warm the connection
                lat.append(dt * 1000)
            body = r.json()
            case.rows = (len(body["items"]) if isinstance(body, dict) and "items" in body
                         # a chart's points, over its series
                         else sum(len(s["points"]) for s in body["series"])
                         if isinstance(body, dict) and "series" in body else 1)
    p99 = percentile(lat, 99)
    return {"group": case.group, "name": case.name, "rows": case.rows,
            "p50_ms": round(percentile(lat, 50), 1), "p99_ms": round(p99, 1),
            "max_ms": round(max(lat), 1), "ok": p99 < TARGETS_MS[case.group]}


async def explain(database_url: str, project: str, cs: list[Case]) -> dict[str, dict[str, Any]]:
    """The plan of each list case's query (the SQL the API builds for it): the database's own
    execution time, and the scans and indexes it used (a 'Seq Scan' is what must not be)."""
    from trajhub.service.api.filters import TrajectoryListQuery
    from trajhub.service.api.params import attribute_filters, parse_time
    from trajhub.storage import trace_reads, trajectory_reads

    conn = await asyncpg.connect(database_url)
    out = {}
    try:
        for case in cs:
            if case.group not in ("trajectory list", "trace list", "session list"):
                continue
            params, cap = case.params(0), CapturedQuery(conn)
            if case.group == "session list":
                from trajhub.service.api.sessions import SessionListQuery
                from trajhub.storage import session_reads

                await session_reads.list_sessions(  # type: ignore[arg-type]
                    cap, project, SessionListQuery(**params).list_filter())
            elif case.group == "trajectory list":
                f = TrajectoryListQuery(**params).list_filter()
                await trajectory_reads.list_trajectories(cap, project, f)  # type: ignore[arg-type]
            else:
                attrs = params.get("attribute")
                tf = trace_reads.TraceFilter(
                    start_ns=parse_time(params.get("start"), "start"),
                    end_ns=parse_time(params.get("end"), "end"), service=params.get("service"),
                    span_name=params.get("span_name"),
                    has_error=None if "has_error" not in params else params["has_error"] == "true",
                    attributes=attribute_filters([attrs] if isinstance(attrs, str) else attrs))
                await trace_reads.list_traces(cap, project, tf)  # type: ignore[arg-type]
            # a read may send several statements (the session list's walk and pages): their
            # plans' scans together, and their times summed
            nodes, ms = [], 0.0
            for sql, args in cap.statements:
                plan = [r[0] for r in await conn.fetch("EXPLAIN ANALYZE " + sql, *args)]
                nodes += [line.split("->")[-1].strip().split("  (")[0] for line in plan
                          if "Scan" in line]
                ms += float(next(p for p in plan if p.startswith("Execution Time")).split()[2])
            out[f"{case.group}/{case.name}"] = {"db_ms": ms, "scans": nodes,
                              "seq_scan": any("Seq Scan" in n for n in nodes)}
    finally:
        await conn.close()
    return out


async def sizes(database_url: str) -> dict[str, Any]:
    conn = await asyncpg.connect(database_url)
    try:
        out: dict[str, Any] = {"database_bytes": await conn.fetchval(
            "SELECT pg_database_size(current_database())")}
        for table in ("spans", "traces", "trajectories"):
            # summed over the time partitions (migration 0021; a plain table is its own tree)
            row = await conn.fetchrow(
                "SELECT sum(pg_total_relation_size(p.relid))::bigint AS total, "
                "sum(pg_indexes_size(p.relid))::bigint AS indexes, "
                "sum(greatest(c.reltuples, 0))::bigint AS rows "
                "FROM pg_partition_tree($1::regclass) p JOIN pg_class c ON c.oid = p.relid "
                "WHERE p.isleaf", table)
            out[table] = dict(row)
        # each index summed over its partitions, by the name of the partitioned index
        out["indexes"] = {r["name"]: r["bytes"] for r in await conn.fetch(
            "SELECT coalesce(h.inhparent, i.indexrelid)::regclass::text AS name, "
            "sum(pg_relation_size(i.indexrelid))::bigint AS bytes "
            "FROM pg_index i LEFT JOIN pg_inherits h ON h.inhrelid = i.indexrelid "
            "WHERE i.indrelid IN (SELECT relid FROM pg_partition_tree('traces') UNION ALL "
            "SELECT relid FROM pg_partition_tree('trajectories')) "
            "GROUP BY 1 ORDER BY 1")}
        return out
    finally:
        await conn.close()


def _mb(n: int) -> str:
    return f"{n / 1e6:,.0f} MB"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--spans", type=int, default=5_000_000, help="spans to fill with")
    ap.add_argument("--projects", type=int, default=4)
    ap.add_argument("--senders", type=int, default=4, help="concurrent fill connections")
    ap.add_argument("--bg-rate", type=float, default=2500,
                    help="background ingest while reading, spans/s (0: none)")
    ap.add_argument("--requests", type=int, default=200, help="requests per read case")
    ap.add_argument("--settle", type=float, default=2.0, help="TRAJHUB_SETTLE_SECONDS")
    ap.add_argument("--derive-timeout", type=float, default=3600,
                    help="give up waiting for the trajectories after this many seconds")
    ap.add_argument("--database-url", default="", help="external PostgreSQL (default embedded)")
    ap.add_argument("--http", default="", help="a running trajhub (needs --database-url)")
    ap.add_argument("--keep", action="store_true", help="keep the temporary data directory")
    ap.add_argument("--seed", type=int, default=5)
    ap.add_argument("--json", default="", help="also write the results to this file")
    args = ap.parse_args()
    if args.http and not args.database_url:
        ap.error("--http needs --database-url")

    server = None
    if args.http:
        url, database_url = args.http.rstrip("/"), args.database_url
    else:
        server = Server(args.database_url, {"TRAJHUB_LOG_LEVEL": "warning",
                                            "TRAJHUB_SETTLE_SECONDS": str(args.settle)},
                        keep_dir=args.keep)
        url, database_url = server.http, server.database_url
        print(f"trajhub started: {url}, log {server.log_path}")
    out: dict[str, Any] = {"args": vars(args)}
    failed = False
    try:
        rng = random.Random(args.seed)
        t0 = time.time()
        load = Load([build_template(rng, i, False) for i in range(24)],
                    build_template(rng, 99, True),
                    [f"scale-{i}" for i in range(args.projects)],
                    [2.0 ** -i for i in range(args.projects)])
        print(f"built 25 request templates in {time.time() - t0:.1f} s")

        # a store filled before (--http, --database-url) keeps its rows: count this run's
        base_spans = asyncio.run(count(database_url, "spans", load.projects))
        base_trajectories = asyncio.run(count(database_url, "trajectories", load.projects))
        print(f"\n== fill: {args.spans:,} spans over {args.senders} connections"
              + (f" (the store already holds {base_spans:,})" if base_spans else ""))
        sent, st = fill(load, url, args.spans, args.senders)
        traces = sum(len(s.trace_ids) for s in sent)
        ack_s = st["last"] - st["first"]
        derived_at = asyncio.run(wait_derived(database_url, load.projects,
                                              base_trajectories + traces, args.derive_timeout))
        spans_stored = asyncio.run(count(database_url, "spans", load.projects)) - base_spans
        fill_res = {
            "requests": len(sent), "spans_acked": st["spans"], "spans_stored": spans_stored,
            "traces": traces, "retries_503": st["retries_503"], "ack_s": round(ack_s, 1),
            "durable_spans_per_s": round(spans_stored / max(ack_s, 1e-9)),
            "first_send_to_all_derived_s": None if derived_at is None
            else round(derived_at - st["first"], 1),
            "derivations_per_s": None if derived_at is None
            else round(traces / (derived_at - st["first"])),
        }
        out["fill"] = fill_res
        print(f"  {spans_stored:,} spans stored ({st['spans']:,} acked), {traces:,} traces, "
              f"{len(sent)} requests, 503s {st['retries_503']}")
        print(f"  durable ingest       {fill_res['durable_spans_per_s']:,} spans/s "
              f"({ack_s:.1f} s first send → last ack)")
        if derived_at is None:
            print(f"  NOT every trace had a trajectory after {args.derive_timeout} s")
            failed = True
        else:
            print(f"  all derived          {fill_res['first_send_to_all_derived_s']} s after "
                  f"the first send ({fill_res['derivations_per_s']} traces/s)")
        failed |= spans_stored != st["spans"]

        project = load.projects[0]
        # the words for free text are filled once the derivation has no backlog: the reads
        # start when they are, as they start when every trace has its trajectory
        catch_up = words_catch_up(url, database_url, project, args.derive_timeout)
        out["words"] = catch_up
        print(f"  words filled         {catch_up['filled_after_s']} s after that "
              f"({catch_up['queued_at_start']:,} runs queued); meanwhile q=weather took "
              f"p50 {catch_up['search_p50_ms']} ms, at most {catch_up['search_max_ms']} ms "
              f"({catch_up['searches']} searches)")
        print(f"\n== reads in project {project} ({args.requests} requests per case), "
              f"background ingest {args.bg_rate:.0f} spans/s")
        results = []
        read_cases = cases(sent, project, time.time_ns(), random.Random(args.seed + 1))
        busy0, total0 = machine_busy()
        maintained0 = asyncio.run(maintenance(database_url))
        cpu0, r0 = (server.process_tree_cpu() if server else {}), time.time()
        with Background(load, url, args.bg_rate) as bg:
            for case in read_cases:
                r = measure(url, project, case, args.requests)
                results.append(r)
                print(f"  {'ok  ' if r['ok'] else 'SLOW'} {r['group']:15} {r['name']:48} "
                      f"p50 {r['p50_ms']:7.1f}  p99 {r['p99_ms']:7.1f} ms  "
                      f"({r['rows']} rows)", flush=True)
            plans = asyncio.run(explain(database_url, project, read_cases))
        busy1, total1 = machine_busy()
        out["maintenance_during_reads"] = m = {
            k: v - maintained0[k] for k, v in asyncio.run(maintenance(database_url)).items()}
        for r in results:
            r.update(plans.get(f"{r['group']}/{r['name']}", {}))
        out["reads"] = results
        out["background_spans_per_s"] = round(bg.spans / max(bg.elapsed, 1e-9))
        # other programs on the machine inflate latencies: say how busy it was
        out["machine_cpu_busy_pct"] = round(100 * (busy1 - busy0) / max(total1 - total0, 1e-9))
        seconds = time.time() - r0
        out["machine_busy_cores"] = round((busy1 - busy0) / seconds, 2)
        if server:
            out["trajhub_cores"] = round(sum(server.cpu_breakdown(
                cpu0, server.process_tree_cpu(), seconds).values()), 2)
        print(f"  background ingest delivered {out['background_spans_per_s']} spans/s; while "
              f"reading the machine was {out['machine_cpu_busy_pct']} % busy "
              f"({out['machine_busy_cores']} cores, of which trajhub and its PostgreSQL "
              f"{out.get('trajhub_cores', '?')}); meanwhile {m['vacuums']} vacuums and "
              f"{m['analyzes']} analyzes by trajhub, {m['autovacuums']} and "
              f"{m['autoanalyzes']} by autovacuum")
        failed |= not all(r["ok"] for r in results)
        scans = [r["name"] for r in results if r.get("seq_scan")]
        print(f"  list queries planned with a sequential scan: {scans or 'none'}")

        out["sizes"] = s = asyncio.run(sizes(database_url))
        print(f"\n== data: database {_mb(s['database_bytes'])}; " + "; ".join(
            f"{t} {s[t]['rows']:,} rows, {_mb(s[t]['total'])} ({_mb(s[t]['indexes'])} indexes)"
            for t in ("spans", "traces", "trajectories")))
        print("  indexes: " + ", ".join(f"{k} {_mb(v)}" for k, v in s["indexes"].items()))
        print("\n| target | case | rows | p50 ms | p99 ms | database ms | plan |\n"
              "|---|---|---|---|---|---|---|")
        for r in results:
            plan = ", ".join(dict.fromkeys(r.get("scans", [])))
            print(f"| {r['group']} < {TARGETS_MS[r['group']]:.0f} ms | {r['name']} | {r['rows']} "
                  f"| {r['p50_ms']} | {r['p99_ms']}{'' if r['ok'] else ' **missed**'} | "
                  f"{r.get('db_ms', '')} | {plan} |")
    finally:
        if server is not None:
            code = server.stop_and_report()
            out["server_exit_code"] = code
            failed |= code != 0
    if args.json:
        with open(args.json, "w") as f:
            json.dump(out, f, indent=2, default=str)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
