"""Online evaluation rules (docs/rules.md): a rule scores each trajectory that becomes
final and matches its filter (and its sample), again for a new revision with the old score
kept; bad input is a 4xx naming the problem; edit, switch off and delete; a backfill over the
stored trajectories with progress; the durable queue survives kill -9 (every pending run scores
exactly once after the restart); an unreachable judge is retried with backoff, a malformed
verdict is an error score, a rule's judge-call cap holds runs back; /metrics counts runs.
"""

from __future__ import annotations

import json
import os
import signal
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import asyncpg
import httpx
import pytest

from tests.cli_runner import run_cli
from tests.conftest import Secured
from tests.fake_judge import FakeJudge
from tests.harness import (
    ServerProcess,
    TestDatabase,
    fetch_value,
    final_trajectory,
    run,
    separate_database,
    wait_for,
)
from tests.otlp_builders import PB, agent_run_spans, new_span_id, new_trace_id, request, span
from trajhub.client import ApiError, TrajhubClient

T0 = 1_700_000_000_000_000_000


def send_run(base: str, project: str, agent: str = "weather", wait: bool = True,
             tid: bytes | None = None, start: int = T0, root: bytes | None = None) -> str:
    """One agent run (an agent step, a model call, a tool call); waits for its final
    trajectory when `wait`. Returns the trace id."""
    tid = tid or new_trace_id()
    root, chat, tool = root or new_span_id(), new_span_id(), new_span_id()
    spans = agent_run_spans(tid, root, chat, tool, start, agent)
    with httpx.Client(timeout=30) as c:
        r = c.post(f"{base}/v1/traces", content=request(spans).SerializeToString(),
                   headers={**PB, "trajhub-project": project})
        assert r.status_code == 200, r.text
        if wait:
            final_trajectory(c, base, project, tid.hex())
    return tid.hex()


@pytest.fixture
def api(server: ServerProcess, project: str) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=server.http + "/api/v1", timeout=30,
                      headers={"trajhub-project": project}) as client:
        yield client


def scores_of(api: httpx.Client, trace_id: str) -> list[dict[str, Any]]:
    r = api.get(f"/trajectories/{trace_id}/scores")
    assert r.status_code == 200, r.text
    return list(r.json()["items"])


def add_rule(api: httpx.Client, **body: Any) -> dict[str, Any]:
    r = api.post("/rules", json=body)
    assert r.status_code == 201, r.text
    return dict(r.json())


def drained(api: httpx.Client) -> bool:
    return all(r["pending_runs"] == 0 for r in api.get("/rules").json()["items"])


def test_a_rule_scores_each_new_final_trajectory_that_matches_its_filter(
        server: ServerProcess, project: str, api: httpx.Client) -> None:
    # efficiency with a budget of 10 steps: the run has 2 (a model and a tool step), so 1.0
    rule = add_rule(api, name="steps", evaluator="efficiency", config={"max_steps": 10},
                    filter={"agent": "weather", "has_error": False})
    assert (rule["evaluator"], rule["config"], rule["filter"], rule["sample_rate"],
            rule["enabled"], rule["pending_runs"]) == (
        "efficiency", {"max_steps": 10}, {"agent": "weather", "has_error": False}, 1.0, True, 0)
    other = add_rule(api, name="planner-only", evaluator="efficiency",
                     config={"max_steps": 1}, filter={"agent": "planner"})
    never = add_rule(api, name="sampled-out", evaluator="efficiency",
                     config={"max_steps": 1}, sample_rate=0)
    off = add_rule(api, name="off", evaluator="efficiency", config={"max_steps": 1},
                   enabled=False)

    trace_id = send_run(server.http, project)
    scored = wait_for(lambda: scores_of(api, trace_id), what="the rule's score")
    wait_for(lambda: drained(api), what="the queue to drain")
    scored = scores_of(api, trace_id)
    assert [(s["name"], s["value"], s["source"], s["evaluator"], s["evaluator_config"],
             s["rule_id"], s["revision"], s["error"]) for s in scored] == [
        ("efficiency", 1.0, "evaluator", "efficiency", {"max_steps": 10}, rule["id"], 1, None)]
    assert {other["id"], never["id"], off["id"]}.isdisjoint(s["rule_id"] for s in scored)

    # the planner-only rule does score a planner's run: its budget of 1 step is not met, 0.0
    planner = send_run(server.http, project, agent="planner")
    wait_for(lambda: scores_of(api, planner), what="the planner's score")
    wait_for(lambda: drained(api), what="the queue to drain")
    assert sorted((s["rule_id"], s["value"]) for s in scores_of(api, planner)) == [
        (other["id"], 0.0)]


