"""Trajectories in and out of ATIF, the Agent Trajectory Interchange Format (docs/atif.md).

ATIF (Harbor's RFC 0001, version `ATIF-v1.8`) logs a run as the turns of a conversation: user,
system and agent steps, an agent step carrying the model call's message, tool calls, token
metrics and the observation (tool results) that answered them; sub-agents are embedded
trajectories referenced from an observation. trajhub's trajectory is a tree of agent
activations and their model and tool steps. Both directions are pure functions (no I/O):

- `to_atif(trajectory)`: a stored trajectory (`normalizers.document.parse_document`) as one ATIF
  document. Each model step is an agent step; each tool step is the observation result of the
  agent step that asked for it (by tool call id), else a dispatch step of its own
  (`llm_call_count = 0`); each sub-agent or graph activation is an embedded trajectory, referenced
  where it ran. Every step, agent and observation result also carries trajhub's own record of it in
  `extra.trajhub` (ids, types, times, errors, payloads, metadata), which ATIF has no fields for.
- `from_atif(document, start_ns)`: an ATIF document as the OTLP spans of one trace, in the OTel
  GenAI conventions (`invoke_agent`, `invoke_workflow`, `chat`, `execute_tool`), so an imported
  run is stored, derived, viewed, compared and evaluated exactly like an ingested one. Where a
  step carries `extra.trajhub` that record decides (the round trip keeps steps, agents, tool
  calls, tokens and errors); otherwise the ATIF fields do. The trace and span ids are hashes of
  the document, so importing the same file twice stores it once.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import orjson
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue
from opentelemetry.proto.trace.v1.trace_pb2 import Span as OtlpSpan
from opentelemetry.proto.trace.v1.trace_pb2 import Status

from trajhub.normalizers.coerce import to_dict, to_float, to_list, to_str, to_whole
from trajhub.normalizers.trajectory import (
    AgentStep,
    Step,
    Trajectory,
    agent_step_to_dict,
    root_step_to_dict,
    step_to_dict,
)

#: the ATIF version written (Harbor's `harbor.models.trajectories`, November 2026)
SCHEMA_VERSION = "ATIF-v1.8"
#: the versions read: every published one (later ones only add optional fields)
READ_VERSIONS = tuple(f"ATIF-v1.{minor}" for minor in range(9))
#: the key under which trajhub keeps its own record in an ATIF object's `extra`
EXTRA_KEY = "trajhub"
#: the resource of imported spans
IMPORT_SERVICE = "atif-import"
IMPORT_SCOPE = "trajhub.atif"

_NS_PER_MS = 1_000_000
_INTERNAL, _CLIENT = 1, 3
_STATUS_ERROR = 2
_ACTIVATIONS = ("agent", "graph")


class AtifError(ValueError):
    """The document is not an ATIF trajectory trajhub can import; the message says where."""


# ---------------------------------------------------------------------------------------------
# trajhub -> ATIF


def _json(text: str) -> Any:
    if not text:
        return None
    try:
        return orjson.loads(text)
    except orjson.JSONDecodeError:
        return None


def _iso(ms_text: str) -> str | None:
    ms = to_whole(ms_text)
    if ms is None:
        return None
    return datetime.fromtimestamp(ms / 1000, tz=UTC).isoformat().replace("+00:00", "Z")


def _text(content: Any) -> str:
    """A message's content as ATIF's text message: a string as is, parts joined."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        texts = [to_str(to_dict(p).get("text") or to_dict(p).get("content")) for p in content]
        return "\n".join(t for t in texts if t)
    return to_str(content) if content is not None else ""


def _input_turns(text: str) -> list[dict[str, Any]]:
    """A run's input as ATIF user/system steps (without ids): its chat messages, else the input
    itself as one user message."""
    value = _json(text)
    if isinstance(value, list) and all(isinstance(m, dict) and "role" in m for m in value):
        turns = []
        for message in value:
            role = message.get("role")
            if role in ("user", "system"):
                turns.append({"source": role, "message": _text(message.get("content"))})
        return turns
    return [{"source": "user", "message": text}] if text else []


