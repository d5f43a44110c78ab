"""Review queues (docs/review.md): a queue is created with the score configs
reviewers must give; trajectories are added by hand and by the list's filter; a reviewer takes
the next item (held by them), scores it (source `human`, author the reviewer; a score outside
its config or a missing one is a 400 naming it), comments, corrects the expectations, and
completes or skips it; the queue's progress counts them; the completed items flow into a
dataset with their corrected expectations. Two reviewers (two keys) never hold the same item,
also when they claim at the same moment; a lease that ran out frees the item for another. The
CLI and the client drive the same routes.
"""

from __future__ import annotations

import asyncio
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import asyncpg
import httpx
import pytest

from tests.conftest import Secured
from tests.harness import ServerProcess, TestDatabase, final_trajectory
from tests.otlp_builders import PB, new_span_id, new_trace_id, request, span

T0 = 1_700_000_000_000_000_000


def send_run(c: httpx.Client, base: str, project: str, agent: str, start: int) -> str:
    """One agent run with a tool call; waits for its final trajectory."""
    tid, root, tool = new_trace_id(), new_span_id(), new_span_id()
    spans = [
        span(tid, f"invoke_agent {agent}", span_id=root, start=start, duration=10_000_000,
             attributes={"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": agent}),
        span(tid, "execute_tool lookup", parent=root, span_id=tool, start=start + 1_000_000,
             attributes={"gen_ai.operation.name": "execute_tool",
                         "gen_ai.tool.name": "lookup"}),
    ]
    r = c.post(f"{base}/v1/traces", content=request(spans).SerializeToString(),
               headers={**PB, "trajhub-project": project})
    assert r.status_code == 200, r.text
    final_trajectory(c, base, project, tid.hex())
    return tid.hex()


@pytest.fixture
def api(server: ServerProcess, project: str) -> Any:
    with httpx.Client(base_url=server.http + "/api/v1", timeout=30,
                      headers={"trajhub-project": project}) as client:
        yield client


def configure(api: httpx.Client) -> None:
    for name, body in [("correct", {"data_type": "boolean"}),
                       ("quality", {"data_type": "number", "min": 1, "max": 5})]:
        r = api.put(f"/score-configs/{name}", json=body)
        assert r.status_code == 200, r.text


