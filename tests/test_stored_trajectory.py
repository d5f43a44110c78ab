"""A trajectory as stored (service/stored_trajectory.py): a large one's document, compressed
from its pieces, is exactly trajectory_to_json's bytes, and its chunks are its playback order,
its head and its flat steps as normalizers/pages.py cuts them; a small one is its document alone.
The trajectories are built here: agents with no steps, one step, and steps across chunk ends,
text with NUL, quotes and non-ASCII characters."""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from trajhub.normalizers import trajectory as tree
from trajhub.normalizers.pages import CHUNK_STEPS, PAGED_FROM, split
from trajhub.normalizers.trajectory import trajectory_to_dict, trajectory_to_json
from trajhub.service import stored_trajectory
from trajhub.storage.compression import decompress


def _step(agent: int, n: int) -> tree.Step:
    model = n % 3 == 0
    return tree.Step(
        id=f"s{agent}-{n}", parent_id=f"a{agent}", type="model" if model else "tool",
        name="gpt-4o" if model else f"tool_{n % 5}",
        input=f'{{"q": "step {n} \\"quoted\\" \u00e9t\u00e9 \u6f22"}}', output=f"out\x00{n}",
        basic_info=tree.BasicInfo(str(1_700_000_000_000 + n), "3",
                                  tree.StepError(2, "boom") if n % 97 == 5 else None),
        metadata={"model_name": "gpt-4o"} if model else {"tool_call_id": f"c{n}"},
        model_info=tree.ModelInfo(input_tokens=n, output_tokens=1) if model else None)


def _trajectory(steps_per_agent: list[int]) -> tree.Trajectory:
    agents = [tree.AgentStep(id=f"a{k}", parent_id="root", name=f"agent {k}", input="in",
                             output="out", basic_info=tree.BasicInfo("1700000000000", "9"),
                             metrics_info=tree.MetricsInfo(),
                             steps=[_step(k, n) for n in range(count)],
                             metadata={"zz": "after steps", "aa": "before"})
              for k, count in enumerate(steps_per_agent)]
    root = tree.RootStep(id="root", name="run", input="hi", output="bye",
                         basic_info=tree.BasicInfo("1700000000000", "10"),
                         metrics_info=tree.MetricsInfo())
    return tree.Trajectory(id="t" * 32, root_step=root, agent_steps=agents)


def _json(value: Any) -> bytes:
    return orjson.dumps(value, option=orjson.OPT_SORT_KEYS)


@pytest.mark.parametrize("steps_per_agent", [
    [PAGED_FROM],
    [0, CHUNK_STEPS - 1, 1, 0, CHUNK_STEPS + 2, 0],
    [3, 2 * CHUNK_STEPS + 7, 1, CHUNK_STEPS],
    [1] * PAGED_FROM,
])
def test_a_large_trajectorys_document_and_chunks_are_those_of_its_whole_json(
        steps_per_agent: list[int]) -> None:
    trajectory = _trajectory(steps_per_agent)
    document = trajectory_to_dict(trajectory)
    stored, chunks = stored_trajectory.pack(document, trajectory)
    assert decompress(stored) == trajectory_to_json(trajectory)
    parts = split(document, trajectory)
    assert [decompress(c) for c in chunks] == [
        _json(part) for part in (parts.order, parts.head, *parts.chunks)]


def test_a_small_trajectory_is_its_document_without_chunks() -> None:
    trajectory = _trajectory([2, 0, PAGED_FROM - 3])
    stored, chunks = stored_trajectory.pack(trajectory_to_dict(trajectory), trajectory)
    assert decompress(stored) == trajectory_to_json(trajectory)
    assert chunks == []


def test_a_document_holding_the_cut_marker_is_still_stored_exactly(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The marker that stands for each agent's steps while the rest is serialized is random;
    a document holding it anyway must not be cut there."""
    trajectory = _trajectory([PAGED_FROM])
    document = trajectory_to_dict(trajectory)
    document["agent_steps"][0]["input"] = "trajhub-steps-" + "0" * 32

    class Fixed:
        hex = "0" * 32

    monkeypatch.setattr(stored_trajectory.uuid, "uuid4", Fixed)
    stored, _ = stored_trajectory.pack(document, trajectory)
    assert decompress(stored) == _json(document)
