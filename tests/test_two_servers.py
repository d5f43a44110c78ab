"""Two `trajhub serve` processes on one database, each trace's spans split across both.

The servers share one database and so one change queue: both servers' derivation workers
derive traces whose spans arrived partly at one server and partly at the other. The test checks
what scale-out promises (deploy/SCALING.md), from the outside:

- exactly one trajectory per trace, and it reflects every span that was sent (span, step and
  token counts as the generator built them, not as trajhub reports them);
- no trace was ever derived by two transactions at once.

The last is watched by triggers the test installs on the test database (see `PROBE`), not by
reading trajhub's claiming code, so the test holds whatever the queue and locks look like.
"""

from __future__ import annotations

import contextlib
import random
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import asyncpg
import httpx
import pytest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.trace.v1.trace_pb2 import Span

from bench._common import TraceShape, build_request, build_trace
from tests.harness import ServerProcess, TestDatabase, run, separate_database, wait_for

pytestmark = pytest.mark.slow  # several servers

TRACES = 150
PROJECT = "two-servers"
#: trace parts per request (each request carries parts of several traces, like a Collector batch)
PARTS_PER_REQUEST = 8
#: sender threads per server
SENDERS = 2

# What each transaction did to each trace, timestamped with the wall clock at the moment:
#  touch  — the transaction changed a row of the trace in any trace-keyed table (a queue row
#           claimed, deleted or re-queued, the trace summary, the trajectory...). AFTER row
#           triggers run at the end of their statement, so a touch is stamped after whatever
#           that statement did to take the trace (e.g. a lock taken in the same statement).
#  derive — it stored a trajectory with new content (anything but a status change alone);
#  commit — it is committing: a deferred constraint trigger runs at COMMIT, just before the
#           transaction becomes visible and releases its locks.
# A transaction's derivation window for a trace is [its first touch, its commit]. The probe
# rows are written in the transaction they describe, so a rolled-back transaction (which stored
# nothing) leaves none.
#
# What this assumes: a derivation starts no earlier than its transaction's first change to the
# trace's rows (today: claiming the trace's queue entries) and ends with the commit that stores
# it. A design that claims in one transaction and stores in another would show only the storing
# one here; the completeness checks still catch a derivation that missed spans.
PROBE = """
CREATE TABLE derivation_probe (
    kind     text        NOT NULL,
    project  text        NOT NULL,
    trace_id text        NOT NULL,
    txid     bigint      NOT NULL DEFAULT txid_current(),
    pid      integer     NOT NULL DEFAULT pg_backend_pid(),
    at       timestamptz NOT NULL DEFAULT clock_timestamp()
);

CREATE FUNCTION derivation_probe_touch() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE r record;
BEGIN
    IF TG_OP = 'DELETE' THEN r := OLD; ELSE r := NEW; END IF;
    INSERT INTO derivation_probe (kind, project, trace_id) VALUES ('touch', r.project, r.trace_id);
    RETURN NULL;
END $$;

CREATE FUNCTION derivation_probe_derive() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'INSERT' OR (to_jsonb(OLD) - 'status') IS DISTINCT FROM (to_jsonb(NEW) - 'status')
    THEN
        INSERT INTO derivation_probe (kind, project, trace_id)
        VALUES ('derive', NEW.project, NEW.trace_id);
    END IF;
    RETURN NULL;
END $$;

CREATE FUNCTION derivation_probe_commit() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO derivation_probe (kind, project, trace_id)
    VALUES ('commit', NEW.project, NEW.trace_id);
    RETURN NULL;
END $$;

CREATE TRIGGER derivation_probe_derive AFTER INSERT OR UPDATE ON trajectories
    FOR EACH ROW EXECUTE FUNCTION derivation_probe_derive();
CREATE CONSTRAINT TRIGGER derivation_probe_commit AFTER INSERT OR UPDATE ON trajectories
    DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION derivation_probe_commit();
"""

#: every table keyed by trace except the raw spans, the log records and the traces' partition
#: keys (which ingest writes, not derivation) and the probe's own; found at run time, so a queue
#: table added later is watched too. A time partition (migration 0021) is watched through its
#: table: a trigger on a partitioned table fires for every partition.
TRACE_TABLES = """
SELECT c.table_name FROM information_schema.columns c
JOIN information_schema.tables t USING (table_schema, table_name)
WHERE c.table_schema = current_schema() AND t.table_type = 'BASE TABLE'
  AND c.column_name IN ('project', 'trace_id')
  AND c.table_name NOT IN ('spans', 'log_records', 'trace_keys', 'derivation_probe')
  AND NOT EXISTS (SELECT 1 FROM pg_inherits h
                  WHERE h.inhrelid = format('%I.%I', c.table_schema, c.table_name)::regclass)
GROUP BY c.table_name HAVING count(*) = 2
"""

