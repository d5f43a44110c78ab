"""A large trace whose spans are still arriving is left in the queue until they pause
(service/derivation.py, docs/large-traces.md §2): which claimed traces `still_arriving` names
(large, the latest change recent, the trajectory fresh), and a round that finds only such a trace
derives nothing and leaves its change queued. Each case is set up in a transaction of its own
on the test server's database and rolled back; the spans are the test's own."""

from __future__ import annotations

import uuid
from datetime import timedelta
from typing import Any

import asyncpg
import httpx
import pytest

from tests.harness import ServerProcess, TestDatabase, final_trajectory, rolled_back
from tests.otlp_builders import new_span_id, new_trace_id, request, span
from trajhub.service import derivation
from trajhub.storage import derivation_store
from trajhub.storage.derivation_store import ClaimedTrace

T0 = 1_700_000_000_000_000_000
MS = 1_000_000


def _trace(children: int) -> tuple[str, bytes]:
    tid, root = new_trace_id(), new_span_id()
    spans = [span(tid, "agent", span_id=root, start=T0, duration=(children + 2) * MS)]
    spans += [span(tid, f"tool_{i}", parent=root, start=T0 + (i + 1) * MS, duration=MS // 2)
              for i in range(children)]
    return tid.hex(), request(spans).SerializeToString()


@pytest.fixture(scope="module")
def traces(server: ServerProcess) -> dict[str, Any]:
    """A large trace (1,200 spans) and a small one (4), final, in a project of their own."""
    project = "defer-" + uuid.uuid4().hex[:8]
    out: dict[str, Any] = {"project": project}
    with httpx.Client(timeout=60) as c:
        for name, children in (("large", 1199), ("small", 3)):
            tid, body = _trace(children)
            r = c.post(f"{server.http}/v1/traces", content=body, headers={
                "content-type": "application/x-protobuf", "trajhub-project": project})
            assert r.status_code == 200, r.text
            out[name] = tid
        for name in ("large", "small"):
            final_trajectory(c, server.http, project, out[name], timeout=60)
    return out


async def _derived_ago(conn: asyncpg.Connection, project: str, seconds: float) -> None:
    await conn.execute("UPDATE trajectories SET derived_at = now() - make_interval(secs => $2) "
                       "WHERE project = $1", project, seconds)


def test_only_a_large_trace_with_recent_spans_and_a_fresh_trajectory_waits(
        traces: dict[str, Any], database: TestDatabase) -> None:
    project = traces["project"]

    async def case(conn: asyncpg.Connection) -> None:
        now = await conn.fetchval("SELECT now()")
        await _derived_ago(conn, project, 2)

        def claimed(name: str, ago: float) -> ClaimedTrace:
            return ClaimedTrace(project, traces[name], now - timedelta(seconds=ago))

        async def waiting(*claims: ClaimedTrace) -> set[tuple[str, str]]:
            return await derivation_store.still_arriving(
                conn, list(claims), derivation.QUIET_SECONDS, derivation.FRESH_SECONDS,
                derivation.LARGE_TRACE_SPANS)

        large = (project, traces["large"])
        # spans 0.1 s ago: the large trace waits, the small one does not
        assert await waiting(claimed("large", 0.1), claimed("small", 0.1)) == {large}
        # spans a second ago: they have paused, derive it
        assert await waiting(claimed("large", 1.0)) == set()
        # its trajectory older than FRESH_SECONDS: derive it even while spans arrive
        await _derived_ago(conn, project, derivation.FRESH_SECONDS + 1)
        assert await waiting(claimed("large", 0.1)) == set()

    rolled_back(database, case)


def test_a_round_that_finds_only_a_waiting_trace_leaves_it_queued(
        traces: dict[str, Any], database: TestDatabase) -> None:
    project, trace_id = traces["project"], traces["large"]

    async def case(conn: asyncpg.Connection) -> None:
        await _derived_ago(conn, project, 2)
        revision = await conn.fetchval(
            "SELECT revision FROM trajectories WHERE project = $1 AND trace_id = $2",
            project, trace_id)
        # this project's change only: other tests' changes are not this round's to take
        await conn.execute("LOCK TABLE trace_changes IN SHARE ROW EXCLUSIVE MODE")
        await conn.execute("DELETE FROM trace_changes")
        await conn.execute("INSERT INTO trace_changes (project, trace_id) VALUES ($1, $2)",
                           project, trace_id)
        assert await derivation.derive_round(conn, timedelta(seconds=0.5), 10) == 0
        assert await conn.fetchval(
            "SELECT count(*) FROM trace_changes WHERE project = $1 AND trace_id = $2",
            project, trace_id) == 1
        assert await conn.fetchval(
            "SELECT revision FROM trajectories WHERE project = $1 AND trace_id = $2",
            project, trace_id) == revision

    rolled_back(database, case)
