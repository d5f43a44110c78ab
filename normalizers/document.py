"""The one reader of a stored trajectory document (`trajectory.schema.json`).

`parse_document` reads the JSON dict stored per trace back into the same typed tree the builder
writes (`normalizers.trajectory`: Trajectory → RootStep + AgentStep (agents and graphs) → Step),
so there is one model of a trajectory, written and read. Playback, evaluation item fields, the
agentevals export, run comparison, cost and every evaluator are projections of that tree;
`execution_order` gives its steps in the order they ran, each with the agent activation it
belongs to and the path of activations down to it (`run_order` also gives the activations in
the order they were entered).

Typed accessors live on the tree: `Step.started_at_ms` / `duration_ms` / `error` / `failed` /
`model` / `tool_call_id`, `BasicInfo.started_at_ms` / `duration_ms`, and `ModelInfo` for the
tokens (input, output, cache read = `input_read_cached_tokens`, cache write =
`input_creation_cached_tokens`, reasoning) and `latency_first_resp_ms`. `tool_arguments` decodes a
tool step's input.

Never raises on a stored document. Tolerance rules, each applied here and nowhere else:

- a document that is not an object reads as an empty trajectory; a missing `root_step` as an
  empty root;
- `agent_steps` is read at the top level, as the schema has it, else inside `root_step`, as the
  product spec's example has it (documents written against that example);
- an agent entry or step that is not an object is skipped (it names nothing to read);
- strings (`id`, `name`, `input`, `output`, `parent_id`, metadata keys and values) go through
  `coerce.to_str`: a number becomes its text, a structured value its key-sorted JSON, null "";
- a step's `type` is read in lower case ("Tool" is a tool step);
- times (`started_at`, `duration`, `latency_first_resp`) are kept as the whole-millisecond
  text the schema asks for when `coerce.to_whole` reads them (12, "12", "12.0" and "12.7" all
  read as "12"), else "" (unknown; the accessors give None). A bool, NaN or ±inf is unknown.
  Metric durations read the same way, but unknown is "0", as the writer writes it;
- token counts read with `coerce.to_whole`, rates with `coerce.to_float`; unknown is 0, as the
  writer writes it;
- `basic_info.error` is read when it is an object; a code `coerce.to_whole` cannot read is -1
  (unknown, as `reading.ErrorInfo` defines it), a missing `msg` is "";
- `model_info` is read when it is an object, else the step has none.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from trajhub.normalizers.coerce import to_dict, to_float, to_list, to_str, to_whole
from trajhub.normalizers.immutable import immutable
from trajhub.normalizers.trajectory import (
    AgentStep,
    BasicInfo,
    EntryFields,
    MetricsInfo,
    ModelInfo,
    RootStep,
    Step,
    StepError,
    Trajectory,
)

#: step types that name an agent activation (an AgentStep with the same id)
ACTIVATION_TYPES = ("agent", "graph")


@immutable
class PlacedStep:
    """A step where it ran: the agent activation it belongs to and the activations (their names,
    outermost first) down to that one."""

    step: Step
    agent: AgentStep
    agent_path: tuple[str, ...]


def parse_document(document: object) -> Trajectory:
    """A stored trajectory document as the typed tree (see the module doc). Never raises."""
    doc = to_dict(document)
    root = to_dict(doc.get("root_step"))
    entries = to_list(doc.get("agent_steps")) or to_list(root.get("agent_steps"))
    return Trajectory(
        id=to_str(doc.get("id")),
        root_step=RootStep(**_entry(root), metrics_info=_metrics_info(root.get("metrics_info"))),
        agent_steps=[_agent(entry) for entry in entries if isinstance(entry, Mapping)],
    )


@immutable
class RunOrder:
    """The agent activations in the order they were entered, and every step in the order it
    ran (see `run_order`)."""

    agents: tuple[AgentStep, ...]
    steps: tuple[PlacedStep, ...]


def run_order(trajectory: Trajectory) -> RunOrder:
    """Every agent activation and every step of it once, in the order they ran.

    `agent_steps` is in start order, which would put a sub-agent's steps after its parent's later
    steps; instead each activation is entered right after the step of type agent/graph that
    started it (the step with the activation's id), depth first. Activations no step started are
    the outermost ones, in stored order; activations reachable only through a cycle (a malformed
    document) come last. When two activations share an id, a step starts the first of them."""
    agents = trajectory.agent_steps
    by_id: dict[str, int] = {}
    for index, agent in enumerate(agents):
        if agent.id:
            by_id.setdefault(agent.id, index)
    started = {by_id[step.id] for agent in agents for step in agent.steps
               if step.type in ACTIVATION_TYPES and step.id in by_id}
    seen: set[int] = set()
    entered: list[AgentStep] = []
    placed: list[PlacedStep] = []

    def visit(index: int, outer: tuple[str, ...]) -> None:
        if index in seen:
            return
        seen.add(index)
        agent = agents[index]
        entered.append(agent)
        path = (*outer, agent.name)
        for step in agent.steps:
            placed.append(PlacedStep(step, agent, path))
            if step.type in ACTIVATION_TYPES:
                child = by_id.get(step.id)
                if child is not None:
                    visit(child, path)

    for index in range(len(agents)):
        if index not in started:
            visit(index, ())
    for index in range(len(agents)):
        visit(index, ())
    return RunOrder(tuple(entered), tuple(placed))


def execution_order(trajectory: Trajectory) -> tuple[PlacedStep, ...]:
    """Every step once, in the order it ran (`run_order`)."""
    return run_order(trajectory).steps


def tool_arguments(step: Step) -> Any:
    """A tool step's input as its arguments: the decoded JSON when the input is JSON, else the
    input text as it is."""
    return decode_json_text(step.input)


def decode_json_text(raw: str) -> Any:
    """A payload as a JSON value when it is JSON (surrounding spaces ignored), else the text."""
    text = raw.strip()
    if not text:
        return raw
    try:
        return json.loads(text)
    except ValueError:
        return raw


# ---------------------------------------------------------------------------------------------


def _ms_text(value: object) -> str:
    number = to_whole(value)
    return "" if number is None else str(number)


def _basic_info(value: object) -> BasicInfo:
    info = to_dict(value)
    return BasicInfo(started_at=_ms_text(info.get("started_at")),
                     duration=_ms_text(info.get("duration")), error=_error(info.get("error")))


def _error(value: object) -> StepError | None:
    if not isinstance(value, Mapping):
        return None
    code = to_whole(value.get("code"))
    return StepError(code=-1 if code is None else code, msg=to_str(value.get("msg")))


def _metadata(value: object) -> dict[str, str]:
    return {to_str(key): to_str(item) for key, item in to_dict(value).items()}


def _count(value: object) -> int:
    return to_whole(value) or 0


def _error_ids(value: object) -> dict[str, list[str]]:
    return {to_str(code): [to_str(i) for i in to_list(ids)] for code, ids in to_dict(value).items()}


def _metrics_info(value: object) -> MetricsInfo:
    info = to_dict(value)
    return MetricsInfo(
        llm_duration=_ms_text(info.get("llm_duration")) or "0",
        tool_duration=_ms_text(info.get("tool_duration")) or "0",
        tool_errors=_error_ids(info.get("tool_errors")),
        tool_error_rate=to_float(info.get("tool_error_rate")) or 0.0,
        model_errors=_error_ids(info.get("model_errors")),
        model_error_rate=to_float(info.get("model_error_rate")) or 0.0,
        tool_step_proportion=to_float(info.get("tool_step_proportion")) or 0.0,
        input_tokens=_count(info.get("input_tokens")),
        output_tokens=_count(info.get("output_tokens")),
    )


def _model_info(value: object) -> ModelInfo | None:
    if not isinstance(value, Mapping):
        return None
    return ModelInfo(
        input_tokens=_count(value.get("input_tokens")),
        output_tokens=_count(value.get("output_tokens")),
        latency_first_resp=_ms_text(value.get("latency_first_resp")),
        reasoning_tokens=_count(value.get("reasoning_tokens")),
        input_read_cached_tokens=_count(value.get("input_read_cached_tokens")),
        input_creation_cached_tokens=_count(value.get("input_creation_cached_tokens")),
    )


def parse_step(raw: Mapping[str, Any]) -> Step:
    """One step entry of a stored document (an `agent_steps[].steps[]` object)."""
    return Step(**_entry(raw), parent_id=to_str(raw.get("parent_id")),
                type=to_str(raw.get("type")).lower(), model_info=_model_info(raw.get("model_info")))


def _agent(raw: Mapping[str, Any]) -> AgentStep:
    steps = [parse_step(step) for step in to_list(raw.get("steps")) if isinstance(step, Mapping)]
    return AgentStep(**_entry(raw), parent_id=to_str(raw.get("parent_id")),
                     metrics_info=_metrics_info(raw.get("metrics_info")), steps=steps)


def _entry(raw: Mapping[str, Any]) -> EntryFields:
    return EntryFields(id=to_str(raw.get("id")), name=to_str(raw.get("name")),
                       input=to_str(raw.get("input")), output=to_str(raw.get("output")),
                       basic_info=_basic_info(raw.get("basic_info")),
                       metadata=_metadata(raw.get("metadata")))