def test_a_queue_is_filled_reviewed_and_exported_with_corrections(
        server: ServerProcess, project: str, api: httpx.Client) -> None:
    configure(api)
    with httpx.Client(timeout=30) as c:
        runs = [send_run(c, server.http, project, agent, T0 + i * 1_000_000_000)
                for i, agent in enumerate(["support", "support", "billing"])]

    # a score name with no config is refused, naming it
    r = api.post("/review-queues", json={"name": "triage", "score_names": ["correct", "nope"]})
    assert r.status_code == 400 and "nope" in r.json()["detail"], r.text
    r = api.post("/review-queues", json={"name": "triage", "description": "check answers",
                                         "score_names": ["correct", "quality"]})
    assert r.status_code == 201, r.text
    assert (r.json()["name"], r.json()["score_names"], r.json()["total"]) == (
        "triage", ["correct", "quality"], 0)
    assert api.post("/review-queues", json={"name": "triage"}).status_code == 409

    # by hand: the first run (and an unknown trace), then by filter: the support agent's runs
    missing = "0" * 32
    r = api.post("/review-queues/triage/items", json={"trace_ids": [runs[0], missing]})
    assert r.json() == {"added": [runs[0]], "already_queued": [], "not_found": [missing]}
    r = api.post("/review-queues/triage/items", json={"query": {"agent": "support"}})
    assert r.status_code == 200, r.text
    # newest first: run 1 is new, run 0 is queued already
    assert r.json() == {"added": [runs[1]], "already_queued": [runs[0]], "not_found": []}
    r = api.post("/review-queues/triage/items",
                 json={"query": {"agent": "billing"}, "limit": 1})
    assert r.json()["added"] == [runs[2]]
    bad = api.post("/review-queues/triage/items", json={"query": {"agent": "x"},
                                                         "trace_ids": [runs[0]]})
    assert bad.status_code == 422 and "exactly one" in bad.text

    # without keys, `next` needs the reviewer's name
    r = api.post("/review-queues/triage/next", json={})
    assert r.status_code == 400 and "author" in r.json()["detail"]
    first = api.post("/review-queues/triage/next", json={"author": "alice"}).json()["item"]
    assert (first["trace_id"], first["reviewer"], first["status"]) == (runs[0], "alice",
                                                                         "pending")
    # asking again renews the same item; another reviewer gets the next one
    again = api.post("/review-queues/triage/next", json={"author": "alice"}).json()["item"]
    assert again["id"] == first["id"]
    second = api.post("/review-queues/triage/next", json={"author": "bob"}).json()["item"]
    assert second["trace_id"] == runs[1]
    progress = api.get("/review-queues/triage").json()
    assert [progress[k] for k in ("total", "done", "skipped", "in_review", "pending")] == [
        3, 0, 0, 2, 3]

    url = f"/review-queues/triage/items/{first['id']}/complete"
    # a missing score, a value out of range, a wrong type: 400 naming it
    r = api.post(url, json={"author": "alice", "scores": [{"name": "correct", "value": True}]})
    assert r.status_code == 400 and "quality" in r.json()["detail"], r.text
    r = api.post(url, json={"author": "alice", "scores": [
        {"name": "correct", "value": True}, {"name": "quality", "value": 9}]})
    assert r.status_code == 400 and "'quality'" in r.json()["detail"] \
        and "1.0 to 5.0" in r.json()["detail"], r.text
    r = api.post(url, json={"author": "alice", "scores": [
        {"name": "correct", "value": "yes"}, {"name": "quality", "value": 4}]})
    assert r.status_code == 400 and "'correct'" in r.json()["detail"], r.text
    # bob does not hold alice's item
    r = api.post(url, json={"author": "bob", "scores": [
        {"name": "correct", "value": True}, {"name": "quality", "value": 4}]})
    assert r.status_code == 409, r.text

    corrected = {"agents": ["support"], "tools": {"support": ["lookup", "refund"]}}
    r = api.post(url, json={"author": "alice", "comment": "should have refunded",
                            "expectations": corrected, "scores": [
                                {"name": "correct", "value": False},
                                {"name": "quality", "value": 2}]})
    assert r.status_code == 200, r.text
    done = r.json()
    assert (done["item"]["status"], done["item"]["comment"]) == ("done", "should have refunded")
    # stored in the dataset items' normal form (an empty tool order added)
    assert done["item"]["expectations"] == {**corrected, "tool_order": []}
    assert [(s["name"], s["value"], s["source"], s["author"]) for s in done["scores"]] == [
        ("correct", False, "human", "alice"), ("quality", 2.0, "human", "alice")]
    stored = api.get(f"/trajectories/{runs[0]}/scores").json()["items"]
    assert [(s["name"], s["value"], s["source"], s["author"]) for s in stored] == [
        ("correct", False, "human", "alice"), ("quality", 2.0, "human", "alice")]
    # completing again: the item is no longer held
    assert api.post(url, json={"author": "alice", "scores": [
        {"name": "correct", "value": True}, {"name": "quality", "value": 4}]}).status_code == 409

    # bob skips his; the third run is alice's next
    r = api.post(f"/review-queues/triage/items/{second['id']}/skip", json={"author": "bob"})
    assert r.status_code == 200 and r.json()["status"] == "skipped"
    third = api.post("/review-queues/triage/next", json={"author": "alice"}).json()["item"]
    assert third["trace_id"] == runs[2]
    r = api.post(f"/review-queues/triage/items/{third['id']}/complete", json={
        "author": "alice", "scores": [{"name": "correct", "value": True},
                                      {"name": "quality", "value": 5}]})
    assert r.status_code == 200, r.text
    assert api.post("/review-queues/triage/next", json={"author": "carol"}).json() == {
        "item": None}
    progress = api.get("/review-queues/triage").json()
    assert [progress[k] for k in ("total", "done", "skipped", "in_review", "pending")] == [
        3, 2, 1, 0, 0]
    listed = api.get("/review-queues").json()["items"]
    assert [(q["name"], q["done"]) for q in listed] == [("triage", 2)]
    assert [i["trace_id"] for i in api.get("/review-queues/triage/items",
                                           params={"status": "done"}).json()["items"]] == [
        runs[0], runs[2]]

    # the completed items flow into a dataset, the corrected expectations with them
    r = api.post("/review-queues/triage/export-to-dataset", json={"dataset": "reviewed"})
    assert r.status_code == 200, r.text
    assert (r.json()["added"], r.json()["skipped_duplicates"]) == (2, 0)
    items = api.get("/datasets/reviewed/items").json()["items"]
    by_trace = {i["source_trace_id"]: i for i in items}
    assert set(by_trace) == {runs[0], runs[2]}
    assert by_trace[runs[0]]["expectations"]["tools"] == {"support": ["lookup", "refund"]}
    assert by_trace[runs[0]]["metadata"]["review_comment"] == "should have refunded"
    # the uncorrected one keeps what the run did
    assert by_trace[runs[2]]["expectations"]["tools"] == {"billing": ["lookup"]}
    assert "review:triage" in by_trace[runs[2]]["tags"]
    again_export = api.post("/review-queues/triage/export-to-dataset",
                            json={"dataset": "reviewed"}).json()
    assert (again_export["added"], again_export["skipped_duplicates"]) == (0, 2)

    assert api.delete("/review-queues/triage").status_code == 204
    assert api.get("/review-queues/triage").status_code == 404