WINDOWS = """
WITH w AS (
    SELECT project, trace_id, txid, min(pid) AS pid,
           min(at) FILTER (WHERE kind <> 'commit') AS started,
           max(at) FILTER (WHERE kind = 'commit') AS committed
    FROM derivation_probe GROUP BY project, trace_id, txid
    HAVING bool_or(kind = 'derive')
)
"""

OVERLAPS = WINDOWS + """
SELECT a.trace_id, a.txid AS txid_a, a.pid AS pid_a, a.started AS started_a,
       a.committed AS committed_a, b.txid AS txid_b, b.pid AS pid_b, b.started AS started_b,
       b.committed AS committed_b
FROM w a JOIN w b ON a.project = b.project AND a.trace_id = b.trace_id AND a.txid < b.txid
WHERE a.started < b.committed AND b.started < a.committed
ORDER BY a.trace_id
"""


@dataclass
class SentTrace:
    trace_id: str
    shape: TraceShape


async def install_probe(url: str) -> list[str]:
    conn = await asyncpg.connect(url)
    try:
        await conn.execute(PROBE)
        tables = [r["table_name"] for r in await conn.fetch(TRACE_TABLES)]
        for table in tables:
            await conn.execute(
                f'CREATE TRIGGER derivation_probe_touch AFTER INSERT OR UPDATE OR DELETE '
                f'ON "{table}" FOR EACH ROW EXECUTE FUNCTION derivation_probe_touch()')
        return tables
    finally:
        await conn.close()


def split_traces(rng: random.Random) -> tuple[list[SentTrace], list[list[list[Span]]]]:
    """TRACES generated traces; each one's spans shuffled and cut into 2–3 parts that go to
    alternating servers (so each server gets part of every trace, the root on either).
    Returns the traces and, per server, its parts."""
    sent: list[SentTrace] = []
    parts: list[list[list[Span]]] = [[], []]
    for _ in range(TRACES):
        trace_id = rng.getrandbits(128).to_bytes(16, "big")
        spans, shape = build_trace(rng, trace_id, rng.randint(15, 30))
        sent.append(SentTrace(trace_id.hex(), shape))
        rng.shuffle(spans)
        k = rng.choice((2, 3))
        cuts = sorted(rng.sample(range(1, len(spans)), k - 1))
        first = rng.randrange(2)
        for i, (lo, hi) in enumerate(zip([0, *cuts], [*cuts, len(spans)], strict=True)):
            parts[(first + i) % 2].append(spans[lo:hi])
    return sent, parts


def requests_of(rng: random.Random, parts: list[list[Span]]) -> list[bytes]:
    """The parts in random order, PARTS_PER_REQUEST to a request, each request with the bench
    workload's resource and scope."""
    parts = parts[:]
    rng.shuffle(parts)
    envelope = build_request(rng, [15])  # only its resource and scope are used
    template = ExportTraceServiceRequest.FromString(envelope.body)
    bodies = []
    for i in range(0, len(parts), PARTS_PER_REQUEST):
        req = ExportTraceServiceRequest()
        rs = req.resource_spans.add()
        rs.resource.CopyFrom(template.resource_spans[0].resource)
        ss = rs.scope_spans.add()
        ss.scope.CopyFrom(template.resource_spans[0].scope_spans[0].scope)
        for part in parts[i:i + PARTS_PER_REQUEST]:
            ss.spans.extend(part)
        bodies.append(req.SerializeToString())
    return bodies


def send_all(server: ServerProcess, bodies: list[bytes], errors: list[str]) -> None:
    with httpx.Client(timeout=60) as client:
        for body in bodies:
            while True:
                r = client.post(f"{server.http}/v1/traces", content=body, headers={
                    "content-type": "application/x-protobuf", "trajhub-project": PROJECT})
                if r.status_code != 503:  # saturated: retry, as an OTLP exporter would
                    break
                time.sleep(0.05)
            if r.status_code != 200 or r.content:  # an empty 200 body: no partial_success
                errors.append(f"{server.http}: {r.status_code} {r.content[:200]!r}")


def all_pages(client: httpx.Client, url: str) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = []
    cursor = None
    while True:
        params: dict[str, str | int] = {"project": PROJECT, "limit": 1000}
        if cursor:
            params["cursor"] = cursor
        r = client.get(url, params=params)
        assert r.status_code == 200, r.text
        page = r.json()
        items += page["items"]
        cursor = page["next_cursor"]
        if not cursor:
            return items


