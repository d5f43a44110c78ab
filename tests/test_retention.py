"""Retention, watched as it happens: a server with a retention of a few seconds deletes the
expired traces with their spans, summaries, trajectories, revisions, scores and annotation
queue items; a project's own
setting (set through the CLI or REST) wins over the default; dataset items keep their snapshot;
a re-sent span is still stored once.

The server here has a database of its own: a global retention of seconds would otherwise
delete the other tests' data in the shared one."""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import Iterator

import asyncpg
import httpx
import pytest

from tests.captures import replay_run
from tests.harness import (
    ServerProcess,
    TestDatabase,
    final_trajectory,
    server_of_its_own,
    wait_for,
)
from tests.otlp_builders import PB, new_trace_id, request, span
from trajhub.client import TrajhubClient
from trajhub.service.cli import main as cli_main

#: long enough to read the trace and copy it into a dataset before it expires, on a busy machine
RETENTION_SECONDS = 8.0


@pytest.fixture(scope="module")
def retention_server(database: TestDatabase, tmp_path_factory: pytest.TempPathFactory
                     ) -> Iterator[ServerProcess]:
    with server_of_its_own(database, tmp_path_factory.mktemp("retention"), 0.2,
                           {"TRAJHUB_RETENTION_DAYS": str(RETENTION_SECONDS / 86400),
                            "TRAJHUB_RETENTION_INTERVAL_SECONDS": "0.3"}) as (proc, url):
        proc.database_url = url  # type: ignore[attr-defined]
        yield proc


def counts(url: str, project: str, trace_id: str) -> dict[str, int]:
    """Rows of the trace in every table that holds it."""
    async def query() -> dict[str, int]:
        conn = await asyncpg.connect(url)
        try:
            return {table: await conn.fetchval(
                f"SELECT count(*) FROM {table} WHERE project = $1 AND trace_id = $2",
                project, trace_id)
                for table in ("spans", "traces", "trajectories", "trajectory_revisions",
                              "trajectory_words", "trajectory_words_queue", "scores",
                              "review_items")}
        finally:
            await conn.close()

    return asyncio.run(query())


def send_run(server: ServerProcess, project: str) -> str:
    trace_id = replay_run("openinference/react.prebuilt.invoke", server.http, server.grpc,
                          project).most_common(1)[0][0]
    with httpx.Client() as c:
        final_trajectory(c, server.http, project, trace_id)
    return trace_id


def cli(*args: str, capsys: pytest.CaptureFixture[str]) -> str:
    assert cli_main.main(list(args)) == 0
    return capsys.readouterr().out


def test_expired_traces_go_and_overrides_and_dataset_items_stay(
        retention_server: ServerProcess, capsys: pytest.CaptureFixture[str]) -> None:
    server, url = retention_server, retention_server.database_url  # type: ignore[attr-defined]
    expiring, kept_cli, kept_rest = (f"ret-{kind}-{uuid.uuid4().hex[:6]}"
                                     for kind in ("default", "cli", "rest"))
    out = cli("retention", "set", "forever", "--url", server.http, "--project", kept_cli,
              capsys=capsys)
    assert f"project {kept_cli}: traces are kept forever (its own setting)" in out
    with TrajhubClient(server.http, project=kept_rest) as hub:
        assert hub.set_retention(days=30).source == "project"

    trace_cli = send_run(server, kept_cli)
    trace_rest = send_run(server, kept_rest)
    trace = send_run(server, expiring)
    with TrajhubClient(server.http, project=expiring) as hub:
        assert hub.rederive() == 1  # revision 2: revision 1 goes into the history
        with httpx.Client() as c:
            wait_for(lambda: c.get(f"{server.http}/api/v1/trajectories/{trace}",
                                   params={"project": expiring}
                                   ).headers.get("x-trajectory-revision") == "2",
                     what="revision 2")
            final_trajectory(c, server.http, expiring, trace)
        hub.add_score(trace, "correctness", 1.0)  # goes with its trajectory
        hub.create_review_queue("expiring")  # and so does its review item
        assert hub.add_review_items("expiring", [trace]).added == [trace]
    before = counts(url, expiring, trace)
    assert before["spans"] > 0 and before["traces"] == before["trajectories"] == 1
    # its words, filled or still queued
    assert before["trajectory_words"] + before["trajectory_words_queue"] >= 1
    assert before["scores"] == before["review_items"] == 1
    assert before["trajectory_revisions"] >= 1

    with TrajhubClient(server.http, project=expiring, timeout=30) as hub:
        dataset = "kept-" + uuid.uuid4().hex[:6]
        hub.create_dataset(dataset)
        assert hub.fill_dataset(dataset, trace_ids=[trace]).added == 1
        [item] = list(hub.iter_items(dataset, include_trajectory=True))
        snapshot = item.trajectory
        assert snapshot is not None and item.source_trace_id == trace

        wait_for(lambda: not any(counts(url, expiring, trace).values()),
                 timeout=RETENTION_SECONDS + 30, what="the expired trace deleted")
        assert httpx.get(f"{server.http}/api/v1/trajectories/{trace}",
                         params={"project": expiring}).status_code == 404
        assert httpx.get(f"{server.http}/api/v1/traces/{trace}",
                         params={"project": expiring}).status_code == 404
        # the dataset item keeps its own snapshot
        [after] = list(hub.iter_items(dataset, include_trajectory=True))
        assert after.id == item.id and after.trajectory == snapshot

    # the projects with a setting of their own outlived several sweeps past the default
    time.sleep(1.0)
    assert counts(url, kept_cli, trace_cli)["trajectories"] == 1
    assert counts(url, kept_rest, trace_rest)["trajectories"] == 1

    # back to the default: the next sweeps delete it too
    out = cli("retention", "clear", "--url", server.http, "--project", kept_cli, "--json",
              capsys=capsys)
    assert '"source": "default"' in out
    wait_for(lambda: not any(counts(url, kept_cli, trace_cli).values()), timeout=30,
             what="the trace deleted after its project's setting was cleared")
    assert counts(url, kept_rest, trace_rest)["trajectories"] == 1