def test_a_rules_failures_join_its_annotation_queue(
        server: ServerProcess, project: str, api: httpx.Client) -> None:
    r = api.post("/rules", json={"name": "x", "evaluator": "efficiency",
                                 "config": {"max_steps": 10}, "review_queue": "nope"})
    assert r.status_code == 400 and "review_queue" in r.text and "nope" in r.text, r.text
    assert api.post("/review-queues", json={"name": "triage"}).status_code == 201
    # a budget of 1 step: a run of 2 steps scores 0.0, a failure; of 10 steps: 1.0, a pass
    add_rule(api, name="tight", evaluator="efficiency", config={"max_steps": 1},
             filter={"agent": "planner"}, review_queue="triage")
    roomy = add_rule(api, name="roomy", evaluator="efficiency", config={"max_steps": 10},
                     filter={"agent": "weather"}, review_queue="triage")
    assert roomy["review_queue"] == "triage" and roomy["fail_below"] == 1.0
    failed = send_run(server.http, project, agent="planner")
    passed = send_run(server.http, project, agent="weather")
    for trace_id in (failed, passed):
        wait_for(lambda t=trace_id: scores_of(api, t), what="the rules' scores")
    wait_for(lambda: drained(api), what="the queue to drain")
    items = api.get("/review-queues/triage/items").json()["items"]
    assert [i["trace_id"] for i in items] == [failed]
    # the bar is a score: at most 1; and the queue must be one the project has
    r = api.patch(f"/rules/{roomy['id']}", json={"fail_below": 1.01})
    assert r.status_code == 422, r.text  # at most 1
    r = api.patch(f"/rules/{roomy['id']}", json={"review_queue": "missing"})
    assert r.status_code == 400 and "missing" in r.text, r.text


def test_a_new_revision_is_scored_again_and_the_old_score_stays(
        server: ServerProcess, project: str, api: httpx.Client) -> None:
    rule = add_rule(api, name="steps", evaluator="efficiency", config={"max_steps": 2})
    tid, root = new_trace_id(), new_span_id()
    trace_id = send_run(server.http, project, tid=tid, root=root)
    wait_for(lambda: scores_of(api, trace_id), what="revision 1's score")
    # another model call of the same trace: a third step, over the budget of 2
    extra = span(tid, "chat gpt", parent=root, span_id=new_span_id(), start=T0 + 5_000_000,
                 attributes={"gen_ai.operation.name": "chat", "gen_ai.request.model": "gpt-4o"})
    with httpx.Client(timeout=30) as c:
        r = c.post(f"{server.http}/v1/traces", content=request([extra]).SerializeToString(),
                   headers={**PB, "trajhub-project": project})
        assert r.status_code == 200, r.text
    wait_for(lambda: len(scores_of(api, trace_id)) == 2, what="revision 2's score")
    wait_for(lambda: drained(api), what="the queue to drain")
    assert [(s["revision"], s["rule_id"]) for s in scores_of(api, trace_id)] == [
        (1, rule["id"]), (2, rule["id"])]
    assert [s["value"] for s in scores_of(api, trace_id)] == [1.0, 0.0]


BUDGET = {"max_steps": 10}


