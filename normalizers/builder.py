"""The trajectory builder: spans of one trace → one trajectory (docs/trajectory-rules.md §2–8).

The builder knows nothing about attribute names. `derive` runs named phases:

1. `_Trace`: deduplicate spans, resolve parents, break cycles;
2. `_read_all`: read every span with the first convention that detects it
   (`normalizers.conventions.CONVENTIONS`);
3. `_shape`: pick the root, keep/drop, re-parent to the nearest kept ancestor (§2);
4. `_canonical_payloads`: inputs and outputs in the forms of §8 (`normalizers.payloads`);
5. `multiagent.apply`: sub-agents, handoffs, routing "errors", the run's error (§7);
6. `_nodes`, `_arrange`, `_trajectory`: the output pieces, the agent steps and their own steps,
   the document with its metrics (§3, §5);
7. `_explain`, `_summarize`: the per-span explanation and the summary columns.

Everything is a pure function of the *set* of spans: no step depends on arrival order, so the
output is byte-identical whatever the batching (§6).
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import field
from typing import Any

import orjson

from trajhub.normalizers import interrupts, multiagent, payloads
from trajhub.normalizers.immutable import immutable
from trajhub.normalizers.lifecycle import is_null_id
from trajhub.normalizers.model import KeptTree, Span
from trajhub.normalizers.reading import Convention, ModelUsage, SpanReading, StepKind
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
    round_rate,
    trajectory_to_json,
)

_NS_PER_MS = 1_000_000
#: token counts above this are garbage (a sum of them must still fit in int64)
_MAX_COUNT = 2**40
_AGENTISH = (StepKind.AGENT, StepKind.GRAPH)
_CALLS = (StepKind.MODEL, StepKind.TOOL)
#: frameworks from most to least specific: a LangGraph run is made of LangChain runs, so a trace
#: with both is a LangGraph trace
_FRAMEWORK_PRIORITY = ("langgraph", "eino", "langchain")
#: reading metadata by which a convention says a span's own end time is meaningless (Eino apmplus
#: ends an ADK agent span as soon as the agent starts): its subtree's end is used instead
_END_UNRELIABLE = "end_time_unreliable"


class DerivationError(Exception):
    """The input cannot give any trajectory at all (e.g. no spans). Odd-but-usable input never
    raises: it gives a trajectory plus warnings."""


@immutable
class SpanExplanation:
    """Why one span became what it became (for `/explain`)."""

    span_id: str
    name: str
    parent_span_id: str  # as sent
    kind: str  # agent | graph | model | tool | other | root
    convention: str
    rule: str
    kept: bool
    new_parent_id: str  # nearest kept ancestor; "" for the root and for dropped spans
    warnings: list[str] = field(default_factory=list)


@immutable
class DerivedSummary:
    """What the normalizer derives for the trajectory list: the attributes that
    trajhub.records.trajectories declares as filled by the summary
    (`Stored(written_by="summary")`), by the same names. Pure values: how they are stored and
    served is the declaration's."""

    framework: str
    conventions: list[str]
    root_name: str
    root_input: str
    root_output: str
    agent_names: list[str]
    tool_names: list[str]
    model_names: list[str]
    #: the root's start (Unix ns)
    start_ns: int
    duration_ms: int
    step_count: int
    model_step_count: int
    tool_step_count: int
    input_tokens: int
    output_tokens: int
    failed_model_steps: int
    failed_tool_steps: int
    has_error: bool
    #: LangGraph's interrupt() ended the run (docs/trajectory-rules.md, "Interrupted runs")
    interrupted: bool


@immutable
class Derivation:
    trajectory: Trajectory
    explanation: list[SpanExplanation]
    warnings: list[str]
    summary: DerivedSummary

    def to_json(self) -> bytes:
        """The trajectory's deterministic JSON bytes."""
        return trajectory_to_json(self.trajectory)


def order_key(span: Span) -> tuple[int, int, str]:
    """The one total order used everywhere: (start, end, span id)."""
    return (span.start_ns, span.end_ns, span.span_id)


# ---------------------------------------------------------------------------------------------
# the trace, cleaned up


