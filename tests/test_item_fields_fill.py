"""A set filled from trajectories holds the user's request, the final answer and, as the item's
metadata, the rest of the run's state; the metadata survives export/import, edits and shows in
the item draft; and llm_judge sees the question, the run's answer and the reference as three
different things.

The judge is a scripted OpenAI-compatible server that checks what it receives: it passes a run
only when its prompt carries exactly the expected question, answer and reference, each in its own
section. Expected values come from the scripted run (tests/fake_agent.py), not from trajhub.
"""

from __future__ import annotations

import csv
import io
import json
import re
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.captures import replay_run
from tests.fake_agent import USER_QUESTION, react_script
from tests.fake_judge import FakeJudge
from tests.harness import ServerProcess, TestDatabase, final_trajectory
from tests.test_datasets_support import wait_evaluation

QUESTION = USER_QUESTION
#: the scripted model's last turn: the final answer, with no tool calls
ANSWER = react_script()[-1]["content"]
REFERENCE = "Paris: sunny, 22C. 2+3 = 5. Division by zero is undefined."
RUN = "openinference/react.prebuilt.invoke"


def sections(prompt: str) -> dict[str, str]:
    """`<Title>\\nbody\\n</Title>` blocks of the judge prompt."""
    return {m[0]: m[1] for m in re.findall(r"<([^<>/\n]+)>\n(.*?)\n</\1>", prompt, re.S)}


def checking_verdict(body: dict[str, Any]) -> tuple[int, Any]:
    """Passes when the prompt's question, answer and reference are the expected ones and three
    different texts; fails naming what it got otherwise."""
    got = sections(body["messages"][-1]["content"])
    seen = (got.get("Input"), got.get("Agent's final answer"), got.get("Reference output"))
    ok = seen == (QUESTION, ANSWER, REFERENCE)
    return 200, {"score": 1.0 if ok else 0.0, "passed": ok, "reason": json.dumps(seen)}


@pytest.fixture(scope="module")
def judge() -> Iterator[FakeJudge]:
    judge = FakeJudge(checking_verdict)
    yield judge
    judge.close()


@pytest.fixture(scope="module")
def judged_server(database: TestDatabase, judge: FakeJudge,
                  tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    proc = ServerProcess.start(database.url, Path(tmp_path_factory.mktemp("item-fields")),
                               extra_env={"TRAJHUB_JUDGE_URL": judge.url,
                                          "TRAJHUB_JUDGE_MODEL": "judge-model"})
    yield proc
    proc.stop()


@pytest.fixture(scope="module")
def project() -> str:
    return "t-items-" + uuid.uuid4().hex[:8]


@pytest.fixture(scope="module")
def run_trace_id(judged_server: ServerProcess, project: str) -> str:
    """The captured run's trace (the trace id the instrumentation gave it), once final."""
    span_counts = replay_run(RUN, judged_server.http, judged_server.grpc, project)
    with httpx.Client() as client:
        for trace_id in span_counts:
            final_trajectory(client, judged_server.http, project, trace_id)
    return max(span_counts, key=lambda t: span_counts[t])


@pytest.fixture(scope="module")
def api(judged_server: ServerProcess, project: str, run_trace_id: str
        ) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=judged_server.http + "/api/v1",
                      headers={"trajhub-project": project}, timeout=30) as client:
        yield client


def _fill(api: httpx.Client, name: str, **options: Any) -> dict[str, Any]:
    assert api.post("/datasets", json={"name": name}).status_code == 201
    r = api.post(f"/datasets/{name}/fill",
                 json={"query": {"agent": "LangGraph"}, "limit": 1, **options})
    assert r.status_code == 200, r.text
    (item,) = api.get(f"/datasets/{name}/items").json()["items"]
    return item  # type: ignore[no-any-return]


def test_fill_takes_the_request_and_the_final_answer(api: httpx.Client) -> None:
    item = _fill(api, "chat")
    assert item["input"] == QUESTION
    assert item["reference_output"] == ANSWER


def test_fill_puts_the_rest_of_the_run_in_the_metadata(api: httpx.Client,
                                                        run_trace_id: str) -> None:
    # the scripted run asks one question and ends in a plain answer (react_script's last turn
    # calls no tool): besides the request and the answer, its state holds only where it came from
    item = _fill(api, "chat-metadata")
    assert item["metadata"] == {"trace_id": run_trace_id}
    assert item["source_trace_id"] == run_trace_id