def test_bad_rules_get_a_4xx_naming_the_problem(api: httpx.Client) -> None:
    assert api.post("/rules", json={"name": "a", "evaluator": "efficiency"}).json() == {
        "detail": "efficiency: configure at least one budget"}
    base = {"name": "a", "evaluator": "efficiency", "config": BUDGET}
    cases: list[tuple[dict[str, Any], int, str]] = [
        ({**base, "evaluator": "no_such_evaluator"}, 400, "no_such_evaluator"),
        ({**base, "config": {"max_stepz": 1}}, 400, "max_stepz"),
        ({**base, "filter": {"agnt": "x"}}, 400, "agnt"),
        ({**base, "filter": {"score": "correctness>>1"}}, 400, "score"),
        ({**base, "filter": {"start": "yesterday"}}, 400, "start"),
        ({**base, "filter": {"min_tokens": "many"}}, 400, "min_tokens"),
        ({**base, "sample_rate": 1.5}, 422, "sample_rate"),
        ({**base, "sample_rate": -0.1}, 422, "sample_rate"),
        ({**base, "expectations": {"agents": 3}}, 400, "agents"),
        ({**base, "name": "bad name!"}, 422, "name"),
        ({**base, "evaluator": "llm_judge", "config": {}}, 400, "TRAJHUB_JUDGE_URL"),
    ]
    for body, status, named in cases:
        r = api.post("/rules", json=body)
        assert r.status_code == status, (body, r.text)
        assert named in r.text, (body, r.text)
    assert api.post("/rules", json=base).status_code == 201
    taken = api.post("/rules", json=base)
    assert taken.status_code == 409 and "'a'" in taken.text
    (rule,) = api.get("/rules").json()["items"]
    bad_patch = api.patch(f"/rules/{rule['id']}", json={"filter": {"agnt": "x"}})
    assert bad_patch.status_code == 400 and "agnt" in bad_patch.text
    # a null leaves a field that always has a value as it is
    kept = api.patch(f"/rules/{rule['id']}",
                     json={"enabled": None, "max_judge_calls_per_minute": 3.0})
    assert kept.status_code == 200 and kept.json()["enabled"] is True, kept.text
    assert kept.json()["max_judge_calls_per_minute"] == 3
    assert api.get("/rules/999999999").status_code == 404


def test_rules_are_edited_switched_off_and_deleted(
        server: ServerProcess, project: str, api: httpx.Client) -> None:
    rule = add_rule(api, name="steps", evaluator="efficiency", config={"max_steps": 10})
    edited = api.patch(f"/rules/{rule['id']}", json={"config": {"max_steps": 1},
                                                     "sample_rate": 0.5, "name": "tight"})
    assert edited.status_code == 200, edited.text
    assert (edited.json()["name"], edited.json()["config"], edited.json()["sample_rate"],
            edited.json()["filter"]) == ("tight", {"max_steps": 1}, 0.5, {})
    off = api.patch(f"/rules/{rule['id']}", json={"enabled": False})
    assert off.json()["enabled"] is False
    trace_id = send_run(server.http, project)
    time.sleep(1.5)  # a rule switched off queues nothing: no score comes
    assert scores_of(api, trace_id) == []
    assert api.get(f"/rules/{rule['id']}").json()["pending_runs"] == 0
    assert api.delete(f"/rules/{rule['id']}").status_code == 204
    assert api.get(f"/rules/{rule['id']}").status_code == 404
    assert api.get("/rules").json()["items"] == []


def test_a_backfill_runs_a_rule_over_stored_trajectories_with_progress(
        server: ServerProcess, project: str, api: httpx.Client) -> None:
    weather = [send_run(server.http, project, start=T0 + i) for i in range(3)]
    planner = send_run(server.http, project, agent="planner")
    rule = add_rule(api, name="steps", evaluator="efficiency", config={"max_steps": 10},
                    filter={"agent": "weather"})
    time.sleep(0.5)
    assert all(scores_of(api, t) == [] for t in weather)  # already final: not queued
    started = api.post(f"/rules/{rule['id']}/backfills", json={})
    assert started.status_code == 202, started.text
    job = started.json()
    assert (job["rule_id"], job["total"]) == (rule["id"], 3)

    def done() -> dict[str, Any] | None:
        now = api.get(f"/rules/{rule['id']}/backfills/{job['id']}").json()
        return now if now["status"] == "done" else None

    finished = wait_for(done, what="the backfill")
    assert (finished["done"], finished["total"]) == (3, 3)
    assert [len(scores_of(api, t)) for t in weather] == [1, 1, 1]
    assert scores_of(api, planner) == []
    listed = api.get(f"/rules/{rule['id']}/backfills").json()["items"]
    assert [b["id"] for b in listed] == [job["id"]]