def _canonical(span: Span) -> bytes:
    """A byte form of a span that does not depend on attribute insertion order, to choose between
    differing copies of a duplicated span id deterministically."""
    return orjson.dumps(
        {
            "trace": span.trace_id,
            "kind": span.kind,
            "scope": [span.scope_name, span.scope_version],
            "resource": _plain(span.resource),
            "name": span.name,
            "parent": span.parent_span_id,
            "start": span.start_ns,
            "end": span.end_ns,
            "status": [span.status_code, span.status_message],
            "attributes": _plain(span.attributes),
            "events": [[e.name, e.time_ns, _plain(e.attributes)] for e in span.events],
            "cozeloop": repr(span.cozeloop),
        },
        option=orjson.OPT_SORT_KEYS | orjson.OPT_NON_STR_KEYS,
        default=_plain_default,
    )


def _plain(value: Any) -> Any:
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, bytes):
        return value.hex()
    if isinstance(value, int) and not isinstance(value, bool) and abs(value) >= 2**63:
        return str(value)
    if isinstance(value, float) and not math.isfinite(value):
        return repr(value)
    return value


def _plain_default(value: object) -> str:
    return repr(value)


class _Trace:
    """The deduplicated spans of one trace with resolved, acyclic parents; also the `TraceView`
    conventions see."""

    def __init__(self, spans: Sequence[Span], warnings: list[str]) -> None:
        copies: dict[str, list[Span]] = {}
        for span in spans:
            copies.setdefault(span.span_id, []).append(span)
        self.by_id: dict[str, Span] = {}
        for span_id in sorted(copies):
            group = copies[span_id]
            if len(group) > 1:
                distinct = {_canonical(s) for s in group}
                if len(distinct) > 1:
                    warnings.append(
                        f"span {span_id!r} was received {len(group)} times with different "
                        "content; kept the copy that ended last"
                    )
                # deterministic: prefer an ended span, then the latest end, then the biggest
                # canonical form (so the choice never depends on arrival order)
                group = sorted(group, key=lambda s: (s.end_ns > 0, s.end_ns, _canonical(s)))
            self.by_id[span_id] = group[-1]
        self.ordered: list[Span] = sorted(self.by_id.values(), key=order_key)
        self.span_warnings: dict[str, list[str]] = {s.span_id: [] for s in self.ordered}

        self.parent_id: dict[str, str | None] = {}
        for span in self.ordered:
            parent = span.parent_span_id
            if is_null_id(parent):
                self.parent_id[span.span_id] = None
            elif parent == span.span_id:
                self.parent_id[span.span_id] = None
                self.span_warnings[span.span_id].append("span is its own parent")
            elif parent not in self.by_id:
                self.parent_id[span.span_id] = None
                self.span_warnings[span.span_id].append(f"parent {parent} is not in the trace")
            else:
                self.parent_id[span.span_id] = parent
        self._break_cycles(warnings)

        self._children: dict[str, list[Span]] = {s.span_id: [] for s in self.ordered}
        for span in self.ordered:  # already in order_key order, so children lists are sorted
            parent_id = self.parent_id[span.span_id]
            if parent_id is not None:
                self._children[parent_id].append(span)

    def _break_cycles(self, warnings: list[str]) -> None:
        done: set[str] = set()
        for span in self.ordered:
            path: list[str] = []
            on_path: set[str] = set()
            current: str | None = span.span_id
            while current is not None and current not in done:
                if current in on_path:
                    cycle = path[path.index(current) :]
                    # cut the cycle at its earliest span, which then becomes parentless
                    cut = min(cycle, key=lambda i: order_key(self.by_id[i]))
                    self.parent_id[cut] = None
                    self.span_warnings[cut].append("parent cycle broken here")
                    warnings.append(f"parent cycle through {len(cycle)} spans broken at {cut}")
                    break
                path.append(current)
                on_path.add(current)
                current = self.parent_id[current]
            done.update(path)

    # TraceView
    def span(self, span_id: str) -> Span | None:
        return self.by_id.get(span_id)

    def parent(self, span: Span) -> Span | None:
        parent_id = self.parent_id.get(span.span_id)
        return self.by_id.get(parent_id) if parent_id is not None else None

    def children(self, span: Span) -> Sequence[Span]:
        return tuple(self._children.get(span.span_id, ()))

    def all_spans(self) -> Sequence[Span]:
        return tuple(self.ordered)

    def subtree_end_ns(self, span: Span) -> int:
        """The latest end of `span` and all its descendants (parents are acyclic by now)."""
        end = span.end_ns
        stack = list(self._children[span.span_id])
        while stack:
            child = stack.pop()
            end = max(end, child.end_ns)
            stack.extend(self._children[child.span_id])
        return end


