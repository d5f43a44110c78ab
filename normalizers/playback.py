"""Playback: a trajectory document as ordered, append-only step events, and its recorded tool
results keyed for hybrid replay. Pure functions over the stored document; no I/O.

A step event is one model, tool, agent or graph step, in the order the steps started (steps that
started in the same millisecond keep the order they ran: a nested agent's steps right after the
step that activated it), naming the agent activation it belongs to and the path of activations
down to it. Events are derived from the trajectory, so they follow its revisions: a late span
that re-derives the trajectory changes the events with it, under a new revision. The events of
one revision never change.

Tool arguments are compared in a canonical form (`canonical_arguments`): the arguments parsed
from the step's input, integral floats written as integers (a tool that validates `1` into `1.0`
must still find the recording of `1`), serialized as canonical JSON. `arguments_hash` is the
SHA-256 of that text; `trajhub.service.client.replay` uses the same function, so a recording and
a re-run agent agree on it.
"""

from __future__ import annotations

import ast
import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from trajhub.normalizers.trajectory import Trajectory

#: step types that are events
EVENT_TYPES = ("agent", "graph", "model", "tool")


@dataclass(frozen=True, slots=True)
class Tokens:
    input: int
    output: int
    reasoning: int
    cached_input: int


@dataclass(frozen=True, slots=True)
class EventError:
    code: int
    msg: str


@dataclass(frozen=True, slots=True)
class StepEvent:
    seq: int  # 0-based position in the run
    step_id: str
    parent_id: str
    type: str  # agent | graph | model | tool
    name: str
    agent: str  # the name of the agent (or graph) activation the step belongs to
    agent_step_id: str
    agent_path: tuple[str, ...]  # the activations from the outermost down to `agent`
    started_at_ms: int
    duration_ms: int
    input: str
    output: str
    error: EventError | None
    model: str | None  # model steps: the model's name when recorded
    tokens: Tokens | None  # model steps only
    tool_call_id: str | None  # tool steps: the call id when recorded
    arguments_hash: str | None  # tool steps: see `arguments_hash`
    metadata: Mapping[str, str]


@dataclass(frozen=True, slots=True)
class ToolResult:
    """One recorded tool call: what a replayed tool answers for the same call."""

    tool_name: str
    call_id: str | None
    arguments: Any  # the parsed arguments (canonical form)
    arguments_hash: str
    output: str
    error: EventError | None
    step_id: str
    agent: str
    seq: int  # the event's position in the run


def _int(value: Any) -> int:
    try:
        return int(value)
    except (TypeError, ValueError):
        return 0


