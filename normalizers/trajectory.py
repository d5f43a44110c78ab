"""The trajectory as typed dataclasses, and its deterministic JSON form.

The shape is fixed by normalizers/trajectory.schema.json (draft-07): `{id, root_step, agent_steps}`.
Omission rules, chosen once and applied everywhere so that consumers never guess:

- `input`, `output`, `parent_id`, `metadata`, `basic_info.started_at/duration` are always present
  (empty string / empty map when unknown), like Coze Loop's DTO;
- `basic_info.error` only when the span failed;
- `model_info` on every model step and nowhere else, always with all six fields
  (0, or "" for `latency_first_resp`, when unknown);
- `metrics_info` on the root step and on every agent step, always complete (zeros and `{}`), so a
  trajectory without model or tool steps still says "0 tokens" rather than nothing;
- an agent step's `steps` is always present (possibly `[]`).

Serialization sorts keys at every level, so the bytes depend only on the values.
"""

from __future__ import annotations

from dataclasses import field
from typing import Any, TypedDict

import orjson

from trajhub.normalizers.coerce import to_int
from trajhub.normalizers.immutable import immutable


@immutable
class StepError:
    """`basic_info.error`: present only when the span failed."""

    code: int
    msg: str


@immutable
class BasicInfo:
    started_at: str  # whole ms since the epoch, as a string
    duration: str  # whole ms, as a string
    error: StepError | None = None

    @property
    def started_at_ms(self) -> int | None:
        """The start in ms since the epoch; None when not recorded."""
        return to_int(self.started_at)

    @property
    def duration_ms(self) -> int | None:
        """The duration in ms; None when not recorded."""
        return to_int(self.duration)


@immutable
class ModelInfo:
    input_tokens: int = 0
    output_tokens: int = 0
    latency_first_resp: str = ""  # ms; "" when unknown
    reasoning_tokens: int = 0
    input_read_cached_tokens: int = 0
    input_creation_cached_tokens: int = 0

    @property
    def latency_first_resp_ms(self) -> int | None:
        """Time to the first response in ms; None when not recorded."""
        return to_int(self.latency_first_resp)


@immutable
class MetricsInfo:
    llm_duration: str = "0"
    tool_duration: str = "0"
    tool_errors: dict[str, list[str]] = field(default_factory=dict)
    tool_error_rate: float = 0.0
    model_errors: dict[str, list[str]] = field(default_factory=dict)
    model_error_rate: float = 0.0
    tool_step_proportion: float = 0.0
    input_tokens: int = 0
    output_tokens: int = 0


@immutable
class Step:
    id: str
    parent_id: str
    type: str  # "agent" | "graph" | "model" | "tool"
    name: str
    input: str
    output: str
    basic_info: BasicInfo
    metadata: dict[str, str] = field(default_factory=dict)
    model_info: ModelInfo | None = None  # exactly when type == "model"

    # Typed accessors for readers (`normalizers.document`); the writer never needs them.

    @property
    def error(self) -> StepError | None:
        return self.basic_info.error

    @property
    def failed(self) -> bool:
        return self.basic_info.error is not None

    @property
    def started_at_ms(self) -> int | None:
        return self.basic_info.started_at_ms

    @property
    def duration_ms(self) -> int | None:
        return self.basic_info.duration_ms

    @property
    def model(self) -> str | None:
        """A model step's model name (metadata `model_name`); None when not recorded."""
        return self.metadata.get("model_name") or None

    @property
    def tool_call_id(self) -> str | None:
        """A tool step's call id (metadata `tool_call_id`); None when not recorded."""
        return self.metadata.get("tool_call_id") or None


@immutable
class AgentStep:
    id: str
    parent_id: str
    name: str
    input: str
    output: str
    basic_info: BasicInfo
    metrics_info: MetricsInfo
    steps: list[Step] = field(default_factory=list)
    metadata: dict[str, str] = field(default_factory=dict)