# ------------------------------------------------------------------------------------ judges

class Judge(FakeJudge):
    """A judge that fails the first `unavailable` requests with 503, answers chatter instead of
    a verdict while `malformed` is set, and waits `delay` seconds per answer."""

    def __init__(self, unavailable: int = 0, delay: float = 0.0) -> None:
        self.unavailable = unavailable
        self.malformed = False
        super().__init__(self.answer, delay)

    def answer(self, body: dict[str, Any]) -> tuple[int, Any]:
        if len(self.times) <= self.unavailable:
            return 503, "overloaded"
        if self.malformed:
            return 200, "I'd say it went fine."
        return 200, {"score": 0.8, "passed": True, "reason": "ok"}

    def config(self) -> dict[str, Any]:
        return {"endpoint": self.url, "model": "judge-model"}


def test_an_unreachable_judge_is_retried_with_backoff_and_a_malformed_verdict_is_an_error(
        server: ServerProcess, project: str, api: httpx.Client) -> None:
    judge = Judge(unavailable=2)
    try:
        rule = add_rule(api, name="judge", evaluator="llm_judge", config=judge.config())
        trace_id = send_run(server.http, project)
        (score,) = wait_for(lambda: scores_of(api, trace_id), timeout=30,
                            what="the judge's score")
        assert (score["value"], score["rule_id"], score["error"]) == (0.8, rule["id"], None)
        # two 503s, then the answer: waits of at least 1 s, then at least 2 s. Only the
        # lower bounds: a busy machine makes any wait longer (the schedule itself is
        # backoff_seconds's, tests/test_rules_units.py)
        assert len(judge.times) == 3
        first, second = judge.times[1] - judge.times[0], judge.times[2] - judge.times[1]
        assert first >= 0.9 and second >= 1.9, (first, second)

        judge.malformed = True
        chatty = send_run(server.http, project)
        (bad,) = wait_for(lambda: scores_of(api, chatty), timeout=30, what="an error score")
        assert bad["value"] is None and bad["error"].startswith("malformed verdict"), bad
    finally:
        judge.close()


def test_a_rule_caps_its_judge_calls_per_minute(
        server: ServerProcess, project: str, api: httpx.Client) -> None:
    judge = Judge()
    try:
        rule = add_rule(api, name="judge", evaluator="llm_judge", config=judge.config(),
                        max_judge_calls_per_minute=2)
        traces = [send_run(server.http, project, start=T0 + i, wait=False) for i in range(4)]
        wait_for(lambda: sum(len(scores_of(api, t)) for t in traces) >= 2
                 if all(api.get(f"/trajectories/{t}").status_code == 200 for t in traces)
                 else None, timeout=30, what="two scores")
        time.sleep(2)
        assert sum(len(scores_of(api, t)) for t in traces) == 2
        assert len(judge.times) == 2
        assert api.get(f"/rules/{rule['id']}").json()["pending_runs"] == 2
        text = httpx.get(f"{server.http}/metrics").text
        assert 'trajhub_rule_runs_total{outcome="postponed"}' in text
        assert "trajhub_rule_queue_oldest_seconds" in text
    finally:
        judge.close()


# ------------------------------------------------------------------------- the durable queue

def _counts(url: str, project: str) -> list[tuple[str, int, int]]:
    async def query() -> list[tuple[str, int, int]]:
        conn = await asyncpg.connect(url)
        try:
            rows = await conn.fetch(
                "SELECT trace_id, rule_id, count(*) AS n FROM scores WHERE project = $1 "
                "GROUP BY trace_id, rule_id ORDER BY trace_id, rule_id", project)
            return [(r["trace_id"], r["rule_id"], r["n"]) for r in rows]
        finally:
            await conn.close()
    return list(run(query()))


