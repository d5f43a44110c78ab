"""A trajectory's steps in pages (docs/large-traces.md): what `GET
/api/v1/trajectories/{id}/steps` and the paged playback serve without reading the whole document.
Pure; no I/O.

A trajectory's steps, flattened, are in document order: the steps of `agent_steps[0]`, then those
of `agent_steps[1]`, and so on; a step's *offset* is its position in that order. The *head* is
the document without its steps: `root_step`, each agent entry without `steps` but with
`step_offset` and `step_count` (where its steps start in the flat order, how many),
`step_types` (count by type), `failed_steps` and `models` (the model steps' distinct
models), and the flat total. The *playback order* says, per event in playback order, the offset
of its step (`event_steps`) and its agent activation (`event_activations`, an index into
`activations`: [agent step id, agent name, agent path]); two lists of integers, not a list per
event, so that reading it allocates two objects, not one per step.

The derivation stores a large trajectory (`PAGED_FROM` steps or more) as its head, its playback
order and its flat steps in chunks of `CHUNK_STEPS` (storage/step_chunks.py), besides the whole
document; a smaller one is paged from its document by the same functions (`head_and_steps`).
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Mapping, Sequence
from typing import Any

from trajhub.normalizers.document import parse_step
from trajhub.normalizers.immutable import immutable
from trajhub.normalizers.playback import StepEvent, event_order, step_event
from trajhub.normalizers.trajectory import Trajectory

#: steps per stored chunk: a page of up to 1,000 steps reads at most three
CHUNK_STEPS = 500
#: from this many steps on, a trajectory is also stored in chunks; below, its whole document
#: is read for a page (a few milliseconds at this size)
PAGED_FROM = 1000


@immutable
class Split:
    """A document as its head, its playback order and its flat steps in chunks (chunk k: offsets
    k·CHUNK_STEPS …)."""

    head: dict[str, Any]
    order: dict[str, Any]
    chunks: list[list[Any]]


def head_and_steps(document: Mapping[str, Any]) -> tuple[dict[str, Any], list[Any]]:
    """The head (without the playback order) and the flat steps of a stored document."""
    agents: list[dict[str, Any]] = []
    steps: list[Any] = []
    for entry in document.get("agent_steps") or []:
        own = entry.get("steps") or []
        agent = {k: v for k, v in entry.items() if k != "steps"}
        agent["step_offset"], agent["step_count"] = len(steps), len(own)
        # what a lane's label and the run's totals show, without the steps
        types: dict[str, int] = {}
        models: dict[str, None] = {}
        failed = 0
        for step in own:
            if not isinstance(step, Mapping):
                continue
            kind = str(step.get("type", ""))
            types[kind] = types.get(kind, 0) + 1
            failed += isinstance((step.get("basic_info") or {}).get("error"), Mapping)
            if kind == "model":
                model = (step.get("metadata") or {}).get("model_name") or step.get("name")
                if model:
                    models[str(model)] = None
        agent["step_types"], agent["failed_steps"] = types, failed
        agent["models"] = list(models)
        agents.append(agent)
        steps.extend(own)
    head = {"id": document.get("id", ""), "root_step": document.get("root_step") or {},
            "agent_steps": agents, "step_total": len(steps)}
    return head, steps


def split(document: Mapping[str, Any], trajectory: Trajectory) -> Split:
    """`document` (the dict of `trajectory`, `trajectory_to_dict`) as head, playback order and
    chunks."""
    head, steps = head_and_steps(document)
    offset = {id(step): n for n, step in
              enumerate(s for agent in trajectory.agent_steps for s in agent.steps)}
    activations: dict[tuple[str, str, tuple[str, ...]], int] = {}
    event_steps: list[int] = []
    event_activations: list[int] = []
    for placed in event_order(trajectory):
        key = (placed.agent.id, placed.agent.name, placed.agent_path)
        event_steps.append(offset[id(placed.step)])
        event_activations.append(activations.setdefault(key, len(activations)))
    order = {"event_steps": event_steps, "event_activations": event_activations,
             "activations": [[i, name, list(path)] for i, name, path in activations]}
    chunks = [steps[k:k + CHUNK_STEPS] for k in range(0, len(steps), CHUNK_STEPS)]
    return Split(head, order, chunks)


def chunk_range(offset: int, limit: int, total: int) -> range:
    """The chunks holding the steps at offsets [offset, offset + limit)."""
    end = min(offset + limit, total)
    if end <= offset:
        return range(0)
    return range(offset // CHUNK_STEPS, (end - 1) // CHUNK_STEPS + 1)


def at(chunks: Mapping[int, Sequence[Any]], offset: int) -> Any:
    return chunks[offset // CHUNK_STEPS][offset % CHUNK_STEPS]


def page_steps(head: Mapping[str, Any], chunks: Mapping[int, Sequence[Any]], offset: int,
               limit: int) -> list[dict[str, Any]]:
    """The steps at offsets [offset, offset + limit), each with `offset` and `agent_step_id`
    (the agent entry whose `steps` hold it)."""
    agents = head["agent_steps"]
    starts = [a["step_offset"] for a in agents]
    out = []
    for n in range(offset, min(offset + limit, int(head["step_total"]))):
        # the last agent starting at or before n; agents without steps share their offset
        # with the next one, which is after them, so this is the one holding n
        agent = agents[bisect_right(starts, n) - 1]
        out.append({**at(chunks, n), "offset": n, "agent_step_id": agent.get("id", "")})
    return out


def event_chunks(order: Mapping[str, Any], offset: int, limit: int) -> set[int]:
    """The chunks holding the steps of the events at positions [offset, offset + limit)."""
    return {step // CHUNK_STEPS for step in order["event_steps"][offset:offset + limit]}


def page_events(order: Mapping[str, Any], chunks: Mapping[int, Sequence[Any]], offset: int,
                limit: int) -> list[StepEvent]:
    """The playback events at positions [offset, offset + limit), as `step_events` of the whole
    document gives them."""
    out = []
    end = offset + limit
    pairs = zip(order["event_steps"][offset:end], order["event_activations"][offset:end],
                strict=True)
    for seq, (step, activation) in enumerate(pairs, offset):
        agent_id, name, path = order["activations"][activation]
        out.append(step_event(seq, parse_step(at(chunks, step)), name, agent_id, tuple(path)))
    return out
