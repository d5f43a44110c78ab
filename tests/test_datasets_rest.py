"""Datasets over REST, end to end: real-client captures ingested into a real server, sets
filled from their final trajectories, edited, exported and imported.

Expected values come from tests/fixtures/README.md (ground truth of the captured runs)."""

from __future__ import annotations

import csv
import io
import json
import uuid
from typing import Any

import httpx

from tests.harness import ServerProcess
from tests.test_datasets_support import (
    ALL_CAPTURES,
    LANGGRAPH_MODEL_ERROR,
    LANGGRAPH_REACT,
    Ingested,
    project_fixtures,
)

ingested, api = project_fixtures()

#: fixtures/README.md, scenario `react`: the three tool calls and their arguments
REACT_TOOL_ARGS = {"get_weather": {"city": "Paris"}, "add": {"a": 2, "b": 3},
                   "divide": {"a": 1, "b": 0}}
REACT_QUESTION = "What's the weather in Paris, what is 2+3, and what is 1/0?"
JSONL = {"content-type": "application/x-ndjson"}


def same_args(actual: dict[str, Any]) -> bool:
    """The tool calls of the react scenario. OpenInference records a single-string-argument
    tool's input as the bare string (LangChain's `input_str`), so get_weather's may be "Paris"."""
    if set(actual) != set(REACT_TOOL_ARGS):
        return False
    return all(actual[name] == args or (name == "get_weather" and actual[name] == "Paris")
               for name, args in REACT_TOOL_ARGS.items())


def new_set(api: httpx.Client) -> str:
    name = "set-" + uuid.uuid4().hex[:8]
    r = api.post("/datasets", json={"name": name, "description": "react runs"})
    assert r.status_code == 201, r.text
    return name


def all_items(api: httpx.Client, name: str, **params: Any) -> list[dict[str, Any]]:
    r = api.get(f"/datasets/{name}/items", params={"limit": 1000, **params})
    assert r.status_code == 200, r.text
    items: list[dict[str, Any]] = r.json()["items"]
    return items


def fill(api: httpx.Client, name: str, **body: Any) -> dict[str, Any]:
    r = api.post(f"/datasets/{name}/fill", json=body)
    assert r.status_code == 200, r.text
    out: dict[str, Any] = r.json()
    return out


def test_fill_by_query_prefills_expectations_and_skips_duplicates(
        api: httpx.Client, ingested: Ingested) -> None:
    name = new_set(api)
    # "final trajectories of agent LangGraph without failed model steps": the three react runs
    # of the prebuilt graph; not its model_error run, not the manual graph's run
    query = {"agent": "LangGraph", "failed_model_steps": False, "status": "final"}
    outcome = fill(api, name, query=query)
    assert outcome["added"] == 3
    assert outcome["skipped_duplicates"] == 0
    items = all_items(api, name, include_trajectory=True)
    assert {i["source_trace_id"] for i in items} == ingested.trace_ids(LANGGRAPH_REACT)
    for item in items:
        assert REACT_QUESTION in json.dumps(item["input"])
        exp = item["expectations"]
        assert exp["agents"] == ["LangGraph"]
        assert set(exp["tools"]["LangGraph"]) == set(REACT_TOOL_ARGS)
        assert sorted(exp["tool_order"]) == sorted(REACT_TOOL_ARGS)
        assert exp["tool_order"][-1] == "divide"  # step 5 follows the parallel steps 2 and 3
        tool_steps = [s for s in exp["trajectory"] if s["type"] == "tool"]
        assert same_args({s["name"]: s["args"] for s in tool_steps})
        assert item["trajectory"]["id"] == item["source_trace_id"]

    again = fill(api, name, query=query)
    assert again["added"] == 0
    assert again["skipped_duplicates"] == 3
    assert api.get(f"/datasets/{name}").json()["item_count"] == 3

    # without the failed-steps condition the model_error run joins; the rest are duplicates
    wider = fill(api, name, query={"agent": "LangGraph"})
    assert wider["added"] == 1 and wider["skipped_duplicates"] == 3
    assert {i["source_trace_id"] for i in all_items(api, name)} == ingested.trace_ids(
        LANGGRAPH_REACT + LANGGRAPH_MODEL_ERROR)


