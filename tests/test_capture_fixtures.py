"""The multi-agent captures (tests/capture/) are complete, and each shape's ground truth
is well-formed and written from the current script.

That each capture replays into a running server with the response its protocol expects and
every span stored byte for byte is tests/test_replay_captures.py (every capture file); whether
trajhub derives the right trajectories from them is tested against the ground truth elsewhere;
this only checks the fixtures themselves."""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path
from typing import Any

import pytest

from tests.capture import ground_truth, script
from tests.captures import CAPTURES, EVENT_CLIENTS, capture_runs
from tests.normalize_support import load_file

GROUND_TRUTH = CAPTURES / "ground_truth"
CLIENTS = ("cozeloop_python", "cozeloop_js", "openinference", "traceloop", "langsmith",
           "otel_genai", "openinference_genai", "openinference_js", "traceloop_js")
MODES = ("stream", "invoke")
#: client → shape → why that shape cannot be captured under it (see tests/capture/README.md)
IMPOSSIBLE: dict[str, dict[str, str]] = {}
#: client → shape → why it is not captured yet (tests/capture/README.md, "Shapes not captured")
NOT_YET: dict[str, dict[str, str]] = {
    client: dict.fromkeys(script.PYTHON_ONLY, "no JS twin of this shape yet")
    for client in ("cozeloop_js", "openinference_js", "traceloop_js")}
RUNS = {f"{client}/{shape}.{spec['graph']}.{mode}": (client, shape)
        for client in CLIENTS for shape, spec in script.SHAPES.items() for mode in MODES
        if shape not in IMPOSSIBLE.get(client, {}) and shape not in NOT_YET.get(client, {})}


def test_every_shape_is_captured_under_every_client_in_both_modes() -> None:
    captured = capture_runs()
    missing = [run for run in RUNS if run not in captured]
    assert not missing
    for run in RUNS:
        assert all(c.protocol == "http" for c in captured[run]), run


EVENT_RUNS = {f"{client}/{shape}.{spec['graph']}.{mode}": (client, shape, mode)
              for client in EVENT_CLIENTS for shape, spec in script.SHAPES.items()
              for mode in MODES}


def test_every_shape_is_captured_with_its_content_as_events_in_both_content_modes() -> None:
    """`otel_genai` in EVENT_ONLY and SPAN_AND_EVENT: every shape in both modes, each run over
    one transport with its trace and its log exports; each content mode over both transports,
    and at least two shapes over both (tests/capture/README.md, "Content as log events")."""
    captured = capture_runs()
    assert not [run for run in EVENT_RUNS if run not in captured]
    transports: dict[tuple[str, str], set[str]] = defaultdict(set)
    for run, (client, shape, _) in EVENT_RUNS.items():
        requests = captured[run]
        assert len({c.protocol for c in requests}) == 1, run
        assert {c.signal for c in requests} == {"traces", "logs"}, run
        transports[client, shape].add(requests[0].protocol)
        # each log record belongs to a span the run sent
        spans = {(s.trace_id, s.span_id) for c in requests if c.signal == "traces"
                 for s in load_file(c.path)}
        records = [r for c in requests for r in c.log_records()]
        assert records and all(r[:2] in spans for r in records), run
    for client in EVENT_CLIENTS:
        per_shape = [transports[client, shape] for shape in script.SHAPES]
        assert set().union(*per_shape) == {"http", "grpc"}, client
        assert sum(len(t) == 2 for t in per_shape) >= 2, client


# ---------------------------------------------------------------- ground truth
def _load(shape: str) -> dict[str, Any]:
    return json.loads((GROUND_TRUTH / f"{shape}.json").read_text())


def test_ground_truth_exists_for_every_shape_and_matches_the_script() -> None:
    assert sorted(p.stem for p in GROUND_TRUTH.glob("*.json")) == sorted(script.SHAPES)
    for shape in script.SHAPES:
        # rewritten from the script with `python -m tests.capture.ground_truth`
        assert _load(shape) == ground_truth.build(shape), shape


def _model_turns(shape: str) -> dict[str, list[dict[str, Any]]]:
    return script.SHAPES[shape]["models"]


@pytest.mark.parametrize("shape", sorted(script.SHAPES))
def test_ground_truth_is_well_formed(shape: str) -> None:
    doc = _load(shape)
    assert {"format_version", "shape", "graph", "description", "user_request", "final_answer",
            "root", "activations", "notes"} <= doc.keys()
    assert doc["shape"] == shape and doc["user_request"] == script.SHAPES[shape]["question"]
    acts = doc["activations"]
    assert acts and acts[0]["parent"] is None and acts[0]["agent"] == doc["root"]["name"]
    assert [a["index"] for a in acts] == list(range(len(acts)))
    # every model turn of the script is a model step of exactly one activation of its agent
    played: dict[str, list[int]] = defaultdict(list)
    for act in acts:
        assert act["parent"] is None or 0 <= act["parent"] < act["index"]
        models = [s for s in act["steps"] if s["type"] == "model"]
        assert act["input_tokens"] == sum(s["input_tokens"] for s in models)
        assert act["output_tokens"] == sum(s["output_tokens"] for s in models)
        calls: dict[str, dict[str, Any]] = {}
        for step in act["steps"]:
            assert step["type"] in ("model", "tool", "agent")
            if step["type"] == "model":
                played[act["agent"]].append(step["input_tokens"])
                calls.update({c["id"]: c for c in step["tool_calls"]})
            elif step["type"] == "tool":
                call = calls.pop(step["tool_call_id"])  # called by an earlier model step
                assert (call["name"], call["arguments"]) == (step["name"], step["arguments"])
                assert (step["output"] is None) == (step["error"] is not None)
                assert step["handoff_to"] in (None, *_model_turns(shape), "supervisor")
            else:
                child = acts[step["activation"]]
                assert child["agent"] == step["agent"] and child["parent"] == act["index"]
        assert not calls, "a tool call without a tool step"
    for agent, turns in _model_turns(shape).items():
        assert played[agent] == [t["usage"]["input"] for t in turns], agent
    # every activation but the root hangs under an agent step or a tool step of its parent
    for act in acts[1:]:
        parent = acts[act["parent"]]
        links = [s for s in parent["steps"] if s.get("activation") == act["index"]
                 or s.get("calls_agent") == act["index"]]
        assert len(links) == 1, act
    root = doc["root"]
    assert root["input_tokens"] == sum(t["usage"]["input"] for turns in
                                       _model_turns(shape).values() for t in turns)
    assert root["output_tokens"] == sum(t["usage"]["output"] for turns in
                                        _model_turns(shape).values() for t in turns)
    assert (root["error"] is None) == (doc["final_answer"] is not None)


def test_ground_truth_readme_describes_every_field() -> None:
    readme = (GROUND_TRUTH / "README.md").read_text()
    fields: set[str] = set()
    for shape in script.SHAPES:
        doc = _load(shape)
        fields |= set(doc) | set(doc["root"])
        for act in doc["activations"]:
            fields |= set(act)
            for step in act["steps"]:
                fields |= set(step)
    assert not [f for f in fields if f"`{f}`" not in readme]


def test_capture_readme_documents_the_regeneration_command() -> None:
    readme = (Path(__file__).parent / "capture" / "README.md").read_text()
    assert "python -m tests.capture.capture_all" in readme