def test_two_servers_share_the_work_and_never_derive_a_trace_twice_at_once(
        database: TestDatabase, tmp_path: Path) -> None:
    rng = random.Random(14)
    sent, parts = split_traces(rng)
    env = {"TRAJHUB_INGEST_WORKERS": "1", "TRAJHUB_DERIVATION_WORKERS": "2"}
    for name in ("a", "b"):
        (tmp_path / name).mkdir()
    with separate_database(database) as url:
        servers = [ServerProcess.start(url, tmp_path / "a", settle_seconds=1.0, extra_env=env)]
        try:
            watched = run(install_probe(url))  # migrations are in: the first server applied them
            assert "trajectories" in watched
            servers.append(ServerProcess.start(url, tmp_path / "b", settle_seconds=1.0,
                                               extra_env=env))

            errors: list[str] = []
            threads = []
            for server, server_parts in zip(servers, parts, strict=True):
                bodies = requests_of(rng, server_parts)
                for i in range(SENDERS):
                    threads.append(threading.Thread(
                        target=send_all, args=(server, bodies[i::SENDERS], errors)))
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join()
            assert not errors, errors[:3]

            with httpx.Client(timeout=30) as client:
                def all_final() -> bool:
                    r = client.get(f"{servers[0].http}/api/v1/trajectories", params={
                        "project": PROJECT, "status": "final", "count": "true", "limit": 1})
                    return r.status_code == 200 and r.json()["total"] == TRACES

                # on time-out the checks below say what went wrong; the bound is generous
                # because a loaded machine settles the last runs late, and a passing run
                # waits only as long as the runs take
                with contextlib.suppress(AssertionError):
                    wait_for(all_final, timeout=180, interval=0.2, what="every trajectory final")
                # read through the other server: both serve the same store
                trajectories = all_pages(client, f"{servers[1].http}/api/v1/trajectories")
                traces = all_pages(client, f"{servers[0].http}/api/v1/traces")
        finally:
            for server in servers:
                server.stop()
        assert [s.exit_code for s in servers] == [0, 0]

        overlaps, windows = run(read_probe(url))
        assert not overlaps, (f"{len(overlaps)} times a trace was derived by two transactions "
                              f"at once, e.g. {[dict(o) for o in overlaps[:2]]}")
        # the run exercised what it claims to: derivations by more than one worker connection
        # (each derivation worker holds one), every derivation window closed by a commit
        assert len({w["pid"] for w in windows}) >= 2, "one worker derived everything"
        assert all(w["committed"] is not None for w in windows)

        # exactly one trajectory per trace sent, and nothing else
        ids = [t["trace_id"] for t in trajectories]
        assert len(ids) == len(set(ids)) == TRACES
        assert set(ids) == {s.trace_id for s in sent}

        # each reflects all of its trace's spans, wherever they arrived, and is final
        by_id = {t["trace_id"]: t for t in trajectories}
        span_counts = {t["trace_id"]: t["span_count"] for t in traces}
        wrong = []
        for trace in sent:
            j = by_id[trace.trace_id]
            got = (span_counts.get(trace.trace_id), j["model_step_count"], j["tool_step_count"],
                   j["input_tokens"], j["output_tokens"], j["status"], j["derivation_error"])
            shape = trace.shape
            want = (shape.spans, shape.model_steps, shape.tool_steps, shape.input_tokens,
                    shape.output_tokens, "final", None)
            if got != want:
                wrong.append((trace.trace_id, got, want))
        assert not wrong, (f"{len(wrong)} trajectories miss spans or are not final; (spans, "
                           f"model steps, tool steps, tokens in, out, status, error) got vs "
                           f"sent, e.g. {wrong[:3]}")

        # and the probe does see two transactions deriving one trace at once
        run(derive_twice_at_once(url, sent[0].trace_id))
        overlaps, _ = run(read_probe(url))
        assert [o["trace_id"] for o in overlaps] == [sent[0].trace_id]


async def read_probe(url: str) -> tuple[list[asyncpg.Record], list[asyncpg.Record]]:
    conn = await asyncpg.connect(url)
    try:
        return (await conn.fetch(OVERLAPS),
                await conn.fetch(WINDOWS + "SELECT * FROM w"))
    finally:
        await conn.close()


async def derive_twice_at_once(url: str, trace_id: str) -> None:
    """Two transactions that each take the trace and store a new revision of its trajectory,
    the second taking it before the first commits: what a missing lock would let two workers
    do."""
    first, second = await asyncpg.connect(url), await asyncpg.connect(url)
    try:
        take = "INSERT INTO trace_changes (project, trace_id) VALUES ($1, $2)"
        store = ("UPDATE trajectories SET revision = revision + 1, derived_at = now() "
                 "WHERE project = $1 AND trace_id = $2")
        tx1, tx2 = first.transaction(), second.transaction()
        await tx1.start()
        await tx2.start()
        await first.execute(take, PROJECT, trace_id)
        await second.execute(take, PROJECT, trace_id)
        await first.execute(store, PROJECT, trace_id)
        await tx1.commit()
        await second.execute(store, PROJECT, trace_id)
        await tx2.commit()
    finally:
        await first.close()
        await second.close()