@immutable
class RootStep:
    id: str
    name: str
    input: str
    output: str
    basic_info: BasicInfo
    metrics_info: MetricsInfo
    metadata: dict[str, str] = field(default_factory=dict)

    # The run's outcome when LangGraph's interrupt() ended it (metadata `outcome`,
    # `interrupt_node`, `interrupt_payload`: docs/trajectory-rules.md, "Interrupted runs").

    @property
    def interrupted(self) -> bool:
        return self.metadata.get("outcome") == "interrupted"

    @property
    def interrupt_node(self) -> str | None:
        """The tool or node that called interrupt(); None when the run was not interrupted."""
        return self.metadata.get("interrupt_node") if self.interrupted else None

    @property
    def interrupt_payload(self) -> str | None:
        """What interrupt() asked with, as JSON ("" when not recorded); None when the run was
        not interrupted."""
        return self.metadata.get("interrupt_payload") if self.interrupted else None


class EntryFields(TypedDict):
    """The fields the root, an agent step and a step all have, for building any of them: the
    writer (`builder`) fills them from a span, the reader (`document`) from a stored entry."""

    id: str
    name: str
    input: str
    output: str
    basic_info: BasicInfo
    metadata: dict[str, str]


@immutable
class Trajectory:
    id: str  # the trace id
    root_step: RootStep
    agent_steps: list[AgentStep] = field(default_factory=list)


def _basic_info(info: BasicInfo) -> dict[str, Any]:
    out: dict[str, Any] = {"started_at": info.started_at, "duration": info.duration}
    if info.error is not None:
        out["error"] = {"code": info.error.code, "msg": info.error.msg}
    return out


def _metrics(info: MetricsInfo) -> dict[str, Any]:
    return {
        "llm_duration": info.llm_duration,
        "tool_duration": info.tool_duration,
        "tool_errors": {code: list(ids) for code, ids in info.tool_errors.items()},
        "tool_error_rate": info.tool_error_rate,
        "model_errors": {code: list(ids) for code, ids in info.model_errors.items()},
        "model_error_rate": info.model_error_rate,
        "tool_step_proportion": info.tool_step_proportion,
        "input_tokens": info.input_tokens,
        "output_tokens": info.output_tokens,
    }


def _model_info(info: ModelInfo) -> dict[str, Any]:
    return {
        "input_tokens": info.input_tokens,
        "output_tokens": info.output_tokens,
        "latency_first_resp": info.latency_first_resp,
        "reasoning_tokens": info.reasoning_tokens,
        "input_read_cached_tokens": info.input_read_cached_tokens,
        "input_creation_cached_tokens": info.input_creation_cached_tokens,
    }


def _entry(entry: Step | AgentStep | RootStep) -> dict[str, Any]:
    """The `EntryFields` of any entry of the tree."""
    return {"id": entry.id, "name": entry.name, "input": entry.input, "output": entry.output,
            "metadata": dict(entry.metadata), "basic_info": _basic_info(entry.basic_info)}


def step_to_dict(step: Step) -> dict[str, Any]:
    out = {**_entry(step), "parent_id": step.parent_id, "type": step.type}
    if step.model_info is not None:
        out["model_info"] = _model_info(step.model_info)
    return out


def agent_step_to_dict(agent: AgentStep) -> dict[str, Any]:
    return {**_entry(agent), "parent_id": agent.parent_id,
            "metrics_info": _metrics(agent.metrics_info),
            "steps": [step_to_dict(s) for s in agent.steps]}


def root_step_to_dict(root: RootStep) -> dict[str, Any]:
    return {**_entry(root), "metrics_info": _metrics(root.metrics_info)}


def trajectory_to_dict(trajectory: Trajectory) -> dict[str, Any]:
    """The trajectory as plain JSON-ready data, in the schema's shape."""
    return {
        "id": trajectory.id,
        "root_step": root_step_to_dict(trajectory.root_step),
        "agent_steps": [agent_step_to_dict(a) for a in trajectory.agent_steps],
    }


def trajectory_to_json(trajectory: Trajectory) -> bytes:
    """Deterministic JSON bytes: keys sorted at every level, no whitespace, UTF-8.

    Lists keep their (already deterministic) order; orjson renders floats in their shortest
    round-trip form, so equal values always give equal bytes."""
    return orjson.dumps(trajectory_to_dict(trajectory), option=orjson.OPT_SORT_KEYS)


def round_rate(value: float) -> float:
    """Rates are rounded to 10 significant digits (Coze Loop's ReduceFloatSignificantDigit)."""
    return float(f"{value:.10g}")
