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
SHA-256 of that text; both are trajhub.records.arguments', which `trajhub.service.client.replay`
uses too, so a recording and a re-run agent agree on it.
"""

from __future__ import annotations

import ast
import json
from collections.abc import Mapping
from typing import Any

from trajhub.normalizers.document import PlacedStep, execution_order, parse_document
from trajhub.normalizers.immutable import immutable
from trajhub.normalizers.trajectory import Step, StepError, Trajectory
from trajhub.records.arguments import arguments_hash, canonical_value

#: step types that are events
EVENT_TYPES = ("agent", "graph", "model", "tool")


@immutable
class Tokens:
    input: int
    output: int
    reasoning: int
    cached_input: int  # cache reads
    cache_write: int = 0


@immutable
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
    error: StepError | None
    model: str | None  # model steps: the model's name when recorded
    tokens: Tokens | None  # model steps only
    tool_call_id: str | None  # tool steps: the call id when recorded
    arguments_hash: str | None  # tool steps: see `arguments_hash`
    metadata: Mapping[str, str]


@immutable
class ToolResult:
    """One recorded tool call: what a replayed tool answers for the same call."""

    tool_name: str
    call_id: str | None
    arguments: Any  # the parsed arguments (canonical form)
    arguments_hash: str
    output: str
    error: StepError | None
    step_id: str
    agent: str
    seq: int  # the event's position in the run


def parse_arguments(text: str) -> Any:
    """A tool step's input as a value: JSON, else a Python literal (some instrumentations record
    `str(dict)`), else the text itself."""
    try:
        return canonical_value(json.loads(text))
    except ValueError:
        pass
    try:
        literal = ast.literal_eval(text)
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return text
    return canonical_value(literal) if isinstance(literal, (dict, list)) else text


def run_duration_ms(document: Mapping[str, Any]) -> int:
    """The whole run's duration: its root step's (0 when not recorded)."""
    return parse_document(document).root_step.basic_info.duration_ms or 0


def step_events(document: Mapping[str, Any]) -> list[StepEvent]:
    """The trajectory's steps as events, in start order (ties: the order they ran). A projection
    of `normalizers.document`: unknown times and token counts are 0 here."""
    return trajectory_events(parse_document(document))


def event_order(trajectory: Trajectory) -> list[PlacedStep]:
    """The steps that are events, in playback order: start order, ties in the order they ran."""
    placed = [p for p in execution_order(trajectory) if p.step.type in EVENT_TYPES]
    ordered = sorted(enumerate(placed), key=lambda e: (e[1].step.started_at_ms or 0, e[0]))
    return [p for _, p in ordered]


def trajectory_events(trajectory: Trajectory) -> list[StepEvent]:
    """`step_events` of a trajectory already read."""
    return [step_event(seq, p.step, p.agent.name, p.agent.id, p.agent_path)
            for seq, p in enumerate(event_order(trajectory))]


def step_event(seq: int, step: Step, agent: str, agent_step_id: str,
               agent_path: tuple[str, ...]) -> StepEvent:
    """One step as the event at position `seq` of its run, in the activation named."""
    is_model, is_tool = step.type == "model", step.type == "tool"
    info = step.model_info
    return StepEvent(
        seq=seq, step_id=step.id, parent_id=step.parent_id, type=step.type, name=step.name,
        agent=agent, agent_step_id=agent_step_id, agent_path=agent_path,
        started_at_ms=step.started_at_ms or 0, duration_ms=step.duration_ms or 0,
        input=step.input, output=step.output, error=step.error,
        model=step.model if is_model else None,
        tokens=(Tokens(input=info.input_tokens, output=info.output_tokens,
                       reasoning=info.reasoning_tokens,
                       cached_input=info.input_read_cached_tokens,
                       cache_write=info.input_creation_cached_tokens)
                if is_model and info is not None else None),
        tool_call_id=step.tool_call_id if is_tool else None,
        arguments_hash=arguments_hash(parse_arguments(step.input)) if is_tool else None,
        metadata=step.metadata)


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


def model_usage(trajectory: Trajectory) -> dict[str, dict[str, Any]]:
    """Token usage per model name over the model steps ("" = model not recorded):
    {"<model>": {"steps", "input_tokens", "output_tokens", "cached_input_tokens",
    "cache_write_tokens", "reasoning_tokens", "calls"}}, the counts as recorded. `calls` holds
    each step's [input, output, cache read, cache write, reasoning, start ms]: a call's price
    can depend on its own size (long-context tiers) and date, so sums alone cannot be priced.
    The store keeps it per trajectory, so summaries can be priced without reading documents."""
    usage: dict[str, dict[str, Any]] = {}
    for agent in trajectory.agent_steps:
        for step in agent.steps:
            if step.type != "model" or step.model_info is None:
                continue
            info = step.model_info
            u = usage.setdefault(step.model or "", {
                "steps": 0, "input_tokens": 0, "output_tokens": 0, "cached_input_tokens": 0,
                "cache_write_tokens": 0, "reasoning_tokens": 0, "calls": []})
            u["steps"] += 1
            u["input_tokens"] += info.input_tokens
            u["output_tokens"] += info.output_tokens
            u["cached_input_tokens"] += info.input_read_cached_tokens
            u["cache_write_tokens"] += info.input_creation_cached_tokens
            u["reasoning_tokens"] += info.reasoning_tokens
            u["calls"].append([info.input_tokens, info.output_tokens,
                               info.input_read_cached_tokens, info.input_creation_cached_tokens,
                               info.reasoning_tokens, step.started_at_ms or 0])
    return usage
