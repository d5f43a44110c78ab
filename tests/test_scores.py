"""Scores: added one at a time or in a batch, listed, deleted; checked (a value of
the wrong type, an unknown source, a step the trajectory lacks, a bad name: a 4xx naming it);
kept through re-derivation on the same step; filtering and sorting the trajectory list; a
dataset evaluation's verdicts appearing as scores on the trajectories they judged; and the
storage function that lists the scores of a set of trajectories.
"""

from __future__ import annotations

import asyncio
from typing import Any

import asyncpg
import httpx
import pytest

from tests.harness import ServerProcess, TestDatabase, final_trajectory, wait_for
from tests.otlp_builders import PB, agent_run_spans, new_span_id, new_trace_id, request
from trajhub.storage import scores as score_store

T0 = 1_700_000_000_000_000_000


def agent_run(server: ServerProcess, project: str, start: int = T0) -> tuple[str, dict[str, str]]:
    """Send one agent run (an agent, a model call, a tool call) and wait for its final
    trajectory; returns its trace id and its spans' ids by name."""
    tid, root, chat, tool = new_trace_id(), new_span_id(), new_span_id(), new_span_id()
    spans = agent_run_spans(tid, root, chat, tool, start)
    with httpx.Client() as c:
        r = c.post(f"{server.http}/v1/traces", content=request(spans).SerializeToString(),
                   headers={**PB, "trajhub-project": project})
        assert r.status_code == 200, r.text
        final_trajectory(c, server.http, project, tid.hex())
    return tid.hex(), {"agent": root.hex(), "chat": chat.hex(), "tool": tool.hex()}


@pytest.fixture
def api(server: ServerProcess, project: str) -> Any:
    with httpx.Client(base_url=server.http + "/api/v1", timeout=30,
                      headers={"trajhub-project": project}) as client:
        yield client


def test_scores_are_added_one_or_in_a_batch_listed_and_deleted(
        server: ServerProcess, project: str, api: httpx.Client) -> None:
    trace_id, steps = agent_run(server, project)
    url = f"/trajectories/{trace_id}/scores"
    one = api.post(url, json={"name": "correctness", "value": 0.75, "comment": "close"})
    assert one.status_code == 201, one.text
    (first,) = one.json()["items"]
    assert (first["trace_id"], first["step_id"], first["name"], first["value"],
            first["data_type"], first["comment"], first["source"], first["revision"],
            first["author"], first["error"]) == (
        trace_id, None, "correctness", 0.75, "number", "close", "api", 1, None, None)
    assert first["created_time"].endswith("Z")

    batch = api.post(url, json={"scores": [
        {"name": "tool_ok", "value": True, "step_id": steps["tool"], "source": "human",
         "author": "alice"},
        {"name": "verdict", "value": "pass", "data_type": "category"},
        {"name": "judge", "value": 1, "source": "evaluator", "evaluator": "llm_judge",
         "evaluator_config": {"model": "m"}},
    ]})
    assert batch.status_code == 201, batch.text
    added = batch.json()["items"]
    assert [(s["name"], s["value"], s["data_type"], s["step_id"], s["source"])
            for s in added] == [
        ("tool_ok", True, "boolean", steps["tool"], "human"),
        ("verdict", "pass", "category", None, "api"),
        ("judge", 1.0, "number", None, "evaluator")]
    assert added[0]["author"] == "alice"
    assert (added[2]["evaluator"], added[2]["evaluator_config"]) == ("llm_judge", {"model": "m"})

    listed = api.get(url)
    assert listed.status_code == 200
    assert [s["name"] for s in listed.json()["items"]] == [
        "correctness", "tool_ok", "verdict", "judge"]

    gone = api.delete(f"{url}/{added[1]['id']}")
    assert gone.status_code == 204
    assert [s["name"] for s in api.get(url).json()["items"]] == [
        "correctness", "tool_ok", "judge"]
    again = api.delete(f"{url}/{added[1]['id']}")
    assert again.status_code == 404 and str(added[1]["id"]) in again.json()["detail"]