def _pending(url: str, claimed: bool = False) -> int:
    """Queued runs (only those a worker had claimed, when `claimed`)."""
    return int(fetch_value(
        url, "SELECT count(*) FROM rule_runs WHERE claim IS NOT NULL OR NOT $1", claimed))


@contextmanager
def killed_at_the_end(url: str, data_dir: Path, project: str
                      ) -> Iterator[tuple[ServerProcess, httpx.Client]]:
    """A server on the database `url` and a REST client of `project` on it; on the way out the
    server is killed with SIGKILL, the crash the queued work must survive."""
    data_dir.mkdir()
    server = ServerProcess.start(url, data_dir, settle_seconds=0.3)
    try:
        with httpx.Client(base_url=server.http + "/api/v1", timeout=30,
                          headers={"trajhub-project": project}) as c:
            yield server, c
    finally:
        os.kill(server.process.pid, signal.SIGKILL)
        server.process.wait()


@pytest.mark.slow  # several servers
def test_pending_runs_run_exactly_once_after_kill_9(
        database: TestDatabase, tmp_path: Path) -> None:
    """kill -9 with runs queued, claimed and judged mid-way; after a restart on the same
    database every trajectory has exactly one score per rule."""
    judge = Judge(delay=0.5)
    project = "t-" + uuid.uuid4().hex[:12]
    (tmp_path / "two").mkdir()
    with separate_database(database) as url:
        with killed_at_the_end(url, tmp_path / "one", project) as (first, c):
            judged = add_rule(c, name="judge", evaluator="llm_judge",
                              config=judge.config())
            coded = add_rule(c, name="steps", evaluator="efficiency",
                             config={"max_steps": 10})
            traces = [send_run(first.http, project, start=T0 + i, wait=False)
                      for i in range(24)]
            # some judged, most not: 24 runs at 8 at once and 0.5 s each take 1.5 s. A
            # run stays claimed for its judge's 0.5 s, so one claimed now still is at the
            # kill, moments later (on a busy machine the rest may not be queued yet)
            wait_for(lambda: 0 < len([c for c in _counts(url, project)
                                      if c[1] == judged["id"]]) < 24
                     and _pending(url, claimed=True) > 0 and _pending(url) > 0,
                     timeout=60, interval=0.02, what="some judge scores, and runs claimed")
        # runs were left queued, some of them claimed (being judged) when the server died
        assert _pending(url) > 0 and _pending(url, claimed=True) > 0
        second = ServerProcess.start(url, tmp_path / "two", settle_seconds=0.3)
        try:
            wait_for(lambda: _pending(url) == 0 and len(_counts(url, project)) == 48,
                     timeout=60, what="every run to finish")
            time.sleep(1)
            counts = _counts(url, project)
            assert counts == sorted((t, r, 1) for t in traces
                                    for r in (judged["id"], coded["id"])), counts
        finally:
            second.stop()
            judge.close()


# -------------------------------------------------------------------------- client and CLI