def test_many_reviewers_claiming_at_once_never_share_an_item(
        server: ServerProcess, project: str, api: httpx.Client) -> None:
    with httpx.Client(timeout=30) as c:
        runs = [send_run(c, server.http, project, "a", T0 + i * 1_000_000_000)
                for i in range(6)]
    assert api.post("/review-queues", json={"name": "q"}).status_code == 201
    api.post("/review-queues/q/items", json={"trace_ids": runs})
    reviewers = [f"r{i}" for i in range(8)]
    barrier = threading.Barrier(len(reviewers))

    def claim(author: str) -> Any:
        with httpx.Client(base_url=server.http + "/api/v1", timeout=30,
                          headers={"trajhub-project": project}) as own:
            barrier.wait()
            return own.post("/review-queues/q/next", json={"author": author}).json()["item"]

    with ThreadPoolExecutor(len(reviewers)) as pool:
        got = list(pool.map(claim, reviewers))
    held = [g["trace_id"] for g in got if g is not None]
    # 6 items, 8 reviewers: each item to exactly one, two reviewers get none
    assert sorted(held) == sorted(runs)
    assert sum(g is None for g in got) == 2


def test_two_keys_never_hold_the_same_item(secured: Secured) -> None:
    base = secured.server.http
    with httpx.Client(timeout=30, headers=secured.headers) as admin:
        names = {}
        keys = {}
        for who in ("alice", "bob"):
            r = admin.post(f"{base}/api/v1/keys", json={"scope": "read", "name": f"rev-{who}"})
            assert r.status_code == 201, r.text
            keys[who], names[who] = r.json()["key"], f"rev-{who}"
        runs = [send_run(admin, base, secured.project, "keyed", T0 + i * 1_000_000_000)
                for i in range(4)]
        for name in ("correct",):
            admin.put(f"{base}/api/v1/score-configs/{name}", json={"data_type": "boolean"})
        queue = "keys-" + runs[0][:8]
        r = admin.post(f"{base}/api/v1/review-queues",
                       json={"name": queue, "score_names": ["correct"]})
        assert r.status_code == 201, r.text
        admin.post(f"{base}/api/v1/review-queues/{queue}/items", json={"trace_ids": runs})

    def client(who: str) -> httpx.Client:
        return httpx.Client(base_url=f"{base}/api/v1/review-queues/{queue}", timeout=30,
                            headers={"authorization": f"Bearer {keys[who]}"})

    with client("alice") as alice, client("bob") as bob:
        # a read key may not create a queue; with a key, `author` is the key's
        assert alice.post(f"{base}/api/v1/review-queues",
                          json={"name": "mine"}).status_code == 403
        r = alice.post("/next", json={"author": "mallory"})
        assert r.status_code == 400 and "author" in r.json()["detail"]
        seen: list[str] = []
        barrier = threading.Barrier(2)

        def take(c: httpx.Client) -> Any:
            barrier.wait()
            return c.post("/next", json={}).json()["item"]

        # two rounds of simultaneous claims: never the same item; each reviewer's own name
        for _ in range(2):
            with ThreadPoolExecutor(2) as pool:
                a, b = pool.map(take, [alice, bob])
            assert a["id"] != b["id"]
            assert (a["reviewer"], b["reviewer"]) == (names["alice"], names["bob"])
            # bob cannot complete alice's item
            r = bob.post(f"/items/{a['id']}/complete",
                         json={"scores": [{"name": "correct", "value": True}]})
            assert r.status_code == 409, r.text
            r = alice.post(f"/items/{a['id']}/complete",
                           json={"scores": [{"name": "correct", "value": True}]})
            assert r.status_code == 200, r.text
            assert r.json()["scores"][0]["author"] == names["alice"]
            assert bob.post(f"/items/{b['id']}/skip", json={}).status_code == 200
            seen += [a["trace_id"], b["trace_id"]]
        assert sorted(seen) == sorted(runs)
        progress = alice.get(f"{base}/api/v1/review-queues/{queue}").json()
        assert [progress[k] for k in ("total", "done", "skipped", "in_review")] == [4, 2, 2, 0]