# ---------------------------------------------------------------------------------------------
# reading


def _read(span: Span, trace: _Trace, conventions: Sequence[Convention]) -> SpanReading:
    from trajhub.normalizers.conventions import FALLBACK

    for convention in conventions:
        try:
            detected = convention.detect(span)
        except Exception as exc:
            trace.span_warnings[span.span_id].append(
                f"{convention.name}.detect failed: {type(exc).__name__}"
            )
            continue
        if not detected:
            continue
        try:
            return convention.read(span, trace)
        except Exception as exc:
            reading = FALLBACK.read(span, trace)
            trace.span_warnings[span.span_id].append(
                f"{convention.name}.read failed: {type(exc).__name__}; read as other"
            )
            return reading
    return FALLBACK.read(span, trace)


# ---------------------------------------------------------------------------------------------
# the pieces of the output


def _ms(ns: int) -> int:
    return max(0, ns) // _NS_PER_MS


def _latency_ms(value: float | None, warnings: list[str]) -> str:
    """Whole milliseconds (rounded), "" when unknown or nonsensical."""
    if value is None:
        return ""
    if not math.isfinite(value) or value < 0:
        warnings.append(f"first-response latency {value!r} ignored")
        return ""
    return str(math.floor(value + 0.5))


def _count(value: int | None, what: str, warnings: list[str]) -> int:
    if value is None:
        return 0
    if value < 0:
        warnings.append(f"negative {what} {value} ignored")
        return 0
    if value > _MAX_COUNT:  # no real count is this big, and JSON consumers need int64
        warnings.append(f"implausible {what} {value} ignored")
        return 0
    return value


def _model_info(usage: ModelUsage | None, warnings: list[str]) -> ModelInfo:
    if usage is None:
        return ModelInfo()
    return ModelInfo(
        input_tokens=_count(usage.input_tokens, "input tokens", warnings),
        output_tokens=_count(usage.output_tokens, "output tokens", warnings),
        latency_first_resp=_latency_ms(usage.latency_first_resp_ms, warnings),
        reasoning_tokens=_count(usage.reasoning_tokens, "reasoning tokens", warnings),
        input_read_cached_tokens=_count(usage.cache_read_tokens, "cache read tokens", warnings),
        input_creation_cached_tokens=_count(
            usage.cache_write_tokens, "cache write tokens", warnings
        ),
    )


@immutable
class _Node:
    """One kept span with everything the output needs."""

    span: Span
    reading: SpanReading
    new_parent_id: str
    metadata: dict[str, str]
    model_info: ModelInfo | None
    #: the span's end, or its subtree's when the convention calls its own end unreliable
    end_ns: int

    @property
    def kind(self) -> StepKind:
        return self.reading.kind

    @property
    def duration_ns(self) -> int:
        return max(0, self.end_ns - self.span.start_ns)


def _basic_info(node: _Node) -> BasicInfo:
    error = node.reading.error
    return BasicInfo(
        started_at=str(_ms(node.span.start_ns)),
        duration=str(_ms(node.duration_ns)),
        error=StepError(code=error.code, msg=error.message) if error is not None else None,
    )


def _metadata(span: Span, reading: SpanReading, orphan: bool) -> dict[str, str]:
    meta = {str(k): str(v) for k, v in reading.metadata.items()}
    meta["convention"] = reading.convention
    if reading.framework:
        meta["framework"] = reading.framework
    if reading.error is not None and reading.error.traceback:
        meta["error_traceback"] = reading.error.traceback
    if orphan:
        meta["orphan"] = "true"
    return meta


def _entry(node: _Node) -> EntryFields:
    reading = node.reading
    return EntryFields(id=node.span.span_id, name=reading.name, input=reading.input,
                       output=reading.output, basic_info=_basic_info(node), metadata=node.metadata)


def _step(node: _Node) -> Step:
    kind = node.reading.kind
    return Step(**_entry(node), parent_id=node.new_parent_id, type=kind.value,
                model_info=node.model_info if kind is StepKind.MODEL else None)