def cli(server: ServerProcess, project: str, *argv: str) -> str:
    done = run_cli("rules", *argv, "--url", server.http, "--project", project,
                   keep_trajhub_env=True)
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_the_client_and_the_cli_cover_rules(server: ServerProcess, project: str) -> None:
    with TrajhubClient(server.http, project=project) as hub:
        rule = hub.add_rule("steps", "efficiency", config={"max_steps": 10},
                            filter={"agent": "weather"}, sample_rate=0.5)
        assert (rule.name, rule.filter, rule.sample_rate, rule.enabled) == (
            "steps", {"agent": "weather"}, 0.5, True)
        assert hub.enable_rule(rule.id, False).enabled is False
        assert [r.id for r in hub.list_rules()] == [rule.id]
        with pytest.raises(ApiError) as bad:
            hub.add_rule("x", "no_such_evaluator")
        assert bad.value.status == 400 and "no_such_evaluator" in str(bad.value)

    added = cli(server, project, "add", "cli-rule", "efficiency", "--config",
                '{"max_steps": 3}', "--filter", '{"tool": "get_weather"}', "--sample", "1")
    assert "cli-rule" in added and "created" in added
    listed = cli(server, project, "list")
    assert "cli-rule" in listed and "steps" in listed and "efficiency" in listed
    (cli_rule,) = [r for r in json.loads(cli(server, project, "list", "--json"))["rules"]
                   if r["name"] == "cli-rule"]
    assert (cli_rule["config"], cli_rule["filter"], cli_rule["enabled"]) == (
        {"max_steps": 3}, {"tool": "get_weather"}, True)
    assert "switched off" in cli(server, project, "disable", str(cli_rule["id"]))
    assert "switched on" in cli(server, project, "enable", str(cli_rule["id"]))
    assert "changed" in cli(server, project, "edit", str(cli_rule["id"]), "--sample", "0.25")
    send_run(server.http, project)
    out = cli(server, project, "backfill", str(cli_rule["id"]), "--wait")
    # the one run: in the sample of 0.25 or not, the backfill says how many it queued and ends
    assert "done:" in out
    assert "deleted rule" in cli(server, project, "delete", str(cli_rule["id"]))
    with TrajhubClient(server.http, project=project) as hub:
        assert [r.name for r in hub.list_rules()] == ["steps"]


@pytest.mark.slow  # several servers
def test_a_dataset_evaluation_resumes_after_kill_9_and_stores_each_item_once(
        database: TestDatabase, tmp_path: Path) -> None:
    """Dataset evaluations go through their durable queue too: kill -9 mid-way, restart on the
    same database, and the evaluation finishes with one result and one score per item."""
    judge = Judge(delay=0.4)
    project = "t-" + uuid.uuid4().hex[:12]
    items = 16
    (tmp_path / "two").mkdir()
    with separate_database(database) as url:
        with killed_at_the_end(url, tmp_path / "one", project) as (first, c):
            traces = [send_run(first.http, project, start=T0 + i, wait=False)
                      for i in range(items)]
            for t in traces:
                final_trajectory(c, first.http, project, t)
            assert c.post("/datasets", json={"name": "set"}).status_code == 201
            filled = c.post("/datasets/set/fill", json={"trace_ids": traces})
            assert filled.status_code == 200 and filled.json()["added"] == items, filled.text
            started = c.post("/evaluations", json={
                "dataset": "set", "evaluators": [
                    {"name": "llm_judge", "config": judge.config()}]})
            assert started.status_code == 202, started.text
            evaluation = started.json()["id"]
            # 16 items, 8 at once, 0.4 s each: kill once some are stored, not all
            wait_for(lambda: 0 < c.get(f"/evaluations/{evaluation}").json()[
                "done_items"] < items, timeout=30, interval=0.02, what="some items")
        second = ServerProcess.start(url, tmp_path / "two", settle_seconds=0.3)
        try:
            with httpx.Client(base_url=second.http + "/api/v1", timeout=30,
                              headers={"trajhub-project": project}) as c:
                done = wait_for(lambda: (lambda e: e if e["status"] != "running" else None)(
                    c.get(f"/evaluations/{evaluation}").json()), timeout=60,
                    what="the evaluation to finish")
                assert (done["status"], done["done_items"], done["item_count"]) == (
                    "done", items, items), done
                results = c.get(f"/evaluations/{evaluation}/results").json()["items"]
                assert sorted(r["trace_id"] for r in results) == sorted(traces)
                per_trace = [[s for s in scores_of(c, t) if s["evaluation_id"] == evaluation]
                             for t in traces]
                assert [len(s) for s in per_trace] == [1] * items
        finally:
            second.stop()
            judge.close()