def test_fill_pointers(api: httpx.Client, run_trace_id: str) -> None:
    # the run's input as stored is its message list: the pointer picks the first message's text
    item = _fill(api, "pointed", input_pointer="/0/content", output_pointer="/role")
    assert (item["input"], item["reference_output"]) == (QUESTION, "assistant")
    # what the pointers did not pick stays with the item: the whole run input and output
    assert item["metadata"] == {
        "trace_id": run_trace_id,
        "run_input": [{"role": "user", "content": QUESTION}],
        "run_output": {"role": "assistant", "content": ANSWER},
    }
    r = api.post("/datasets/pointed/fill", json={"trace_ids": [], "input_pointer": "0/content"})
    assert r.status_code == 422 and "JSON pointer" in r.text


def test_judge_sees_question_answer_and_reference_apart(
        api: httpx.Client, judged_server: ServerProcess, judge: FakeJudge) -> None:
    item = _fill(api, "judged")
    # a human curates the reference: it is no longer the run's own answer
    r = api.patch(f"/datasets/judged/items/{item['id']}", json={"reference_output": REFERENCE})
    assert r.status_code == 200, r.text
    judge.requests.clear()
    r = api.post("/evaluations", json={"dataset": "judged", "evaluators": [{"name": "llm_judge"}]})
    assert r.status_code == 202, r.text
    run = wait_evaluation(api, judged_server.http, api.headers["trajhub-project"], r.json()["id"])
    (result,) = api.get(f"/evaluations/{run['id']}/results").json()["items"]
    assert result["passed"] is True, result["reason"]
    ((_, body),) = judge.requests
    got = sections(body["messages"][-1]["content"])
    assert got["Input"] == QUESTION
    assert got["Agent's final answer"] == ANSWER
    assert got["Reference output"] == REFERENCE


def test_item_metadata_round_trips_is_editable_and_shows_in_the_draft(
        api: httpx.Client, run_trace_id: str) -> None:
    item = _fill(api, "kept", input_pointer="/0/content")
    expected = {"trace_id": run_trace_id, "run_input": [{"role": "user", "content": QUESTION}]}
    assert item["metadata"] == expected

    # the "add to dataset" preview shows the metadata a fill stores
    draft = api.get(f"/trajectories/{run_trace_id}/item-draft")
    assert draft.status_code == 200, draft.text
    default = _fill(api, "kept-default")
    assert draft.json()["metadata"] == default["metadata"] == {"trace_id": run_trace_id}
    assert (draft.json()["input"], draft.json()["reference_output"]) == (QUESTION, ANSWER)

    # JSONL export, then import into a new set: the same metadata
    exported = api.get("/datasets/kept/export", params={"format": "jsonl"})
    assert exported.status_code == 200
    (line,) = exported.content.splitlines()
    assert json.loads(line)["metadata"] == expected
    r = api.post("/datasets/kept-copy/import", params={"create": "true"}, content=exported.content,
                 headers={"content-type": "application/x-ndjson"})
    assert r.json() == {"added": 1, "skipped_duplicates": 0}, r.text
    (copy,) = api.get("/datasets/kept-copy/items").json()["items"]
    assert (copy["input"], copy["reference_output"], copy["metadata"]) == (
        QUESTION, ANSWER, expected)

    # CSV: the metadata as JSON in its own column
    csv_export = api.get("/datasets/kept/export", params={"format": "csv"})
    (row,) = csv.DictReader(io.StringIO(csv_export.text))
    assert json.loads(row["metadata"]) == expected

    # a patch replaces the metadata, leaves the rest alone; null empties it
    url = f"/datasets/kept/items/{item['id']}"
    curated = {**expected, "curated_by": "qa"}
    r = api.patch(url, json={"metadata": curated})
    assert r.status_code == 200, r.text
    got = api.get(url).json()
    assert got["metadata"] == curated
    assert (got["input"], got["reference_output"]) == (QUESTION, ANSWER)
    assert api.patch(url, json={"metadata": None}).json()["metadata"] == {}
    bad = api.patch(url, json={"metadata": ["not", "an", "object"]})
    assert bad.status_code == 422

    # an item added by hand carries the metadata it is given; a bad import line is named
    manual = api.post("/datasets/kept/items", json={"input": "hi", "metadata": {"from": "qa"}})
    assert manual.status_code == 201 and manual.json()["metadata"] == {"from": "qa"}
    r = api.post("/datasets/kept/import", content=b'{"input": "x", "metadata": [1]}\n',
                 headers={"content-type": "application/x-ndjson"})
    assert r.status_code == 422 and "line 1: metadata" in r.json()["detail"]
