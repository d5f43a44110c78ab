"""Real Eino runs, replayed through the normalizers.

Each capture under tests/fixtures/eino-real/<shape>/<path>/ holds the exact requests one run of the
Go program in tests/capture/eino/ sent through one eino-ext tracing callback: `cozeloop`
(callbacks/cozeloop through cozeloop-go, native ingest JSON) and `apmplus` (callbacks/apmplus,
OTLP/gRPC). Every capture must give one trajectory that agrees with the shape's ground truth (its
agents, each agent's model and tool steps, the failed steps, the token totals and the root
error: tests/eino_real_support.py), and both paths of a shape the same skeleton.
tests/test_eino_real_live.py runs the same program against a live server.
"""

from __future__ import annotations

import json

import pytest

from tests.eino_real_support import (
    FIXTURES,
    PATHS,
    SHAPES,
    capture_files,
    cases,
    check_trajectory,
    truth,
)
from tests.normalize_support import by_trace, load_files
from trajhub.normalizers import derive
from trajhub.normalizers.apmplus import APMPLUS
from trajhub.normalizers.cozeloop import NATIVE
from trajhub.normalizers.model import Span
from trajhub.normalizers.reading import StepKind
from trajhub.normalizers.trajectory import trajectory_to_dict

CONVENTIONS = {"cozeloop": NATIVE, "apmplus": APMPLUS}


def spans(shape: str, path: str) -> list[Span]:
    files = capture_files(shape, path)
    assert files, f"no capture for {shape}/{path}"
    return load_files(files)


@pytest.mark.parametrize(("shape", "path"), list(cases()))
def test_capture_is_one_trace_and_matches_ground_truth(shape: str, path: str) -> None:
    captured = spans(shape, path)
    assert len(by_trace(captured)) == 1  # every shape is one run, one trace
    derivation = derive(captured)
    assert derivation.warnings == []
    assert derivation.summary.framework == "eino"
    check_trajectory(json.loads(json.dumps(trajectory_to_dict(derivation.trajectory))),
                     shape, path)


@pytest.mark.parametrize(("shape", "path"), list(cases()))
def test_every_span_is_read_by_its_convention(shape: str, path: str) -> None:
    from tests.normalize_support import View

    captured = spans(shape, path)
    view = View(captured)
    convention = CONVENTIONS[path]
    for span in captured:
        assert convention.detect(span), span.name
        reading = convention.read(span, view)
        assert reading.framework == "eino"
        assert reading.warnings == ()
    models = [convention.read(s, view) for s in captured]
    models = [r for r in models if r.kind is StepKind.MODEL]
    assert {r.metadata.get("model_name") for r in models} == {"scripted-chat"}
    assert {r.metadata.get("model_provider") for r in models} == {"Scripted"}


@pytest.mark.parametrize("shape", SHAPES)
def test_both_paths_give_the_same_skeleton(shape: str) -> None:
    def skeleton(path: str) -> list[tuple[str, list[tuple[str, str, bool]]]]:
        trajectory = derive(spans(shape, path)).trajectory
        return [(a.name, sorted((s.type, s.name, s.basic_info.error is not None)
                                for s in a.steps)) for a in trajectory.agent_steps]

    assert skeleton("cozeloop") == skeleton("apmplus")


def test_streaming_models_are_marked_streamed_with_a_first_token_latency() -> None:
    for path in PATHS:
        trajectory = derive(spans("streaming", path)).trajectory
        models = [s for s in trajectory.agent_steps[0].steps if s.type == "model"]
        assert [s.metadata.get("stream") for s in models] == ["true", "true"], path
        assert all(m.model_info is not None and m.model_info.latency_first_resp != ""
                   for m in models), path


def test_apmplus_adk_agents_end_before_their_children() -> None:
    """apmplus ends an ADK agent's span when the agent starts running: trajhub takes the end of
    its subtree, so the agent lasts as long as its run (the cozeloop export's agent ends when its
    run does)."""
    captured = spans("adk_failure", "apmplus")
    agent = next(s for s in captured if s.attributes.get("runinfo.component") == "Agent")
    subtree_end = max(s.end_ns for s in captured)
    assert subtree_end > agent.end_ns
    trajectory = derive(captured).trajectory
    assert trajectory.root_step.id == agent.span_id
    assert trajectory.root_step.basic_info.duration == \
        str((subtree_end - agent.start_ns) // 1_000_000)


def test_ground_truth_files_are_the_scripts() -> None:
    """Each shape has its ground truth beside its captures (the Go program writes them from
    its script: tests/capture/README.md), and it is self-consistent."""
    assert sorted(p.name for p in FIXTURES.iterdir() if p.is_dir()) == sorted(SHAPES)
    for shape in SHAPES:
        want = truth(shape)
        assert want["shape"] == shape and want["format_version"] == 1
        steps = [s for a in want["activations"] for s in a["steps"]]
        assert want["root"]["input_tokens"] == sum(a["input_tokens"] for a in want["activations"])
        assert want["root"]["failed_steps"] == sum(s["error"] is not None for s in steps)
        assert (want["root"]["error"] is None) == (want["final_answer"] is not None)