def test_a_resent_span_is_stored_once_under_retention(retention_server: ServerProcess) -> None:
    url = retention_server.database_url  # type: ignore[attr-defined]
    project = "ret-dup-" + uuid.uuid4().hex[:6]
    tid = new_trace_id()
    spans = [span(tid, name="agent"), span(tid, name="tool")]
    body = request(spans).SerializeToString()
    for _ in range(2):  # a client retry
        r = httpx.post(f"{retention_server.http}/v1/traces", content=body,
                       headers={**PB, "trajhub-project": project}, timeout=30)
        assert r.status_code == 200
    # read before the sweep can take it: spans count is 2, not 4
    assert counts(url, project, tid.hex())["spans"] == 2


def log_counts(url: str, project: str) -> dict[str, int]:
    """The project's log records by the trace they name ("" for none)."""
    async def query() -> dict[str, int]:
        conn = await asyncpg.connect(url)
        try:
            return {r["trace_id"]: r["n"] for r in await conn.fetch(
                "SELECT trace_id, count(*) AS n FROM log_records WHERE project = $1 "
                "GROUP BY trace_id", project)}
        finally:
            await conn.close()

    return asyncio.run(query())


def test_log_records_go_with_their_trace_and_orphans_by_their_received_time(
        retention_server: ServerProcess) -> None:
    """A trace's records (its span's, and one naming a span it lacks) go when retention drops
    the trace; records of a trace without spans and records of no trace go by their own
    received time, unless their project keeps its data forever."""
    from tests.test_log_content import _note, post_logs, post_spans

    server, url = retention_server, retention_server.database_url  # type: ignore[attr-defined]
    expiring, kept = (f"ret-logs-{kind}-{uuid.uuid4().hex[:6]}" for kind in ("default", "kept"))
    with TrajhubClient(server.http, project=kept) as hub:
        assert hub.set_retention(days=0).days == 0
    tid, lonely = new_trace_id(), new_trace_id()
    root = span(tid, name="agent")
    post_spans(server.http, expiring, [root])
    post_logs(server.http, expiring, [_note(tid, root.span_id, "attached"),
                                      _note(tid, b"\x07" * 8, "span not in trace"),
                                      _note(lonely, b"\x01" * 8, "no spans"), _note()])
    post_logs(server.http, kept, [_note(lonely, b"\x01" * 8, "kept"), _note()])
    assert log_counts(url, expiring) == {tid.hex(): 2, lonely.hex(): 1, "": 1}
    wait_for(lambda: not log_counts(url, expiring) and not counts(url, expiring, tid.hex())[
        "spans"], timeout=RETENTION_SECONDS + 30, what="the expired records deleted")
    time.sleep(1.0)  # several sweeps past the default
    assert log_counts(url, kept) == {lonely.hex(): 1, "": 1}


def test_rest_retention_is_validated(retention_server: ServerProcess) -> None:
    base = f"{retention_server.http}/api/v1/retention"
    project = {"project": "ret-v-" + uuid.uuid4().hex[:6]}
    current = httpx.get(base, params=project).json()
    assert current["source"] == "default"
    assert current["days"] == current["default_days"]
    assert current["days"] == pytest.approx(RETENTION_SECONDS / 86400)
    negative = httpx.put(base, params=project, json={"days": -1})
    # a bad body is a 422 naming the field, as on every REST route
    assert negative.status_code == 422 and "days" in negative.text
    assert httpx.put(base, params=project, json={"days": "x"}).status_code == 422
    assert httpx.put(base, params=project, content=b"days=1",
                     headers={"content-type": "text/plain"}).status_code == 415
    assert httpx.put(base, params={**project, "dayz": "1"},
                     json={"days": 1}).status_code == 400
    assert httpx.put(base, params=project, json={"days": 2.5}).json()["days"] == 2.5
    assert httpx.delete(base, params=project).json()["source"] == "default"


def test_cli_rejects_a_bad_number_of_days(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        cli_main.main(["retention", "set", "soon", "--url", "http://127.0.0.1:9"])
    assert exited.value.code == 2
    assert "'soon' is not a number of days" in capsys.readouterr().err


