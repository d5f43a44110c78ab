"""Multi-agent runs (docs/trajectory-rules.md §7): the rules that need the whole kept tree.

Conventions read one span at a time; who handed off to whom, which "errors" were routing, and
whether the run as a whole failed only show across spans. This phase of `derive` takes the
readings of the kept spans with their nearest kept parents and returns corrected readings:

- a compiled LangGraph graph running inside another run is an agent activation (a sub-agent node,
  a langgraph-supervisor / langgraph-swarm member, an agent invoked from a tool): kind `agent`;
- a handoff tool call (`transfer_to_<agent>` of langgraph-supervisor / langgraph-swarm, Eino ADK's
  `transfer_to_agent`, any tool answering with a `Command(goto=...)`) is marked
  `metadata.handoff = "true"`, `metadata.handoff_to = <agent>`;
- LangGraph routes a handoff by raising `ParentCommand` through the sub-graph that made it; some
  instrumentations record that as an error of the tool, the node and the sub-agent. It is control
  flow, not a failure: the error is dropped and the text kept as `metadata.control_flow`;
- when the run ended in an error that only a step recorded (the root has no error and no output,
  and the run's last call failed), the root carries that error (`metadata.error_from_step`);
- a root whose status says OK but which recorded an `exception` event, while the run's last agent
  or model step failed, carries the event's error (`metadata.error_from_exception_event`);
- a remote agent (`metadata.remote_agent`, set by a convention for an agent invoked over a remote
  service) with no kept step inside it is marked `metadata.inner_steps = "missing"`: it ran
  elsewhere and its own steps were not traced here (docs/conventions.md §1.5);
- a run that LangGraph's `interrupt()` ended is marked interrupted on its root (`interrupts`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence, Set
from dataclasses import replace
from typing import Any, Final

from trajhub.normalizers import interrupts
from trajhub.normalizers.attrs import parse_json
from trajhub.normalizers.model import KeptTree, Span
from trajhub.normalizers.payloads import command_goto
from trajhub.normalizers.reading import ErrorInfo, SpanReading, StepKind
from trajhub.normalizers.span_errors import error_info

#: exceptions LangGraph raises to route, never to fail (langgraph.errors)
_CONTROL_FLOW: Final = ("ParentCommand", "GraphBubbleUp", "GraphInterrupt", "NodeInterrupt",
                        # a GraphInterrupt whose type was not recorded, only its message
                        "(Interrupt(value=")
_HANDOFF_PREFIX: Final = "transfer_to_"
#: Eino ADK's transfer tool: the target is its `agent_name` argument
_EINO_TRANSFER: Final = "transfer_to_agent"


def _is_control_flow(error: ErrorInfo) -> bool:
    text = error.message
    return any(name in text for name in _CONTROL_FLOW) or text.startswith("Command(")


def handoff_target(reading: SpanReading, recorded_output: str, agents: Set[str]) -> str:
    """The agent a tool call hands off to, "" when it is an ordinary tool. `recorded_output`:
    the output as the instrumentation recorded it (the canonical one is the tool message);
    `agents`: the names of the run's agent activations. A tool named `transfer_to_<x>` hands
    off only when `<x>` is one of them (`transfer_to_savings` may well be a banking tool)."""
    if reading.kind is not StepKind.TOOL:
        return ""
    if reading.name == _EINO_TRANSFER:
        arguments = parse_json(reading.input)
        name = arguments.get("agent_name") if isinstance(arguments, dict) else None
        return name if isinstance(name, str) else ""
    goto = command_goto(recorded_output)
    if goto:
        return goto
    target = reading.name.removeprefix(_HANDOFF_PREFIX)
    return target if target != reading.name and target in agents else ""


def _with_metadata(reading: SpanReading, **extra: str) -> SpanReading:
    return replace(reading, metadata={**reading.metadata, **extra})


def _control_flow_only(reading: SpanReading, span: Span) -> SpanReading:
    # LangGraph.js's GraphInterrupt message is its interrupts as pretty JSON, of which the
    # one-line error message keeps only the first line: the span's own texts tell
    if reading.error is None or not (_is_control_flow(reading.error)
                                     or interrupts.records_js_interrupt(span)):
        return reading
    marked = _with_metadata(reading, control_flow=reading.error.message[:500])
    return replace(marked, error=None)


def apply(
    readings: Mapping[str, SpanReading], recorded: Mapping[str, SpanReading], kept: KeptTree
) -> dict[str, SpanReading]:
    """The §7 corrections of the (canonical) `readings` of the `kept` spans. `recorded`: the
    readings as the conventions made them."""
    spans, parent_of, root_id = kept.spans, kept.parent_of, kept.root_id
    out = dict(readings)
    for span_id in parent_of:
        reading = _control_flow_only(out[span_id], spans[span_id])
        nested = span_id != root_id and reading.framework == "langgraph"
        if reading.kind is StepKind.GRAPH and nested:
            reading = replace(reading, kind=StepKind.AGENT, rule=f"{reading.rule}; a sub-agent")
        out[span_id] = reading
    agents = {
        r.name
        for i, r in out.items()
        if i in parent_of and r.kind in (StepKind.AGENT, StepKind.GRAPH)
    }
    for span_id in parent_of:
        target = handoff_target(out[span_id], recorded[span_id].output, agents)
        if target:
            out[span_id] = _with_metadata(out[span_id], handoff="true", handoff_to=target)

    children: dict[str, list[str]] = {span_id: [] for span_id in parent_of}
    for span_id, parent in parent_of.items():
        if parent:
            children[parent].append(span_id)
    for kids in children.values():
        kids.sort(key=lambda i: (spans[i].start_ns, spans[i].end_ns, i))

    for span_id in parent_of:
        out[span_id] = _remote_agent(out[span_id], bool(children[span_id]))

    # an activation that ended by handing off "failed" with the handoff's control flow, which
    # LangGraph.js records without a message: its last own step is the handoff that succeeded
    for span_id in parent_of:
        reading = out[span_id]
        if reading.kind not in (StepKind.AGENT, StepKind.GRAPH) or reading.error is None:
            continue
        calls = [c for c in children[span_id] if out[c].kind in (StepKind.MODEL, StepKind.TOOL)]
        if calls:
            last = out[calls[-1]]
            if last.metadata.get("handoff") == "true" and last.error is None:
                out[span_id] = replace(
                    _with_metadata(reading, control_flow=reading.error.message[:500]), error=None
                )

    out[root_id] = _root_error(out, kept)
    out[root_id] = interrupts.mark(out, recorded, kept)
    return out


def _remote_agent(reading: SpanReading, has_steps: bool) -> SpanReading:
    """A remote agent's inner steps are missing when nothing of the trace ran inside it. One
    with steps inside and nothing else saying it is remote (no server address, no A2A call) is
    an in-process agent: earlier GenAI conventions had one `invoke_agent` span, of kind
    CLIENT, for every agent."""
    metadata = reading.metadata
    if reading.kind is not StepKind.AGENT or metadata.get("remote_agent") != "true":
        return reading
    if not has_steps:
        return _with_metadata(reading, inner_steps="missing")
    if "server_address" in metadata or "remote_protocol" in metadata:
        return reading
    return replace(reading, metadata={k: v for k, v in metadata.items() if k != "remote_agent"})


def _root_error(readings: Mapping[str, SpanReading], kept: KeptTree) -> SpanReading:
    spans, parent_of, root_id = kept.spans, kept.parent_of, kept.root_id
    root = readings[root_id]
    if root.error is not None:
        return root
    by_end = sorted(
        (i for i in parent_of if i != root_id),
        key=lambda i: (spans[i].end_ns, spans[i].start_ns, i),
    )
    # A root exported with status OK (LangSmith exports it when the run starts) that recorded
    # an `exception` event, while the run's last agent or model step failed, is a failed run:
    # the status was written before the run ended, the event after. A handled error (a tool
    # that failed, then succeeded on retry) leaves the last agent or model step successful.
    if any(e.name == "exception" for e in spans[root_id].events):
        steps = [i for i in by_end if readings[i].kind in (StepKind.MODEL, StepKind.AGENT)]
        if steps and readings[steps[-1]].error is not None:
            error = error_info(spans[root_id])
            if not _is_control_flow(error):
                marked = _with_metadata(root, error_from_exception_event=steps[-1])
                return replace(marked, error=error)
    if root.output:
        return root
    calls: Sequence[str] = [i for i in by_end if readings[i].kind in (StepKind.MODEL,
                                                                      StepKind.TOOL)]
    if not calls:
        return root
    last = readings[calls[-1]]
    if last.error is None:
        return root
    extra: dict[str, Any] = {"error_from_step": calls[-1]}
    return replace(_with_metadata(root, **extra), error=last.error)