def _metrics(step: Step) -> dict[str, Any] | None:
    info = step.model_info
    if info is None:
        return None
    return {
        "prompt_tokens": info.input_tokens,
        "completion_tokens": info.output_tokens,
        "cached_tokens": info.input_read_cached_tokens,
        "extra": {
            "reasoning_tokens": info.reasoning_tokens,
            "cache_creation_tokens": info.input_creation_cached_tokens,
        },
    }


def _arguments(text: str) -> dict[str, Any]:
    value = _json(text)
    if isinstance(value, dict):
        return value
    return {"input": text} if text else {}


def _model_step(step: Step) -> dict[str, Any]:
    output = to_dict(_json(step.output))
    calls = [
        {
            "tool_call_id": to_str(call.get("id")),
            "function_name": to_str(call.get("name")),
            "arguments": to_dict(call.get("arguments")),
        }
        for call in (to_dict(c) for c in to_list(output.get("tool_calls")))
        if to_str(call.get("id"))
    ]
    out: dict[str, Any] = {
        "source": "agent",
        "message": _text(output.get("content")) if output else step.output,
        "llm_call_count": 1,
        "metrics": _metrics(step),
        "extra": {EXTRA_KEY: step_to_dict(step)},
    }
    if step.model:
        out["model_name"] = step.model
    if calls:
        out["tool_calls"] = calls
    return out


def _tool_result(step: Step, call_id: str | None) -> dict[str, Any]:
    return {
        "source_call_id": call_id,
        "content": step.output,
        "extra": {EXTRA_KEY: step_to_dict(step)},
    }


@dataclass
class _Exporter:
    entries: Mapping[str, AgentStep]
    trace_id: str

    def trajectory(self, entry: AgentStep, *, root_record: dict[str, Any] | None,
                   turns_from: str, kind: str = "agent") -> dict[str, Any]:
        steps: list[dict[str, Any]] = list(_input_turns(turns_from))
        subagents: list[dict[str, Any]] = []
        last_model: dict[str, Any] | None = None
        for step in entry.steps:
            if step.type == "model":
                last_model = _model_step(step)
                steps.append(last_model)
            elif step.type == "tool":
                call_id = step.tool_call_id
                asked = {c["tool_call_id"] for c in (last_model or {}).get("tool_calls", [])}
                if last_model is not None and call_id in asked:
                    observation = last_model.setdefault("observation", {"results": []})
                    observation["results"].append(_tool_result(step, call_id))
                    continue
                call_id = call_id or f"call_{step.id}"
                steps.append({
                    "source": "agent",
                    "message": "",
                    "llm_call_count": 0,
                    "tool_calls": [{"tool_call_id": call_id, "function_name": step.name,
                                    "arguments": _arguments(step.input)}],
                    "observation": {"results": [_tool_result(step, call_id)]},
                })
                last_model = None
            elif step.type in _ACTIVATIONS and step.id in self.entries:
                sub = self.entries[step.id]
                subagents.append(self.trajectory(sub, root_record=None, turns_from=sub.input,
                                                 kind=step.type))
                steps.append({
                    "source": "agent",
                    "message": "",
                    "llm_call_count": 0,
                    "observation": {"results": [{
                        "content": sub.output,
                        "subagent_trajectory_ref": [{"trajectory_id": sub.id,
                                                     "session_id": self.trace_id}],
                    }]},
                    "extra": {EXTRA_KEY: step_to_dict(step)},
                })
                last_model = None
        if not steps:  # ATIF requires at least one step
            steps.append({"source": "system", "message": ""})
        for number, item in enumerate(steps, start=1):
            item["step_id"] = number
            record = to_dict(to_dict(item.get("extra")).get(EXTRA_KEY))
            started = _iso(to_str(to_dict(record.get("basic_info")).get("started_at")))
            if started:
                item["timestamp"] = started
        record = agent_step_to_dict(entry)
        record.pop("steps")
        record.pop("metrics_info")
        record["kind"] = kind  # graph or agent: the step that ran it says, the entry does not
        extra: dict[str, Any] = {EXTRA_KEY: {"agent_step": record}}
        if root_record is not None:
            extra[EXTRA_KEY]["root_step"] = root_record
            extra[EXTRA_KEY]["trace_id"] = self.trace_id
        models = [s.model for s in entry.steps if s.type == "model" and s.model]
        agent: dict[str, Any] = {"name": entry.name or "agent", "version": "unknown"}
        if models:
            agent["model_name"] = models[0]
        totals = [s.model_info for s in entry.steps if s.model_info is not None]
        document: dict[str, Any] = {
            "schema_version": SCHEMA_VERSION,
            "session_id": self.trace_id,
            "trajectory_id": entry.id,
            "agent": agent,
            "steps": steps,
            "final_metrics": {
                "total_prompt_tokens": sum(m.input_tokens for m in totals),
                "total_completion_tokens": sum(m.output_tokens for m in totals),
                "total_cached_tokens": sum(m.input_read_cached_tokens for m in totals),
                "total_steps": len(steps),
            },
            "extra": extra,
        }
        if subagents:
            document["subagent_trajectories"] = subagents
        cleaned: dict[str, Any] = _without_none(document)
        return cleaned