def test_changing_rules_takes_an_admin_key_and_reading_them_a_read_key(
        secured: Secured) -> None:
    base = secured.server.http + "/api/v1"
    with httpx.Client(base_url=base, timeout=30) as c:
        made = c.post("/keys", headers=secured.headers, json={"scope": "read", "name": "r"})
        assert made.status_code == 201, made.text
        reader = {"authorization": f"Bearer {made.json()['key']}"}
        body = {"name": "scoped", "evaluator": "efficiency", "config": {"max_steps": 5}}
        refused = c.post("/rules", headers=reader, json=body)
        assert refused.status_code == 403 and "admin" in refused.text, refused.text
        assert c.get("/rules", headers=reader).status_code == 200
        assert c.post("/rules", json=body).status_code == 401  # no key at all
        created = c.post("/rules", headers=secured.headers, json=body)
        assert created.status_code == 201, created.text
        rule = created.json()["id"]
        assert c.patch(f"/rules/{rule}", headers=reader,
                       json={"enabled": False}).status_code == 403
        assert c.delete(f"/rules/{rule}", headers=reader).status_code == 403
        assert c.post(f"/rules/{rule}/backfills", headers=reader, json={}).status_code == 403
        assert c.get(f"/rules/{rule}", headers=reader).json()["enabled"] is True
        assert c.delete(f"/rules/{rule}", headers=secured.headers).status_code == 204


def test_a_sample_takes_the_same_trajectories_when_they_become_final_and_in_a_backfill(
        server: ServerProcess, project: str, api: httpx.Client) -> None:
    rule = add_rule(api, name="half", evaluator="efficiency", config={"max_steps": 10},
                    sample_rate=0.5)
    traces = [send_run(server.http, project, start=T0 + i, wait=False) for i in range(16)]
    for t in traces:
        with httpx.Client(timeout=30) as c:
            final_trajectory(c, server.http, project, t)
    wait_for(lambda: drained(api), what="the queue to drain")
    time.sleep(0.5)
    wait_for(lambda: drained(api), what="the queue to drain")
    sampled = {t for t in traces if scores_of(api, t)}
    # 16 draws at one half: all or none would be a broken sample
    assert 0 < len(sampled) < 16
    job = api.post(f"/rules/{rule['id']}/backfills", json={}).json()
    assert job["total"] == len(sampled)
    wait_for(lambda: api.get(f"/rules/{rule['id']}/backfills/{job['id']}").json()[
        "status"] == "done", what="the backfill")
    assert {t: len(scores_of(api, t)) for t in traces} == {
        t: 2 if t in sampled else 0 for t in traces}


@pytest.mark.slow  # several servers
def test_a_server_without_the_judges_settings_leaves_a_rules_runs_to_one_with_them(
        database: TestDatabase, tmp_path: Path) -> None:
    """Two servers share a database; only one has TRAJHUB_JUDGE_URL. A judge rule's runs end
    as scores from the server that can reach the judge, none as an error."""
    judge = Judge()
    project = "t-" + uuid.uuid4().hex[:12]
    for name in ("bare", "judged"):
        (tmp_path / name).mkdir()
    with separate_database(database) as url:
        bare = ServerProcess.start(url, tmp_path / "bare", settle_seconds=0.3)
        judged = ServerProcess.start(url, tmp_path / "judged", settle_seconds=0.3, extra_env={
            "TRAJHUB_JUDGE_URL": judge.url, "TRAJHUB_JUDGE_MODEL": "judge-model"})
        try:
            with httpx.Client(base_url=judged.http + "/api/v1", timeout=30,
                              headers={"trajhub-project": project}) as c:
                rule = add_rule(c, name="judge", evaluator="llm_judge")
                traces = [send_run(bare.http, project, start=T0 + i, wait=False)
                          for i in range(6)]
                wait_for(lambda: all(scores_of(c, t) for t in traces
                                     if c.get(f"/trajectories/{t}").status_code == 200)
                         and len(_counts(url, project)) == 6, timeout=60,
                         what="every run's score")
                scored = [s for t in traces for s in scores_of(c, t)]
                assert [(s["rule_id"], s["value"], s["error"]) for s in scored] == [
                    (rule["id"], 0.8, None)] * 6
                assert len(judge.times) == 6
        finally:
            bare.stop()
            judged.stop()
            judge.close()