def _metrics(nodes: Sequence[_Node]) -> MetricsInfo:
    """The metrics of §5 over a set of steps (agent and graph steps do not count)."""
    models = [n for n in nodes if n.kind is StepKind.MODEL]
    tools = [n for n in nodes if n.kind is StepKind.TOOL]

    def errors(group: list[_Node]) -> dict[str, list[str]]:
        out: dict[str, list[str]] = {}
        for n in group:
            if n.reading.error is not None:
                out.setdefault(str(n.reading.error.code), []).append(n.span.span_id)
        return out

    def rate(part: int, whole: int) -> float:
        return round_rate(part / whole) if whole else 0.0

    model_errors = errors(models)
    tool_errors = errors(tools)
    return MetricsInfo(
        # summed from exact times, then truncated once (Coze Loop sums truncated ms, losing
        # every sub-ms call)
        llm_duration=str(_ms(sum(n.span.duration_ns for n in models))),
        tool_duration=str(_ms(sum(n.span.duration_ns for n in tools))),
        tool_errors=tool_errors,
        tool_error_rate=rate(sum(len(v) for v in tool_errors.values()), len(tools)),
        model_errors=model_errors,
        model_error_rate=rate(sum(len(v) for v in model_errors.values()), len(models)),
        tool_step_proportion=rate(len(tools), len(models) + len(tools)),
        input_tokens=sum(n.model_info.input_tokens for n in models if n.model_info),
        output_tokens=sum(n.model_info.output_tokens for n in models if n.model_info),
    )


def _framework(readings: Sequence[SpanReading]) -> str:
    found = {r.framework for r in readings if r.framework}
    for name in _FRAMEWORK_PRIORITY:
        if name in found:
            return name
    return min(found) if found else ""


# ---------------------------------------------------------------------------------------------
# the phases of derive


@immutable
class _Shape:
    """Which spans are kept, and under which kept ancestor (§2)."""

    root: Span
    #: kept span id -> its nearest kept ancestor ("" for the root)
    new_parent: dict[str, str]
    #: kept span id -> its way up crossed an orphan subtree (hung under the root)
    orphan: dict[str, bool]


def _choose_trace_id(trace: _Trace, warnings: list[str]) -> str:
    trace_ids = Counter(s.trace_id for s in trace.ordered)
    if len(trace_ids) > 1:
        warnings.append(f"spans of {len(trace_ids)} different traces; used the most common id")
    return min(trace_ids, key=lambda t: (-trace_ids[t], t))


def _read_all(trace: _Trace, conventions: Sequence[Convention]) -> dict[str, SpanReading]:
    return {s.span_id: _read(s, trace, conventions) for s in trace.ordered}


def _shape(trace: _Trace, readings: Mapping[str, SpanReading], warnings: list[str]) -> _Shape:
    """Root, keep/drop and re-parenting. The root is the earliest parentless span; the other
    parentless subtrees hang under it (§2)."""
    parentless = [s for s in trace.ordered if trace.parent_id[s.span_id] is None]
    root = parentless[0]  # never empty: parents are acyclic, so some span has none
    orphan_heads = {s.span_id for s in parentless[1:]}
    for head in sorted(orphan_heads):
        trace.span_warnings[head].append("orphan span: no parent in the trace; hung under the root")
    if orphan_heads:
        warnings.append(f"{len(orphan_heads)} orphan subtree(s) hung under the root")

    def effective_parent(span_id: str) -> str | None:
        if span_id in orphan_heads:
            return root.span_id
        return trace.parent_id[span_id]

    def is_kept(span_id: str) -> bool:
        return span_id == root.span_id or readings[span_id].kind is not StepKind.OTHER

    # nearest kept ancestor, and whether the way there leaves an orphan subtree (iterative:
    # deep chains must not hit the recursion limit)
    new_parent: dict[str, str] = {root.span_id: ""}
    orphan: dict[str, bool] = {root.span_id: False}
    for span in trace.ordered:
        span_id = span.span_id
        if span_id == root.span_id or not is_kept(span_id):
            continue
        crossed = span_id in orphan_heads
        current = effective_parent(span_id)
        while current is not None and not is_kept(current):
            crossed = crossed or current in orphan_heads
            current = effective_parent(current)
        new_parent[span_id] = current if current is not None else root.span_id
        orphan[span_id] = crossed
    return _Shape(root=root, new_parent=new_parent, orphan=orphan)