def _without_none(value: Any) -> Any:
    """ATIF writers leave out absent optional fields (`exclude_none`)."""
    if isinstance(value, dict):
        return {k: _without_none(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [_without_none(v) for v in value]
    return value


def to_atif(trajectory: Trajectory) -> dict[str, Any]:
    """One trajectory as one ATIF document (see the module doc)."""
    entries = {a.id: a for a in trajectory.agent_steps}
    exporter = _Exporter(entries=entries, trace_id=trajectory.id)
    root = trajectory.root_step
    root_record = root_step_to_dict(root)
    root_record.pop("metrics_info")
    root_entry = entries.get(root.id)
    root_record["is_entry"] = root_entry is not None
    if root_entry is None:
        # a root that is no agent (e.g. a web request span): its top-level activations are the
        # run's agents, each a sub-agent of a root without steps of its own
        top = [a for a in trajectory.agent_steps if a.parent_id == root.id]
        root_entry = AgentStep(
            id=root.id, parent_id="", name=root.name, input=root.input, output=root.output,
            basic_info=root.basic_info, metrics_info=root.metrics_info,
            steps=[Step(id=a.id, parent_id=root.id, type="agent", name=a.name, input=a.input,
                        output=a.output, basic_info=a.basic_info, metadata=dict(a.metadata))
                   for a in top],
            metadata=dict(root.metadata),
        )
    return exporter.trajectory(root_entry, root_record=root_record, turns_from=root.input)


# ---------------------------------------------------------------------------------------------
# ATIF -> OTLP spans


def key_value(key: str, value: Any) -> KeyValue:
    """An OTLP attribute: a bool, int or float as itself, a string as is, anything else as JSON."""
    if isinstance(value, bool):
        return KeyValue(key=key, value=AnyValue(bool_value=value))
    if isinstance(value, int):
        return KeyValue(key=key, value=AnyValue(int_value=value))
    if isinstance(value, float):
        return KeyValue(key=key, value=AnyValue(double_value=value))
    text = value if isinstance(value, str) else orjson.dumps(value).decode()
    return KeyValue(key=key, value=AnyValue(string_value=text))


def _describe(span: OtlpSpan, attributes: Mapping[str, Any],
              error: Mapping[str, Any] | None) -> None:
    """Set a built span's attributes (the present ones) and, for an ATIF error, its status."""
    span.attributes.extend(key_value(k, v) for k, v in attributes.items() if v not in (None, ""))
    if error is not None:
        code = to_whole(error.get("code"))
        span.status.CopyFrom(Status(code=_STATUS_ERROR,  # type: ignore[arg-type]
                                    message=to_str(error.get("msg")) or "error"))
        if code is not None and code not in (-1, 0):
            span.attributes.append(key_value("error.type", str(code)))


def _hash(*parts: str) -> bytes:
    return hashlib.sha256("\x1f".join(parts).encode()).digest()


@dataclass
class _Clock:
    """Span times: a step's recorded ones where it has them, else its ATIF timestamp, else the
    next free millisecond after the previous step."""

    next_ns: int

    def place(self, started_ms: int | None, duration_ms: int | None, timestamp: str | None
              ) -> tuple[int, int]:
        start = started_ms * _NS_PER_MS if started_ms is not None else None
        if start is None and timestamp:
            try:
                moment = datetime.fromisoformat(timestamp.replace("Z", "+00:00"))
                start = int(moment.timestamp() * 1000) * _NS_PER_MS
            except ValueError:
                start = None
        if start is None:
            start = self.next_ns
        end = start + max(duration_ms if duration_ms is not None else 1, 0) * _NS_PER_MS
        self.next_ns = max(self.next_ns, end) + _NS_PER_MS
        return start, end


@dataclass
class _Importer:
    trace_id: bytes
    clock: _Clock
    spans: list[OtlpSpan] = field(default_factory=list)
    count: int = 0
    #: the agent's model: "omission implies the model defined in the root-level agent config"
    default_model: str = ""

    def span_id(self, *path: str) -> bytes:
        self.count += 1
        return _hash(self.trace_id.hex(), *path, str(self.count))[:8]

    def add(self, name: str, parent: bytes, start: int, end: int, kind: int,
            attributes: Mapping[str, Any], error: Mapping[str, Any] | None = None) -> bytes:
        span_id = self.span_id(name)
        span = OtlpSpan(trace_id=self.trace_id, span_id=span_id, parent_span_id=parent,
                        name=name, kind=kind,  # type: ignore[arg-type]
                        start_time_unix_nano=start, end_time_unix_nano=max(end, start))
        _describe(span, attributes, error)
        self.spans.append(span)
        return span_id

    # -- one ATIF trajectory (an agent activation) --

    def agent(self, document: Mapping[str, Any], parent: bytes, embedded: Mapping[str, Any],
              path: str) -> tuple[int, int]:
        """Spans for one ATIF trajectory under `parent`; returns the activation's (start, end)."""
        extra = to_dict(to_dict(document.get("extra")).get(EXTRA_KEY))
        record = to_dict(extra.get("agent_step"))
        agent_info = to_dict(document.get("agent"))
        name = to_str(record.get("name")) or to_str(agent_info.get("name")) or "agent"
        steps = [to_dict(s) for s in to_list(document.get("steps"))]
        if not steps:
            raise AtifError(f"{path}.steps: an ATIF trajectory has at least one step")
        basic = to_dict(record.get("basic_info"))
        start, end = self.clock.place(to_whole(basic.get("started_at")),
                                      to_whole(basic.get("duration")),
                                      to_str(steps[0].get("timestamp")) or None)
        self.clock.next_ns = start + _NS_PER_MS  # its steps run inside it
        graph = to_str(record.get("kind")) == "graph"
        operation = "invoke_workflow" if graph else "invoke_agent"
        placeholder = len(self.spans)
        self.spans.append(OtlpSpan())  # filled in once the steps' times are known
        span_id = self.span_id("agent", name)
        conversation: list[dict[str, Any]] = []
        outer_model, self.default_model = (self.default_model,
                                           to_str(agent_info.get("model_name")))
        for index, step in enumerate(steps):
            self.step(step, span_id, conversation, embedded, f"{path}.steps[{index}]")
        self.default_model = outer_model
        end = max(end, self.clock.next_ns - _NS_PER_MS)
        turns = [m for m in conversation if m["role"] in ("user", "system")]
        input_text = to_str(record.get("input"))
        if not input_text and turns:
            input_text = orjson.dumps(turns).decode()
        outputs = [s for s in steps if to_str(s.get("source")) == "agent" and s.get("message")]
        output_text = to_str(record.get("output")) or (
            orjson.dumps([{"role": "assistant", "content": _text(outputs[-1].get("message"))}])
            .decode() if outputs else "")
        attributes: dict[str, Any] = {
            "gen_ai.operation.name": operation,
            "gen_ai.workflow.name" if graph else "gen_ai.agent.name": name,
            "gen_ai.input.messages": input_text,
            "gen_ai.output.messages": output_text,
            "gen_ai.conversation.id": to_str(document.get("session_id")),
            "atif.trajectory_id": to_str(document.get("trajectory_id")),
        }
        error = to_dict(basic.get("error")) or None
        built = OtlpSpan(trace_id=self.trace_id, span_id=span_id, parent_span_id=parent,
                         name=f"{operation} {name}", kind=_INTERNAL,  # type: ignore[arg-type]
                         start_time_unix_nano=start, end_time_unix_nano=end)
        _describe(built, attributes, error)
        self.spans[placeholder] = built
        return start, end

    def step(self, step: Mapping[str, Any], parent: bytes, conversation: list[dict[str, Any]],
             embedded: Mapping[str, Any], path: str) -> None:
        source = to_str(step.get("source"))
        message = step.get("message")
        record = to_dict(to_dict(step.get("extra")).get(EXTRA_KEY))
        if source in ("user", "system"):
            conversation.append({"role": source, "content": _text(message)})
        calls = [to_dict(c) for c in to_list(step.get("tool_calls"))]
        results = [to_dict(r) for r in to_list(to_dict(step.get("observation")).get("results"))]
        is_model = source == "agent" and step.get("llm_call_count") != 0
        if record.get("type") in _ACTIVATIONS:
            is_model = False
        if is_model:
            self.model(step, record, parent, conversation, calls)
        by_call = {to_str(c.get("tool_call_id")): c for c in calls}
        for index, result in enumerate(results):
            refs = [to_dict(r) for r in to_list(result.get("subagent_trajectory_ref"))]
            if refs:
                for ref in refs:
                    self.subagent(ref, parent, embedded, result, f"{path}.observation")
                continue
            call = by_call.get(to_str(result.get("source_call_id")), {})
            if not call and not to_dict(result.get("extra")).get(EXTRA_KEY):
                # feedback that answers no call of this step (a system event, the environment's
                # output): part of the conversation, not a tool call
                conversation.append({"role": "user", "content": _text(result.get("content"))})
                continue
            self.tool(call, result, parent, conversation, f"{path}.observation.results[{index}]")
        answered = {to_str(r.get("source_call_id")) for r in results}
        if not is_model:
            for call in calls:  # a dispatch without a recorded result
                if to_str(call.get("tool_call_id")) not in answered:
                    self.tool(call, {}, parent, conversation, path)

    def model(self, step: Mapping[str, Any], record: Mapping[str, Any], parent: bytes,
              conversation: list[dict[str, Any]], calls: Sequence[Mapping[str, Any]]) -> None:
        basic = to_dict(record.get("basic_info"))
        start, end = self.clock.place(to_whole(basic.get("started_at")),
                                      to_whole(basic.get("duration")),
                                      to_str(step.get("timestamp")) or None)
        metrics = to_dict(step.get("metrics"))
        metrics_extra = to_dict(metrics.get("extra"))
        info = to_dict(record.get("model_info"))
        model = (to_str(step.get("model_name"))
                 or to_str(to_dict(record.get("metadata")).get("model_name"))
                 or self.default_model)
        assistant: dict[str, Any] = {"role": "assistant", "content": _text(step.get("message"))}
        if calls:
            assistant["tool_calls"] = [
                {"id": to_str(c.get("tool_call_id")), "name": to_str(c.get("function_name")),
                 "arguments": to_dict(c.get("arguments"))} for c in calls]
        input_text = to_str(record.get("input")) or orjson.dumps(conversation).decode()
        output_text = to_str(record.get("output")) or orjson.dumps(assistant).decode()
        latency = to_float(info.get("latency_first_resp"))

        def count(record_key: str, value: Any) -> int | None:
            recorded = to_whole(info.get(record_key))
            return recorded if recorded is not None else to_whole(value)

        name = to_str(record.get("name")) or f"chat {model}".strip()
        self.add(name, parent, start, end, _CLIENT, {
            "gen_ai.operation.name": "chat",
            "gen_ai.request.model": model,
            "gen_ai.response.model": model,
            "gen_ai.input.messages": input_text,
            "gen_ai.output.messages": f"[{output_text}]" if output_text.startswith("{")
            else output_text,
            "gen_ai.usage.input_tokens": count("input_tokens", metrics.get("prompt_tokens")),
            "gen_ai.usage.output_tokens": count("output_tokens",
                                                metrics.get("completion_tokens")),
            "gen_ai.usage.cache_read.input_tokens": count("input_read_cached_tokens",
                                                          metrics.get("cached_tokens")),
            "gen_ai.usage.cache_creation.input_tokens": count(
                "input_creation_cached_tokens", metrics_extra.get("cache_creation_tokens")),
            "gen_ai.usage.reasoning.output_tokens": count(
                "reasoning_tokens", metrics_extra.get("reasoning_tokens")),
            "gen_ai.response.time_to_first_chunk": latency / 1000 if latency else None,
        }, to_dict(basic.get("error")) or None)
        conversation.append(assistant)

    def tool(self, call: Mapping[str, Any], result: Mapping[str, Any], parent: bytes,
             conversation: list[dict[str, Any]], path: str) -> None:
        record = to_dict(to_dict(result.get("extra")).get(EXTRA_KEY))
        basic = to_dict(record.get("basic_info"))
        name = to_str(record.get("name")) or to_str(call.get("function_name"))
        if not name:
            raise AtifError(f"{path}: a tool result whose call names no function")
        call_id = to_str(result.get("source_call_id")) or to_str(call.get("tool_call_id"))
        if record:
            call_id = to_str(to_dict(record.get("metadata")).get("tool_call_id"))
        start, end = self.clock.place(to_whole(basic.get("started_at")),
                                      to_whole(basic.get("duration")), None)
        content = result.get("content")
        output = to_str(record.get("output")) if record else (
            content if isinstance(content, str) else _text(content))
        arguments = to_str(record.get("input")) if record else orjson.dumps(
            to_dict(call.get("arguments"))).decode()
        self.add(f"execute_tool {name}", parent, start, end, _INTERNAL, {
            "gen_ai.operation.name": "execute_tool",
            "gen_ai.tool.name": name,
            "gen_ai.tool.call.id": call_id,
            "gen_ai.tool.call.arguments": arguments,
            "gen_ai.tool.call.result": output,
        }, to_dict(basic.get("error")) or None)
        conversation.append({"role": "tool", "content": output, "tool_call_id": call_id,
                             "name": name})

    def subagent(self, ref: Mapping[str, Any], parent: bytes, embedded: Mapping[str, Any],
                 result: Mapping[str, Any], path: str) -> None:
        target = to_str(ref.get("trajectory_id"))
        document = embedded.get(target)
        if document is not None:
            nested = {to_str(to_dict(s).get("trajectory_id")): to_dict(s)
                      for s in to_list(to_dict(document).get("subagent_trajectories"))}
            self.agent(to_dict(document), parent, {**embedded, **nested}, f"{path}[{target}]")
            return
        # referenced, not embedded (a file of its own): an agent whose steps are not here,
        # as a remote agent is (docs/conventions.md §1.5)
        name = to_str(to_dict(ref.get("extra")).get("agent_name")) or target or to_str(
            ref.get("trajectory_path")) or "subagent"
        start, end = self.clock.place(None, None, None)
        self.add(f"invoke_agent {name}", parent, start, end, _CLIENT, {
            "gen_ai.operation.name": "invoke_agent",
            "gen_ai.agent.name": name,
            "gen_ai.output.messages": to_str(result.get("content")),
            "atif.trajectory_path": to_str(ref.get("trajectory_path")),
        })


def _check(document: Mapping[str, Any]) -> None:
    version = to_str(document.get("schema_version"))
    if version not in READ_VERSIONS:
        raise AtifError(
            f"schema_version: {version!r} is not an ATIF version trajhub reads "
            f"({READ_VERSIONS[0]} … {READ_VERSIONS[-1]})")
    if not isinstance(document.get("agent"), Mapping):
        raise AtifError("agent: an ATIF trajectory names its agent (an object)")
    if not isinstance(document.get("steps"), list) or not document["steps"]:
        raise AtifError("steps: an ATIF trajectory has a non-empty list of steps")
    for index, step in enumerate(document["steps"]):
        if not isinstance(step, Mapping):
            raise AtifError(f"steps[{index}]: a step is an object")
        if step.get("source") not in ("user", "system", "agent"):
            raise AtifError(f"steps[{index}].source: one of user, system, agent")


def from_atif(document: Any, start_ns: int) -> tuple[str, ExportTraceServiceRequest]:
    """One ATIF document as (trace id, the OTLP request of its spans). `start_ns` places a
    document that records no times. Raises AtifError naming what is wrong."""
    if not isinstance(document, Mapping):
        raise AtifError("an ATIF trajectory is a JSON object")
    _check(document)
    trace_id = _hash("atif", orjson.dumps(document, option=orjson.OPT_SORT_KEYS).decode())[:16]
    importer = _Importer(trace_id=trace_id, clock=_Clock(next_ns=start_ns))
    embedded = {to_str(to_dict(s).get("trajectory_id")): to_dict(s)
                for s in to_list(document.get("subagent_trajectories"))}
    extra = to_dict(to_dict(document.get("extra")).get(EXTRA_KEY))
    root = to_dict(extra.get("root_step"))
    if root and root.get("is_entry") is False:
        # the original root was no agent: a plain span, its activations under it
        basic = to_dict(root.get("basic_info"))
        start, end = importer.clock.place(to_whole(basic.get("started_at")),
                                          to_whole(basic.get("duration")), None)
        importer.clock.next_ns = start
        root_id = importer.add(to_str(root.get("name")) or "run", b"", start, end, _INTERNAL, {
            "atif.session_id": to_str(document.get("session_id")),
            "input.value": to_str(root.get("input")),
            "output.value": to_str(root.get("output")),
        }, to_dict(basic.get("error")) or None)
        conversation: list[dict[str, Any]] = []
        for index, step in enumerate(to_list(document.get("steps"))):
            importer.step(to_dict(step), root_id, conversation, embedded, f"steps[{index}]")
    else:
        importer.agent(document, b"", embedded, "$")
    request = ExportTraceServiceRequest()
    resource_spans = request.resource_spans.add()
    resource_spans.resource.attributes.append(key_value("service.name", IMPORT_SERVICE))
    scope_spans = resource_spans.scope_spans.add()
    scope_spans.scope.name = IMPORT_SCOPE
    scope_spans.scope.version = SCHEMA_VERSION
    scope_spans.spans.extend(importer.spans)
    return trace_id.hex(), request