def test_snapshot_keeps_the_trajectory_bytes(api: httpx.Client, server: ServerProcess,
                                             ingested: Ingested) -> None:
    name = new_set(api)
    (trace_id,) = ingested.traces[LANGGRAPH_REACT[0]]
    assert fill(api, name, trace_ids=[trace_id])["added"] == 1
    (item,) = all_items(api, name)
    served = httpx.get(f"{server.http}/api/v1/trajectories/{trace_id}",
                       params={"project": ingested.project})
    raw = api.get(f"/datasets/{name}/items/{item['id']}").content
    assert served.content in raw


def test_fill_limit_sample_rate_and_ids(api: httpx.Client, ingested: Ingested) -> None:
    everything = ingested.trace_ids(ALL_CAPTURES)
    name = new_set(api)
    first = fill(api, name, query={}, limit=2)
    assert first["added"] == 2
    rest = fill(api, name, query={}, limit=100)
    assert rest["added"] == len(everything) - 2 and rest["skipped_duplicates"] == 2

    sampled = new_set(api)
    half = fill(api, sampled, query={}, sample_rate=0.5)
    assert half["added"] + half["sampled_out"] == len(everything)
    # sampling hashes the trace id: a re-fill picks the same traces, so adds nothing
    again = fill(api, sampled, query={}, sample_rate=0.5)
    assert again["added"] == 0
    assert again["sampled_out"] == half["sampled_out"]
    assert again["skipped_duplicates"] == half["added"]

    by_id = new_set(api)
    known = sorted(everything)[0]
    unknown = "ab" * 16
    out = fill(api, by_id, trace_ids=[known.upper(), unknown])
    assert out["added"] == 1 and out["not_found"] == [unknown]


def test_bad_fill_requests(api: httpx.Client) -> None:
    name = new_set(api)
    both = api.post(f"/datasets/{name}/fill", json={"trace_ids": [], "query": {}})
    assert both.status_code == 422 and "exactly one" in both.text
    unknown_filter = api.post(f"/datasets/{name}/fill", json={"query": {"agnet": "x"}})
    assert unknown_filter.status_code == 422 and "agnet" in unknown_filter.text
    bad_rate = api.post(f"/datasets/{name}/fill", json={"query": {}, "sample_rate": 1.5})
    assert bad_rate.status_code == 422 and "sample_rate" in bad_rate.text
    # a body that breaks its schema (here the time pattern) is a 422 naming the field, as
    # every other body error
    bad_time = api.post(f"/datasets/{name}/fill", json={"query": {"start": "yesterday"}})
    assert bad_time.status_code == 422 and "start" in bad_time.text
    missing = api.post("/datasets/nope/fill", json={"query": {}})
    assert missing.status_code == 404


def test_crud_and_item_edits(api: httpx.Client, ingested: Ingested) -> None:
    name = new_set(api)
    assert api.post("/datasets", json={"name": name}).status_code == 409
    assert name in [d["name"] for d in api.get("/datasets").json()["items"]]

    renamed = name + "-renamed"
    r = api.patch(f"/datasets/{name}", json={"name": renamed})
    assert r.status_code == 200 and r.json()["name"] == renamed
    assert api.get(f"/datasets/{name}").status_code == 404
    other = new_set(api)
    assert api.patch(f"/datasets/{other}", json={"name": renamed}).status_code == 409

    fill(api, renamed, trace_ids=sorted(ingested.trace_ids(LANGGRAPH_REACT))[:1])
    (item,) = all_items(api, renamed)
    url = f"/datasets/{renamed}/items/{item['id']}"
    edited = {"agents": ["LangGraph"], "tools": {"LangGraph": ["get_weather"]},
              "tool_order": ["get_weather"]}
    r = api.patch(url, json={"expectations": edited, "tags": ["golden"]})
    assert r.status_code == 200, r.text
    got = api.get(url).json()
    assert got["expectations"] == edited and got["tags"] == ["golden"]
    assert got["reference_output"] == item["reference_output"]  # untouched

    bad = api.patch(url, json={"expectations": {"tools": {"LangGraph": "get_weather"}}})
    assert bad.status_code == 422 and "tools.LangGraph" in bad.text

    manual = api.post(f"/datasets/{renamed}/items", json={
        "input": "hi", "reference_output": "hello", "tags": ["manual"],
        "expectations": {"agents": ["greeter"]}})
    assert manual.status_code == 201, manual.text
    assert manual.json()["metadata"] == {}
    assert len(all_items(api, renamed)) == 2
    assert api.delete(f"/datasets/{renamed}/items/{manual.json()['id']}").status_code == 204
    assert api.get(f"/datasets/{renamed}/items/{manual.json()['id']}").status_code == 404

    assert api.delete(f"/datasets/{renamed}").status_code == 204
    assert api.get(f"/datasets/{renamed}/items").status_code == 404
    assert api.delete(f"/datasets/{renamed}").status_code == 404