def test_bad_scores_get_a_4xx_naming_the_problem(server: ServerProcess, project: str,
                                                 api: httpx.Client) -> None:
    trace_id, steps = agent_run(server, project)
    url = f"/trajectories/{trace_id}/scores"

    def refused(body: Any) -> tuple[int, str]:
        r = api.post(url, json=body)
        return r.status_code, str(r.json()["detail"])

    status, detail = refused({"name": "x", "value": "good", "data_type": "number"})
    assert status == 400 and "'good' is a category, not a number" in detail
    status, detail = refused({"name": "x", "value": 1, "source": "robot"})
    assert status == 422 and "source" in detail
    status, detail = refused({"name": "x", "value": 1, "step_id": "00000000000000aa"})
    assert status == 400 and "no step '00000000000000aa'" in detail
    status, detail = refused({"name": "", "value": 1})
    assert status == 422 and "name" in detail
    status, detail = refused({"name": "n" * 101, "value": 1})
    assert status == 422 and "name" in detail and "100" in detail
    status, detail = refused({"name": "a b", "value": 1})
    assert status == 422 and "name" in detail
    status, detail = refused({"name": "x", "value": {"a": 1}})
    assert status == 422 and "value" in detail
    status, detail = refused({"name": "x"})
    assert status == 400 and "no `value`" in detail
    status, detail = refused({"name": "x", "value": 1, "source": "evaluator"})
    assert status == 400 and "evaluator's name" in detail
    status, detail = refused({"name": "x", "value": 1, "evaluator": "e"})
    assert status == 400 and "`evaluator`" in detail
    status, detail = refused({"name": "x", "error": "timeout"})
    assert status == 400 and "`error`" in detail
    # a batch is stored all or none, and the message says which score was wrong
    status, detail = refused({"scores": [{"name": "ok", "value": 1},
                                         {"name": "x", "value": 2, "step_id": "zz"}]})
    assert status == 400 and detail.startswith("scores[1]: ") and "'zz'" in detail
    assert api.get(url).json()["items"] == []
    # no such trajectory
    r = api.post(f"/trajectories/{'ab' * 16}/scores", json={"name": "x", "value": 1})
    assert r.status_code == 404 and "ab" * 16 in r.json()["detail"]
    r = api.get(f"/trajectories/{'ab' * 16}/scores")
    assert r.status_code == 404
    assert steps  # the run had steps: the step id above was refused for not being one


def test_scores_stay_through_rederivation_on_the_same_step(
        server: ServerProcess, project: str, api: httpx.Client) -> None:
    trace_id, steps = agent_run(server, project)
    url = f"/trajectories/{trace_id}/scores"
    r = api.post(url, json={"scores": [{"name": "overall", "value": 0.5},
                                       {"name": "tool_ok", "value": False,
                                        "step_id": steps["tool"]}]})
    assert r.status_code == 201, r.text
    assert api.post("/trajectories/rederive", json={}).json()["queued"] == 1
    wait_for(lambda: api.get(f"/trajectories/{trace_id}").headers.get(
        "x-trajectory-revision") == "2", what="revision 2")
    listed = api.get(url).json()["items"]
    assert [(s["name"], s["value"], s["step_id"], s["revision"]) for s in listed] == [
        ("overall", 0.5, None, 1), ("tool_ok", False, steps["tool"], 1)]
    # the step it scores is still in the new revision, under the same id
    doc = api.get(f"/trajectories/{trace_id}").json()
    tool_steps = [s for a in doc["agent_steps"] for s in a["steps"] if s["type"] == "tool"]
    assert [s["id"] for s in tool_steps] == [steps["tool"]]
    # a score made now is on revision 2
    r = api.post(url, json={"name": "overall", "value": 0.9})
    assert r.json()["items"][0]["revision"] == 2


