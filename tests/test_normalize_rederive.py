"""`trajhub rederive --outdated` upgrades trajectories an older normalizer stored.

A stored trajectory is turned into one of normalizer 1.0.2 the way that version wrote it (its
version, and its root input as the instrumentation recorded it: the whole serialised LangGraph
state); the CLI must queue exactly the outdated trace and the worker must rebuild it with the
current normalizer and its canonical payloads (docs/trajectory-rules.md §8).
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from pathlib import Path

import asyncpg
import httpx

from tests.captures import replay_run
from tests.harness import ServerProcess, TestDatabase, final_trajectory, wait_for
from trajhub.normalizers import NORMALIZER_VERSION
from trajhub.storage.stored_documents import DOCUMENT, unpack

QUESTION = "What's the weather in Paris, what is 2+3, and what is 1/0?"  # tests/fake_agent.py
OLD_INPUT = json.dumps(
    {"messages": [{"type": "human", "data": {"content": QUESTION, "type": "human"}}]}
)


async def _make_outdated(url: str, project: str, trace_id: str) -> None:
    conn = await asyncpg.connect(url)
    try:
        row = await conn.fetchrow(
            f"SELECT {DOCUMENT} AS document FROM trajectories "
            "WHERE project = $1 AND trace_id = $2",
            project,
            trace_id,
        )
        document = json.loads(unpack(row["document"]) or "")
        document["root_step"]["input"] = OLD_INPUT
        await conn.execute(
            # stored as before migration 0020: the text, uncompressed, in document_text
            "UPDATE trajectories SET normalizer_version = '1.0.2', document = NULL, "
            "document_text = $3, root_input = $4 WHERE project = $1 AND trace_id = $2",
            project,
            trace_id,
            json.dumps(document),
            OLD_INPUT,
        )
    finally:
        await conn.close()


def test_rederive_outdated_upgrades_stored_trajectories(
    server: ServerProcess, project: str, database: TestDatabase
) -> None:
    old = replay_run("openinference/react.prebuilt.stream", server.http, server.grpc, project)
    current = replay_run(
        "cozeloop_python/model_error.prebuilt.stream", server.http, server.grpc, project
    )
    old_id, current_id = old.most_common(1)[0][0], current.most_common(1)[0][0]
    api = f"{server.http}/api/v1/trajectories"
    with httpx.Client(params={"project": project}, timeout=30) as c:
        for trace_id in (old_id, current_id):
            final_trajectory(c, server.http, project, trace_id)
        revision = int(c.get(f"{api}/{old_id}").headers["x-trajectory-revision"])
        current_revision = c.get(f"{api}/{current_id}").headers["x-trajectory-revision"]
        asyncio.run(_make_outdated(database.url, project, old_id))
        stale = c.get(f"{api}/{old_id}")
        assert stale.headers["x-normalizer-version"] == "1.0.2"
        assert stale.json()["root_step"]["input"] == OLD_INPUT

        done = subprocess.run(
            [sys.executable, "-m", "trajhub", "rederive", "--database-url", database.url,
             "--project", project, "--outdated"],
            capture_output=True, text=True, timeout=60, cwd=Path(__file__).parent.parent,
        )
        assert done.returncode == 0, done.stderr
        assert "queued 1 trace" in done.stdout  # only the outdated one

        def upgraded() -> httpx.Response | None:
            r = c.get(f"{api}/{old_id}")
            return r if r.headers["x-trajectory-revision"] == str(revision + 1) else None

        fresh = wait_for(upgraded, 30, what="the re-derived trajectory")
        assert fresh.headers["x-normalizer-version"] == NORMALIZER_VERSION
        root = fresh.json()["root_step"]
        assert root["input"] == json.dumps(
            [{"content": QUESTION, "role": "user"}], separators=(",", ":")
        )
        # the list reads the stored summary columns, rebuilt too
        (summary,) = [t for t in c.get(api).json()["items"] if t["trace_id"] == old_id]
        assert summary["normalizer_version"] == NORMALIZER_VERSION
        # the up-to-date trajectory was not touched
        assert c.get(f"{api}/{current_id}").headers["x-trajectory-revision"] == current_revision