def test_jsonl_export_round_trips_through_import(api: httpx.Client) -> None:
    name = new_set(api)
    fill(api, name, query={"agent": "LangGraph", "failed_model_steps": False})
    first = all_items(api, name)[0]
    assert first["metadata"]["trace_id"] == first["source_trace_id"]
    api.patch(f"/datasets/{name}/items/{first['id']}",
              json={"tags": ["edited"], "metadata": {**first["metadata"], "reviewed": True}})

    exported = api.get(f"/datasets/{name}/export", params={"format": "jsonl"})
    assert exported.status_code == 200
    assert exported.headers["x-item-count"] == "3"
    lines = exported.content.splitlines()
    assert len(lines) == 3

    copy = "copy-" + uuid.uuid4().hex[:8]
    r = api.post(f"/datasets/{copy}/import", params={"create": "true"},
                 content=exported.content, headers={"content-type": "application/x-ndjson"})
    assert r.status_code == 200, r.text
    assert r.json() == {"added": 3, "skipped_duplicates": 0}

    def comparable(items: list[dict[str, Any]]) -> list[dict[str, Any]]:
        keep = ("input", "reference_output", "expectations", "metadata", "source_trace_id",
                "tags", "trajectory")
        return [{k: i[k] for k in keep} for i in items]

    assert comparable(all_items(api, copy, include_trajectory=True)) == comparable(
        all_items(api, name, include_trajectory=True))
    assert {i["source_trace_id"]: i["metadata"] for i in all_items(api, copy)}[
        first["source_trace_id"]] == {**first["metadata"], "reviewed": True}

    again = api.post(f"/datasets/{copy}/import", content=exported.content, headers=JSONL)
    assert again.json() == {"added": 0, "skipped_duplicates": 3}


def test_import_rejects_a_bad_line_naming_it(api: httpx.Client) -> None:
    name = new_set(api)
    body = (b'{"input": "a", "expectations": {"agents": ["x"]}}\n'
            b'{"input": "b", "expectations": {"agents": "x"}}\n')
    r = api.post(f"/datasets/{name}/import", content=body, headers=JSONL)
    assert r.status_code == 422
    assert "line 2" in r.json()["detail"] and "agents" in r.json()["detail"]
    assert all_items(api, name) == []  # all or nothing
    assert api.post("/datasets/absent/import", content=b"", headers=JSONL).status_code == 404


def test_csv_and_agentevals_exports_carry_the_tool_calls(api: httpx.Client) -> None:
    name = new_set(api)
    fill(api, name, query={"agent": "LangGraph", "failed_model_steps": False})

    r = api.get(f"/datasets/{name}/export", params={"format": "csv"})
    assert r.status_code == 200 and r.headers["content-type"].startswith("text/csv")
    rows = list(csv.DictReader(io.StringIO(r.text)))
    assert len(rows) == 3
    for row in rows:
        calls = json.loads(row["tool_calls"])
        assert same_args({c["name"]: c["arguments"] for c in calls})
        assert json.loads(row["expected_agents"]) == ["LangGraph"]
        assert REACT_QUESTION in row["input"]
        assert json.loads(row["metadata"])["trace_id"] == row["source_trace_id"]

    r = api.get(f"/datasets/{name}/export", params={"format": "agentevals"})
    assert r.status_code == 200
    lines = [json.loads(line) for line in r.text.splitlines()]
    assert len(lines) == 3
    for line in lines:
        messages = line["reference_outputs"]
        assert messages[0]["role"] == "user" and REACT_QUESTION in messages[0]["content"]
        calls = [c for m in messages if m["role"] == "assistant" for c in m.get("tool_calls", [])]
        args = {c["function"]["name"]: json.loads(c["function"]["arguments"]) for c in calls}
        # agentevals wraps a non-object input as {"input": ...}
        if args.get("get_weather") == {"input": "Paris"}:
            args["get_weather"] = "Paris"
        assert same_args(args)
        results = {m["tool_call_id"] for m in messages if m["role"] == "tool"}
        assert results == {c["id"] for c in calls}
        assert messages[-1]["role"] == "assistant" and "tool_calls" not in messages[-1]

    r = api.get(f"/datasets/{name}/export", params={"format": "xml"})
    assert r.status_code == 400 and "'format'" in r.json()["detail"]