def test_the_trajectory_list_filters_and_sorts_by_a_score(
        server: ServerProcess, project: str, api: httpx.Client) -> None:
    runs = [agent_run(server, project, T0 + i * 1_000_000_000)[0] for i in range(4)]
    a, b, c, d = runs
    given = {a: [0.2, "pass", True], b: [0.9, "fail", False], c: [0.5, "pass", True]}
    for trace_id, (number, category, flag) in given.items():
        r = api.post(f"/trajectories/{trace_id}/scores", json={"scores": [
            {"name": "quality", "value": number}, {"name": "verdict", "value": category},
            {"name": "ok", "value": flag}]})
        assert r.status_code == 201, r.text
    # a newer score of a name replaces the older one in the list's eyes: a's quality is 0.7
    api.post(f"/trajectories/{a}/scores", json={"name": "quality", "value": 0.7})
    # d has only a step score of that name: not a whole-run score
    api.post(f"/trajectories/{d}/scores", json={"name": "quality", "value": 1.0,
                                                 "step_id": api.get(f"/trajectories/{d}")
                                                 .json()["agent_steps"][0]["steps"][0]["id"]})

    def ids(**params: Any) -> list[str]:
        r = api.get("/trajectories", params=params)
        assert r.status_code == 200, r.text
        return [t["trace_id"] for t in r.json()["items"]]

    assert set(ids(score="quality>=0.6")) == {a, b}
    assert set(ids(score="quality<=0.5")) == {c}
    assert set(ids(score="quality=0.9")) == {b}
    assert set(ids(score="quality!=0.9")) == {a, c}
    assert set(ids(score="verdict=pass")) == {a, c}
    assert set(ids(score="verdict!=pass")) == {b}
    assert set(ids(score="ok=true")) == {a, c}
    assert set(ids(score="ok=false")) == {b}
    assert ids(score="missing>=0") == []

    # sorted by the score, highest first: b 0.9, a 0.7, c 0.5 (d has none: not listed)
    assert ids(sort="score:quality") == [b, a, c]
    assert ids(sort="score:quality", order="asc") == [c, a, b]
    # keyset paging over the score: one per page, in order, then none
    seen, cursor = [], None
    for _ in range(4):
        params: dict[str, Any] = {"sort": "score:quality", "limit": 1}
        if cursor:
            params["cursor"] = cursor
        page = api.get("/trajectories", params=params).json()
        seen += [t["trace_id"] for t in page["items"]]
        cursor = page["next_cursor"]
        if not cursor:
            break
    assert seen == [b, a, c]
    counted = api.get("/trajectories", params={"sort": "score:quality", "count": "true"})
    assert counted.json()["total"] == 3
    # a boolean sorts as 1 or 0; a category has no order: none listed
    assert ids(sort="score:ok", order="asc")[0] == b
    assert ids(sort="score:verdict") == []
    # with another filter too
    assert ids(sort="score:quality", score="verdict=pass") == [a, c]

    for bad, words in (("quality", "<name><op><value>"), ("quality>=good", "not one"),
                       ("quality=", "no value")):
        r = api.get("/trajectories", params={"score": bad})
        assert r.status_code == 400 and words in r.json()["detail"], r.text
    r = api.get("/trajectories", params={"sort": "score:"})
    assert r.status_code == 400 and "sort" in r.json()["detail"]


def test_storage_lists_the_scores_of_a_set_of_trajectories_in_the_order_asked(
        server: ServerProcess, database: TestDatabase, project: str, api: httpx.Client) -> None:
    (a, steps), (b, _), (c, _) = (agent_run(server, project, T0 + i) for i in range(3))
    for trace_id, body in ((a, [{"name": "q", "value": 0.2}, {"name": "q", "value": 0.4},
                                {"name": "ok", "value": True},
                                {"name": "q", "value": 0.0, "step_id": steps["chat"]}]),
                           (b, [{"name": "q", "value": 0.8}, {"name": "ok", "value": False},
                                {"name": "v", "value": "pass"}]),
                           (c, [{"name": "q", "value": 0.1}])):
        assert api.post(f"/trajectories/{trace_id}/scores",
                        json={"scores": body}).status_code == 201

    async def read() -> list[score_store.ScoreRow]:
        conn = await asyncpg.connect(database.url)
        try:
            return await score_store.for_trajectories(conn, project, [b, a])
        finally:
            await conn.close()

    rows = asyncio.run(read())
    # b's first (the order asked for), then a's, each oldest first; c not asked for
    assert [(r.trace_id, r["name"]) for r in rows] == [
        (b, "q"), (b, "ok"), (b, "v"), (a, "q"), (a, "q"), (a, "ok"), (a, "q")]