def _canonical_payloads(
    readings: Mapping[str, SpanReading], shape: _Shape
) -> dict[str, SpanReading]:
    """Every kept span's payloads in the forms of §8 (`normalizers.payloads`). Models go
    first: the tool calls they asked for give the tools their arguments."""
    out = dict(readings)
    arguments: dict[str, Any] = {}
    kept = [i for i in shape.new_parent if i != shape.root.span_id]
    for span_id in kept:
        if readings[span_id].kind is StepKind.MODEL:
            out[span_id] = payloads.canonical(readings[span_id], as_state=False, arguments={})
            arguments.update(payloads.call_arguments(out[span_id].output))
    for span_id in kept:
        if readings[span_id].kind is not StepKind.MODEL:
            out[span_id] = payloads.canonical(
                readings[span_id], as_state=False, arguments=arguments
            )
    root = readings[shape.root.span_id]
    # the root is read as a run, unless it is itself a model or tool call
    out[shape.root.span_id] = payloads.canonical(
        root, as_state=root.kind not in _CALLS, arguments=arguments
    )
    return out


def _nodes(
    trace: _Trace, readings: Mapping[str, SpanReading], shape: _Shape
) -> dict[str, _Node]:
    """Every kept span with its output pieces, in order_key order."""
    nodes: dict[str, _Node] = {}
    for span in trace.ordered:
        span_id = span.span_id
        if span_id not in shape.new_parent:
            continue
        reading = readings[span_id]
        span_warnings = trace.span_warnings[span_id]
        model_info = None
        if reading.kind is StepKind.MODEL:
            model_info = _model_info(reading.usage, span_warnings)
            usage = reading.usage
            no_usage = usage is None or (usage.input_tokens is None and usage.output_tokens is None)
            # a failed call legitimately has no usage; a successful one without it is a gap
            if no_usage and reading.error is None:
                span_warnings.append("model span without token usage")
        nodes[span_id] = _Node(
            span=span,
            reading=reading,
            new_parent_id=shape.new_parent[span_id],
            metadata=_metadata(span, reading, shape.orphan[span_id]),
            model_info=model_info,
            end_ns=(
                trace.subtree_end_ns(span)
                if reading.metadata.get(_END_UNRELIABLE) == "true"
                else span.end_ns
            ),
        )
    return nodes


def _arrange(nodes: Mapping[str, _Node], root_id: str) -> list[tuple[_Node, list[_Node]]]:
    """The agent step entries (§3), each with its own steps in depth-first pre-order,
    stopping at nested agents and graphs."""
    kept_children: dict[str, list[_Node]] = {span_id: [] for span_id in nodes}
    for span_id, node in nodes.items():  # nodes are in order_key order
        if span_id != root_id:
            kept_children[node.new_parent_id].append(node)

    root_node = nodes[root_id]
    root_is_entry = root_node.kind in _AGENTISH or any(
        c.kind in _CALLS for c in kept_children[root_id]
    )

    def own_steps(entry: _Node) -> list[_Node]:
        out: list[_Node] = []
        stack = list(reversed(kept_children[entry.span.span_id]))
        while stack:
            node = stack.pop()
            out.append(node)
            if node.kind not in _AGENTISH:
                stack.extend(reversed(kept_children[node.span.span_id]))
        return out

    return [
        (n, own_steps(n))
        for n in nodes.values()
        if (n.span.span_id == root_id and root_is_entry)
        or (n.span.span_id != root_id and n.kind in _AGENTISH)
    ]


def _trajectory(
    trace_id: str, root_node: _Node, entries: Sequence[tuple[_Node, list[_Node]]]
) -> tuple[Trajectory, list[_Node]]:
    """The output document, and every step of it once (for the root's metrics and summary)."""
    agent_steps: list[AgentStep] = []
    all_steps: dict[str, _Node] = {}
    for entry, own in entries:
        for node in own:
            all_steps.setdefault(node.span.span_id, node)
        agent_steps.append(AgentStep(**_entry(entry), parent_id=entry.new_parent_id,
                                     metrics_info=_metrics(own), steps=[_step(n) for n in own]))
    steps = list(all_steps.values())
    trajectory = Trajectory(
        id=trace_id,
        root_step=RootStep(**_entry(root_node), metrics_info=_metrics(steps)),
        agent_steps=agent_steps,
    )
    return trajectory, steps