def test_the_cli_and_the_client_make_fill_review_and_export_a_queue(
        server: ServerProcess, project: str, api: httpx.Client) -> None:
    from tests.test_cli import one_line_error, trajhub
    from trajhub.client import TrajhubClient

    configure(api)
    with httpx.Client(timeout=30) as c:
        runs = [send_run(c, server.http, project, agent, T0 + i * 1_000_000_000)
                for i, agent in enumerate(["support", "billing"])]
    at = {"url": server.http, "project": project}
    done = trajhub("review", "create", "cli", "--score", "correct", "--description", "d", **at)
    assert done.returncode == 0, done.stderr
    assert "review queue cli created (reviewers give: correct)" in done.stdout
    assert "no score config named nope" in one_line_error(
        trajhub("review", "create", "other", "--score", "nope", **at))
    done = trajhub("review", "add", "cli", "--agent", "support", **at)
    assert done.returncode == 0 and "added 1, already queued 0, not found 0" in done.stdout, \
        done.stderr
    done = trajhub("review", "add", "cli", runs[1], runs[0], **at)
    assert "added 1, already queued 1, not found 0" in done.stdout, done.stderr
    assert "give trace ids or filters" in one_line_error(
        trajhub("review", "add", "cli", runs[0], "--agent", "x", **at))

    with TrajhubClient(server.http, project=project, timeout=30) as hub:
        item = hub.next_review_item("cli", author="ann")
        assert item is not None and item.trace_id == runs[0] and item.reviewer == "ann"
        reviewed, scores = hub.complete_review_item(
            "cli", item.id, [{"name": "correct", "value": True}], comment="ok", author="ann")
        assert (reviewed.status, [(s.name, s.value, s.source) for s in scores]) == (
            "done", [("correct", True, "human")])
        second = hub.next_review_item("cli", author="ann")
        assert second is not None and second.trace_id == runs[1]
        assert hub.skip_review_item("cli", second.id, author="ann").status == "skipped"
        assert hub.next_review_item("cli", author="ann") is None
        queue = hub.review_queue("cli")
        assert (queue.total, queue.done, queue.skipped, queue.in_review) == (2, 1, 1, 0)
        assert [q.name for q in hub.list_review_queues()] == ["cli"]
        assert [i.trace_id for i in hub.review_items("cli", "skipped")] == [runs[1]]
        out = hub.export_review_queue("cli", "from-cli")
        assert (out.added, out.skipped_duplicates) == (1, 0)

    done = trajhub("review", "progress", "cli", **at)
    assert "cli: 1 done, 1 skipped, 0 in review, 0 waiting, of 2" in done.stdout, done.stderr
    done = trajhub("review", "list", **at)
    assert done.returncode == 0 and "cli" in done.stdout and "IN REVIEW" in done.stdout


def _expire_leases(url: str, project: str) -> None:
    """Make every lease of the project's queues run out (a lease is at least 30 s)."""
    async def run() -> None:
        conn = await asyncpg.connect(url)
        try:
            await conn.execute("UPDATE review_items SET lease_until_ns = 1 WHERE project = $1",
                               project)
        finally:
            await conn.close()

    asyncio.run(run())


def test_a_lease_run_out_frees_the_item_for_another_reviewer(
        server: ServerProcess, database: TestDatabase, project: str,
        api: httpx.Client) -> None:
    with httpx.Client(timeout=30) as c:
        runs = [send_run(c, server.http, project, "a", T0 + i * 1_000_000_000)
                for i in range(2)]
    assert api.post("/review-queues", json={"name": "lease"}).status_code == 201
    api.post("/review-queues/lease/items", json={"trace_ids": runs})
    lease = api.post("/review-queues/lease/next", json={"author": "alice",
                                                        "lease_seconds": 30}).json()["item"]
    assert lease["trace_id"] == runs[0]
    bob = api.post("/review-queues/lease/next", json={"author": "bob"}).json()["item"]
    assert bob["trace_id"] == runs[1]
    _expire_leases(database.url, project)
    assert api.get("/review-queues/lease").json()["in_review"] == 0
    # alice's lease ran out: carol is given her item; alice can no longer complete it
    carol = api.post("/review-queues/lease/next", json={"author": "carol"}).json()["item"]
    assert carol["id"] == lease["id"] and carol["reviewer"] == "carol"
    r = api.post(f"/review-queues/lease/items/{lease['id']}/complete",
                 json={"author": "alice"})
    assert r.status_code == 409 and "'alice'" in r.json()["detail"], r.text
    # bob's ran out too, but nobody took his item: he may still finish it
    r = api.post(f"/review-queues/lease/items/{bob['id']}/complete", json={"author": "bob"})
    assert r.status_code == 200 and r.json()["item"]["status"] == "done", r.text
    r = api.post(f"/review-queues/lease/items/{carol['id']}/complete", json={"author": "carol"})
    assert r.status_code == 200, r.text