def test_a_dataset_evaluation_stores_its_verdicts_as_scores_on_the_trajectories(
        server: ServerProcess, project: str, api: httpx.Client) -> None:
    right, _ = agent_run(server, project, T0)
    wrong, _ = agent_run(server, project, T0 + 1)
    assert api.post("/datasets", json={"name": "ev"}).status_code == 201
    # expected: the agent and its one tool (score 1.0); the second item also expects a tool
    # the run never called: agents match, tools do not (score (1 + 0) / 2 = 0.5)
    for trace_id, tools in ((right, ["get_weather"]), (wrong, ["get_weather", "other"])):
        doc = api.get(f"/trajectories/{trace_id}").json()
        r = api.post("/datasets/ev/items", json={
            "trajectory": doc, "source_trace_id": trace_id,
            "expectations": {"agents": ["weather"], "tools": {"weather": tools}}})
        assert r.status_code == 201, r.text
    r = api.post("/evaluations", json={"dataset": "ev", "evaluators": ["expected_agents_tools"]})
    assert r.status_code == 202, r.text
    evaluation = r.json()["id"]
    wait_for(lambda: api.get(f"/evaluations/{evaluation}").json()["status"] == "done",
             what="evaluation done")
    for trace_id, value in ((right, 1.0), (wrong, 0.5)):
        (score,) = api.get(f"/trajectories/{trace_id}/scores").json()["items"]
        assert (score["name"], score["value"], score["source"], score["evaluator"],
                score["evaluator_config"], score["evaluation_id"], score["revision"]) == (
            "expected_agents_tools", value, "evaluator", "expected_agents_tools", {},
            evaluation, 1)
        assert score["comment"]
    assert [t["trace_id"] for t in api.get("/trajectories", params={
        "score": "expected_agents_tools<=0.5"}).json()["items"]] == [wrong]


def test_the_client_and_the_cli_add_list_and_filter_scores(server: ServerProcess,
                                                           project: str) -> None:
    from tests.test_cli import one_line_error, trajhub
    from trajhub.client import ApiError, Score, TrajhubClient

    trace_id, steps = agent_run(server, project)
    with TrajhubClient(server.http, project=project) as hub:
        one = hub.add_score(trace_id, "helpful", 0.25, comment="terse")
        assert isinstance(one, Score)
        assert (one.name, one.value, one.data_type, one.comment, one.revision) == (
            "helpful", 0.25, "number", "terse", 1)
        many = hub.add_scores(trace_id, [{"name": "tool_ok", "value": True,
                                          "step_id": steps["tool"]}])
        assert [(s.name, s.value, s.step_id) for s in many] == [("tool_ok", True, steps["tool"])]
        assert [s.name for s in hub.list_scores(trace_id)] == ["helpful", "tool_ok"]
        # the list's `score` filter and `score:<name>` sort come from the declaration
        assert [t.trace_id for t in hub.list_trajectories(
            score="helpful<=0.5", sort="score:helpful").items] == [trace_id]
        with pytest.raises(ApiError) as bad:
            hub.add_score(trace_id, "helpful", "x", data_type="number")
        assert bad.value.status == 400 and "not a number" in bad.value.detail
        hub.delete_score(trace_id, many[0].id)
        assert [s.name for s in hub.list_scores(trace_id)] == ["helpful"]

    done = trajhub("scores", "add", trace_id, "verdict", "pass", "--comment", "fine",
                   "--step", steps["chat"], url=server.http, project=project)
    assert done.returncode == 0, done.stderr
    assert f"verdict = pass on step {steps['chat']} (revision 1)" in done.stdout
    done = trajhub("scores", "add", trace_id, "flag", "true", url=server.http, project=project)
    assert done.returncode == 0, done.stderr
    done = trajhub("scores", "list", trace_id, url=server.http, project=project)
    assert done.returncode == 0, done.stderr
    header, *rows = done.stdout.splitlines()
    assert header.split()[:4] == ["ID", "STEP", "NAME", "VALUE"]
    assert [r.split()[2:4] for r in rows] == [["helpful", "0.25"], ["verdict", "pass"],
                                             ["flag", "true"]]
    assert rows[1].split()[1] == steps["chat"] and rows[0].split()[1] == "-"
    done = trajhub("trajectories", "list", "--score", "flag=true", "--sort", "score:helpful",
                   url=server.http, project=project)
    assert done.returncode == 0, done.stderr
    assert [r.split()[0] for r in done.stdout.splitlines()[1:]] == [trace_id]
    assert "'zz'" in one_line_error(trajhub("scores", "add", trace_id, "x", "1", "--step", "zz",
                                            url=server.http, project=project))
    assert "not a number" in one_line_error(trajhub("scores", "add", trace_id, "x", "abc",
                                                    "--type", "number", url=server.http,
                                                    project=project))