def _canonical_value(value: Any) -> Any:
    if isinstance(value, bool) or value is None or isinstance(value, (int, str)):
        return value
    if isinstance(value, float):
        return int(value) if value.is_integer() else value
    if isinstance(value, Mapping):
        return {str(k): _canonical_value(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_canonical_value(v) for v in value]
    return str(value)


def parse_arguments(text: str) -> Any:
    """A tool step's input as a value: JSON, else a Python literal (some instrumentations record
    `str(dict)`), else the text itself."""
    try:
        return _canonical_value(json.loads(text))
    except ValueError:
        pass
    try:
        literal = ast.literal_eval(text)
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return text
    return _canonical_value(literal) if isinstance(literal, (dict, list)) else text


def canonical_arguments(arguments: Any) -> str:
    """Canonical JSON of an arguments value: keys sorted, no whitespace, UTF-8, integral floats
    as integers."""
    return json.dumps(_canonical_value(arguments), sort_keys=True, separators=(",", ":"),
                      ensure_ascii=False)


def arguments_hash(arguments: Any) -> str:
    return "sha256:" + hashlib.sha256(canonical_arguments(arguments).encode()).hexdigest()


def _error(basic_info: Mapping[str, Any]) -> EventError | None:
    error = basic_info.get("error")
    if not isinstance(error, Mapping):
        return None
    return EventError(code=_int(error.get("code", -1)), msg=str(error.get("msg", "")))


def _tokens(step: Mapping[str, Any]) -> Tokens | None:
    info = step.get("model_info")
    if not isinstance(info, Mapping):
        return None
    return Tokens(input=_int(info.get("input_tokens")), output=_int(info.get("output_tokens")),
                  reasoning=_int(info.get("reasoning_tokens")),
                  cached_input=_int(info.get("input_read_cached_tokens")))


def _activation_order(document: Mapping[str, Any]
                      ) -> list[tuple[Mapping[str, Any], Mapping[str, Any], tuple[str, ...]]]:
    """(agent, step) pairs depth-first: an agent's steps in order, each nested agent's steps
    right after the step that activated it. Breaks ties between steps that started in the same
    millisecond the way they ran."""
    agents = [a for a in document.get("agent_steps") or [] if isinstance(a, Mapping)]
    by_id = {str(a.get("id", "")): a for a in agents}
    nested = {str(s.get("id", "")) for a in agents for s in a.get("steps") or []
              if s.get("type") in ("agent", "graph")}
    out: list[tuple[Mapping[str, Any], Mapping[str, Any], tuple[str, ...]]] = []
    seen: set[str] = set()

    def walk(agent: Mapping[str, Any], outer: tuple[str, ...]) -> None:
        agent_id = str(agent.get("id", ""))
        if agent_id in seen:
            return
        seen.add(agent_id)
        path = (*outer, str(agent.get("name", "")))
        for step in agent.get("steps") or []:
            if step.get("type") in EVENT_TYPES:
                out.append((agent, step, path))
            child = by_id.get(str(step.get("id", "")))
            if child is not None and step.get("type") in ("agent", "graph"):
                walk(child, path)

    for agent in agents:
        if str(agent.get("id", "")) not in nested:
            walk(agent, ())
    for agent in agents:  # activations no walk reached (a malformed document)
        walk(agent, ())
    return out


def run_duration_ms(document: Mapping[str, Any]) -> int:
    """The whole run's duration: its root step's."""
    return _int(((document.get("root_step") or {}).get("basic_info") or {}).get("duration"))


def step_events(document: Mapping[str, Any]) -> list[StepEvent]:
    """The trajectory's steps as events, in start order (ties: the order they ran)."""
    ordered = [(_int((step.get("basic_info") or {}).get("started_at")), position, agent, step,
                path)
               for position, (agent, step, path) in enumerate(_activation_order(document))]
    ordered.sort(key=lambda entry: (entry[0], entry[1]))
    events = []
    for seq, (started, _, agent, step, path) in enumerate(ordered):
        info = step.get("basic_info") or {}
        metadata = {str(k): str(v) for k, v in (step.get("metadata") or {}).items()}
        is_model, is_tool = step["type"] == "model", step["type"] == "tool"
        events.append(StepEvent(
            seq=seq, step_id=str(step.get("id", "")), parent_id=str(step.get("parent_id", "")),
            type=str(step["type"]), name=str(step.get("name", "")),
            agent=str(agent.get("name", "")), agent_step_id=str(agent.get("id", "")),
            agent_path=path,
            started_at_ms=started, duration_ms=_int(info.get("duration")),
            input=str(step.get("input", "")), output=str(step.get("output", "")),
            error=_error(info),
            model=(metadata.get("model_name") or None) if is_model else None,
            tokens=_tokens(step) if is_model else None,
            tool_call_id=(metadata.get("tool_call_id") or None) if is_tool else None,
            arguments_hash=(arguments_hash(parse_arguments(str(step.get("input", ""))))
                            if is_tool else None),
            metadata=metadata))
    return events


def tool_results(events: list[StepEvent]) -> list[ToolResult]:
    """Every recorded tool call of the run, in call order."""
    results = []
    for e in events:
        if e.type == "tool":
            arguments = parse_arguments(e.input)
            results.append(ToolResult(
                tool_name=e.name, call_id=e.tool_call_id, arguments=arguments,
                arguments_hash=arguments_hash(arguments), output=e.output, error=e.error,
                step_id=e.step_id, agent=e.agent, seq=e.seq))
    return results


def model_usage(trajectory: Trajectory) -> dict[str, dict[str, int]]:
    """Token usage per model name over the model steps ("" = model not recorded):
    {"<model>": {"steps", "input_tokens", "output_tokens", "cached_input_tokens"}}. The store
    keeps it per trajectory, so summaries can be priced without reading documents."""
    usage: dict[str, dict[str, int]] = {}
    for agent in trajectory.agent_steps:
        for step in agent.steps:
            if step.type != "model" or step.model_info is None:
                continue
            u = usage.setdefault(step.metadata.get("model_name", ""), {
                "steps": 0, "input_tokens": 0, "output_tokens": 0, "cached_input_tokens": 0})
            u["steps"] += 1
            u["input_tokens"] += step.model_info.input_tokens
            u["output_tokens"] += step.model_info.output_tokens
            u["cached_input_tokens"] += step.model_info.input_read_cached_tokens
    return usage