def _explain(
    trace: _Trace,
    readings: Mapping[str, SpanReading],
    nodes: Mapping[str, _Node],
    root_id: str,
    warnings: list[str],
) -> list[SpanExplanation]:
    explanation = [
        SpanExplanation(
            span_id=s.span_id,
            name=s.name,
            parent_span_id=s.parent_span_id,
            kind="root" if s.span_id == root_id else readings[s.span_id].kind.value,
            convention=readings[s.span_id].convention,
            rule=readings[s.span_id].rule,
            kept=s.span_id in nodes,
            new_parent_id=nodes[s.span_id].new_parent_id if s.span_id in nodes else "",
            warnings=[*readings[s.span_id].warnings, *trace.span_warnings[s.span_id]],
        )
        for s in trace.ordered
    ]
    for item in explanation:
        warnings.extend(f"{item.span_id} {item.name}: {w}" for w in item.warnings)
    return explanation


def _summarize(
    trajectory: Trajectory,
    readings: Mapping[str, SpanReading],
    nodes: Mapping[str, _Node],
    root_node: _Node,
    steps: Sequence[_Node],
) -> DerivedSummary:
    models = [n for n in steps if n.kind is StepKind.MODEL]
    tools = [n for n in steps if n.kind is StepKind.TOOL]
    root = trajectory.root_step
    return DerivedSummary(
        framework=_framework(list(readings.values())),
        conventions=sorted({r.convention for r in readings.values()}),
        root_name=root.name,
        root_input=root.input,
        root_output=root.output,
        agent_names=list(dict.fromkeys(a.name for a in trajectory.agent_steps)),
        tool_names=sorted({n.reading.name for n in tools}),
        model_names=sorted({m for n in models if (m := n.metadata.get("model_name", ""))}),
        start_ns=max(0, root_node.span.start_ns),
        duration_ms=_ms(root_node.duration_ns),
        step_count=len(steps),
        model_step_count=len(models),
        tool_step_count=len(tools),
        input_tokens=root.metrics_info.input_tokens,
        output_tokens=root.metrics_info.output_tokens,
        failed_model_steps=sum(1 for n in models if n.reading.error is not None),
        failed_tool_steps=sum(1 for n in tools if n.reading.error is not None),
        has_error=any(n.reading.error is not None for n in nodes.values()),
        interrupted=root.metadata.get(interrupts.OUTCOME) == interrupts.INTERRUPTED,
    )


def derive(spans: Sequence[Span], conventions: Sequence[Convention] | None = None) -> Derivation:
    """The trajectory of the spans of ONE trace, given in any order and any batching.

    `conventions` defaults to the registry (`normalizers.conventions.CONVENTIONS`); tests may pass
    their own. Raises DerivationError only when there is no span at all."""
    if conventions is None:
        from trajhub.normalizers.conventions import CONVENTIONS

        conventions = CONVENTIONS
    if not spans:
        raise DerivationError("no spans")

    warnings: list[str] = []
    trace = _Trace(spans, warnings)  # deduplicated, parents resolved, cycles broken
    trace_id = _choose_trace_id(trace, warnings)
    readings = _read_all(trace, conventions)  # each span through its convention
    shape = _shape(trace, readings, warnings)  # root, keep/drop, re-parent
    recorded = readings
    readings = _canonical_payloads(readings, shape)  # inputs and outputs in one form
    kept = KeptTree({i: trace.by_id[i] for i in shape.new_parent}, shape.new_parent,
                    shape.root.span_id)
    readings = multiagent.apply(  # sub-agents, handoffs, routing "errors", the run's error
        readings, recorded, kept)
    nodes = _nodes(trace, readings, shape)  # kept spans with their output pieces
    root_node = nodes[shape.root.span_id]
    entries = _arrange(nodes, shape.root.span_id)  # agent steps and their own steps
    trajectory, steps = _trajectory(trace_id, root_node, entries)
    explanation = _explain(trace, readings, nodes, shape.root.span_id, warnings)
    summary = _summarize(trajectory, readings, nodes, root_node, steps)
    return Derivation(
        trajectory=trajectory, explanation=explanation, warnings=warnings, summary=summary
    )