def test_a_score_outside_its_config_is_a_400_naming_it(server: ServerProcess, project: str,
                                                      api: httpx.Client) -> None:
    from tests.test_cli import trajhub
    from trajhub.client import TrajhubClient

    trace_id, _ = agent_run(server, project)
    url = f"/trajectories/{trace_id}/scores"
    r = api.put("/score-configs/quality", json={"data_type": "number", "min": 0, "max": 1,
                                                "description": "how good"})
    assert r.status_code == 200, r.text
    assert r.json() == {"name": "quality", "data_type": "number", "min": 0.0, "max": 1.0,
                        "categories": None, "description": "how good"}
    assert api.put("/score-configs/verdict", json={
        "data_type": "category", "categories": ["pass", "fail"]}).status_code == 200

    def refused(body: Any) -> str:
        r = api.post(url, json=body)
        assert r.status_code == 400, r.text
        return str(r.json()["detail"])

    assert refused({"name": "quality", "value": 1.5}) == (
        "score 'quality' is outside its config: 1.5 is outside its config's range (0.0 to 1.0)")
    assert "takes a number, and 'good' is a category" in refused(
        {"name": "quality", "value": "good"})
    assert refused({"scores": [{"name": "verdict", "value": "pass"},
                               {"name": "verdict", "value": "maybe"}]}) == (
        "scores[1]: score 'verdict' is outside its config: 'maybe' is not one of its config's "
        "categories (pass, fail)")
    assert api.get(url).json()["items"] == []
    # inside the config, and a name without one, are taken
    r = api.post(url, json={"scores": [{"name": "quality", "value": 1},
                                       {"name": "verdict", "value": "fail"},
                                       {"name": "free", "value": "anything"}]})
    assert r.status_code == 201, r.text

    # configs that contradict themselves
    for body, words in (({"data_type": "boolean", "min": 0}, "min and max are for a number"),
                        ({"data_type": "number", "min": 2, "max": 1}, "above max"),
                        ({"data_type": "number", "categories": ["a"]}, "categories are for"),
                        ({"data_type": "category", "categories": ["a", "a"]}, "twice: a")):
        r = api.put("/score-configs/x", json=body)
        assert r.status_code == 400 and words in r.json()["detail"], r.text
    assert api.put("/score-configs/bad%20name", json={"data_type": "number"}).status_code == 400

    listed = api.get("/score-configs").json()["items"]
    assert [c["name"] for c in listed] == ["quality", "verdict"]
    with TrajhubClient(server.http, project=project) as hub:
        hub.set_score_config("flag", "boolean")
        assert [(c.name, c.data_type) for c in hub.list_score_configs()] == [
            ("flag", "boolean"), ("quality", "number"), ("verdict", "category")]
        hub.delete_score_config("flag")
    done = trajhub("scores", "configure", "speed", "number", "--max", "10", url=server.http,
                   project=project)
    assert done.returncode == 0, done.stderr
    done = trajhub("scores", "configs", url=server.http, project=project)
    assert done.returncode == 0, done.stderr
    header, *rows = done.stdout.splitlines()
    assert header.split()[:4] == ["NAME", "TYPE", "MIN", "MAX"]
    assert [r.split()[:2] for r in rows] == [["quality", "number"], ["speed", "number"],
                                             ["verdict", "category"]]
    assert rows[1].split()[2:4] == ["-", "10"]
    assert api.delete("/score-configs/quality").status_code == 204
    assert api.delete("/score-configs/quality").status_code == 404
    # without its config, the name takes any value again
    assert api.post(url, json={"name": "quality", "value": 7}).status_code == 201
