"""The real Eino captures (tests/fixtures/eino-real) and their check against ground truth.

`check_trajectory` takes a trajectory as the REST API gives it (`trajectory_to_dict`'s JSON), so
the unit test (captures through `derive`) and the live test (the Go program against a server)
check the same things, each against `<shape>/ground_truth.json`, which the Go program writes
from its script (tests/capture/eino/truth.go), never from trajhub's output.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from tests.normalize_support import parallel_shape

FIXTURES = Path(__file__).parent / "fixtures" / "eino-real"
MODULE = Path(__file__).parent / "capture" / "eino"
SHAPES = ("react_tools", "model_failure", "graph_fanout", "streaming", "supervisor", "adk_failure")
PATHS = ("cozeloop", "apmplus")
#: token details a path does not record: apmplus sends only the prompt, completion and total
#: counts (callbacks/apmplus apmplus.go OnEnd), so trajhub must report 0 there, not invent them
DETAIL_GAPS: dict[str, frozenset[str]] = {
    "cozeloop": frozenset(),
    "apmplus": frozenset({"cache_read_tokens", "reasoning_tokens"}),
}


def truth(shape: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((FIXTURES / shape / "ground_truth.json").read_text())
    return data


def capture_files(shape: str, path: str) -> list[Path]:
    return sorted((FIXTURES / shape / path).glob("*.bin"))


def cases() -> Iterator[tuple[str, str]]:
    for shape in SHAPES:
        for path in PATHS:
            yield shape, path



def _expected_steps(activation: dict[str, Any]) -> list[tuple[str, str]]:
    return parallel_shape([(s["type"], s.get("name", ""), s["parallel_group"])
                     for s in activation["steps"]])


def _actual_steps(agent: dict[str, Any], activation: dict[str, Any]) -> list[tuple[str, str]]:
    groups: dict[tuple[str, str], Any] = {}
    for s in activation["steps"]:
        groups[(s["type"], s.get("name", "") if s["type"] == "tool" else s["model"])] = \
            s["parallel_group"]
    steps = []
    for s in agent["steps"]:
        name = s["name"] if s["type"] == "tool" else ""
        key = (s["type"], s["name"])
        steps.append((s["type"], name, groups.get(key)))
    return parallel_shape(steps)


def _failed(step: dict[str, Any]) -> bool:
    return step["basic_info"].get("error") is not None


def check_trajectory(trajectory: dict[str, Any], shape: str, path: str) -> None:
    """Everything the ground truth of `shape` says, on a trajectory of a run traced by `path`."""
    want = truth(shape)
    gaps = DETAIL_GAPS[path]
    root_truth = want["root"]
    agents = trajectory["agent_steps"]
    root = trajectory["root_step"]
    activations = want["activations"]
    where = f"{shape}/{path}"

    # -- the agents: one agent step per activation, in order (after the team, if any)
    names = [a["name"] for a in agents]
    expected_names = [a["agent"] for a in activations]
    if root_truth["is_team"]:
        expected_names = [root_truth["name"], *expected_names]
    assert names == expected_names, where
    assert root["name"] == root_truth["name"], where
    own = agents[1:] if root_truth["is_team"] else agents
    if root_truth["is_team"]:
        team = agents[0]
        assert team["id"] == root["id"], where
        assert all(a["parent_id"] == team["id"] for a in own), where
        assert [(s["type"], s["name"]) for s in team["steps"]] == \
            [("agent", a["agent"]) for a in activations], where

    # -- each agent's own steps, its tool calls, its failed steps and its tokens
    for agent, activation in zip(own, activations, strict=True):
        label = f"{where} {activation['index']}:{activation['agent']}"
        assert _actual_steps(agent, activation) == _expected_steps(activation), label
        tools = {s["metadata"].get("tool_call_id"): s
                 for s in agent["steps"] if s["type"] == "tool"}
        want_tools = [s for s in activation["steps"] if s["type"] == "tool"]
        assert sorted(tools) == sorted(s["tool_call_id"] for s in want_tools), label
        for call in want_tools:
            step = tools[call["tool_call_id"]]
            assert step["name"] == call["name"], label
            assert json.loads(step["input"]) == json.loads(call["arguments"]), label
            if call["error"] is not None:
                assert _failed(step), (label, call["name"])
                assert step["basic_info"]["error"]["msg"] == call["error"]["message"], label
            else:
                assert not _failed(step), (label, call["name"])
                if call.get("output") is not None:
                    assert step["output"] == call["output"], label
            if call.get("handoff_to") is not None:
                assert step["metadata"].get("handoff_to") == call["handoff_to"], label
        failed = sorted((s["type"], s["name"] if s["type"] == "tool" else "")
                        for s in agent["steps"] if s["type"] in ("model", "tool") and _failed(s))
        want_failed = sorted((s["type"], s.get("name", "") if s["type"] == "tool" else "")
                             for s in activation["steps"] if s["error"] is not None)
        assert failed == want_failed, label
        models = [s for s in agent["steps"] if s["type"] == "model"]
        want_models = [s for s in activation["steps"] if s["type"] == "model"]
        for step, model in zip(_in_group_order(models, want_models), want_models, strict=True):
            info = step["model_info"]
            if model["error"] is not None:
                assert _failed(step) and model["error"]["message"] in \
                    step["basic_info"]["error"]["msg"], label
                continue
            assert (info["input_tokens"], info["output_tokens"]) == \
                (model["input_tokens"], model["output_tokens"]), label
            for detail, field in (("cache_read_tokens", "input_read_cached_tokens"),
                                  ("reasoning_tokens", "reasoning_tokens")):
                assert info[field] == (0 if detail in gaps else model[detail]), (label, detail)
            output = json.loads(step["output"])
            assert output.get("content", "") == model["content"], label
            assert [(c["id"], c["name"], c["arguments"]) for c in output.get("tool_calls", [])] \
                == [(c["id"], c["name"], json.loads(c["arguments"]))
                    for c in model.get("tool_calls") or []], label
        metrics = agent["metrics_info"]
        assert (metrics["input_tokens"], metrics["output_tokens"]) == \
            (activation["input_tokens"], activation["output_tokens"]), label

    # -- the run: token totals, failed steps and the root error
    metrics = root["metrics_info"]
    assert (metrics["input_tokens"], metrics["output_tokens"]) == \
        (root_truth["input_tokens"], root_truth["output_tokens"]), where
    every = [s for a in own for s in a["steps"] if s["type"] in ("model", "tool")]
    assert sum(s["type"] == "model" for s in every) == root_truth["model_calls"], where
    assert sum(s["type"] == "tool" for s in every) == root_truth["tool_calls"], where
    assert sum(_failed(s) for s in every) == root_truth["failed_steps"], where
    error = root["basic_info"].get("error")
    if root_truth["error"] is None:
        assert error is None, where
        assert [a["name"] for a in agents if a["basic_info"].get("error")] == [], where
    else:
        assert error is not None, where
        assert root_truth["error"]["message"] in error["msg"], where


def _in_group_order(models: list[dict[str, Any]],
                    want: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The model steps, those of one parallel group put in the script's order (by name: in a
    graph each model node is named after its node)."""
    if not any(m["parallel_group"] is not None for m in want):
        return models
    by_name = {m["name"]: m for m in models}
    return [by_name.get(w["model"], m) for m, w in zip(models, want, strict=False)]
