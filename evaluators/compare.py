"""Run-to-run comparison: two runs' step sequences aligned, the first point where they diverge,
and the deltas of their path length, tool calls, retries, tokens, duration and failed steps.
Pure; works on playback events (`normalizers.playback.step_events`).

A step's identity for alignment is its type, name and canonical arguments (tool steps; model and
agent steps by type and name). The alignment is a minimum edit script: equal steps match,
a step replaced by another of the same type is `changed` (cost 1), anything else is a
`deleted` step of `a` and an `inserted` step of `b`. The tool calls one model turn asked for may
run in parallel and be recorded in either order, so each run of consecutive tool calls is put
in a canonical order before aligning.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from trajhub.normalizers.playback import StepEvent
from trajhub.records.replay import AlignedPairView, RunMetrics, StepRefView

SAME, CHANGED, INSERTED, DELETED = "same", "changed", "inserted", "deleted"


@dataclass(frozen=True, slots=True)
class Comparison:
    distance: int
    alignment: list[AlignedPairView]
    first_divergence: AlignedPairView | None
    counts: dict[str, int]  # pairs per op
    a: RunMetrics
    b: RunMetrics
    deltas: dict[str, int]  # b − a, per RunMetrics field


def _key(e: StepEvent) -> tuple[str, str, str]:
    return (e.type, e.name, e.arguments_hash or "")


def canonical_order(events: Sequence[StepEvent]) -> list[StepEvent]:
    """`events` with each run of consecutive tool calls of one agent activation (no other
    step between them: the calls one model turn asked for) sorted by (name, arguments)."""
    out: list[StepEvent] = []
    group: list[StepEvent] = []
    for e in events:
        if group and not (e.type == "tool" and e.agent_step_id == group[0].agent_step_id):
            out.extend(sorted(group, key=_key))
            group = []
        if e.type == "tool":
            group.append(e)
        else:
            out.append(e)
    out.extend(sorted(group, key=_key))
    return out


def _ref(e: StepEvent) -> StepRefView:
    return StepRefView(seq=e.seq, step_id=e.step_id, type=e.type, name=e.name, agent=e.agent,
                       arguments_hash=e.arguments_hash)


def align(a: Sequence[StepEvent], b: Sequence[StepEvent]) -> tuple[int, list[AlignedPairView]]:
    """Minimum-cost edit script from `a` to `b` (Levenshtein; substitution only between steps
    of the same type). Computed over suffixes and read from the start, preferring a match,
    then a change, then a deletion, then an insertion: the runs agree for as long as any
    minimal script lets them, so the first divergence is where they really part."""
    n, m = len(a), len(b)
    ka, kb = [_key(e) for e in a], [_key(e) for e in b]

    def substitution(i: int, j: int) -> int:
        if ka[i] == kb[j]:
            return 0
        return 1 if ka[i][0] == kb[j][0] else 2  # 2: never better than delete + insert

    # cost[i][j]: distance between a[i:] and b[j:]
    cost = [[0] * (m + 1) for _ in range(n + 1)]
    for i in range(n, -1, -1):
        for j in range(m, -1, -1):
            if i == n or j == m:
                cost[i][j] = (n - i) + (m - j)
            else:
                cost[i][j] = min(cost[i + 1][j + 1] + substitution(i, j),
                                 cost[i + 1][j] + 1, cost[i][j + 1] + 1)
    pairs: list[AlignedPairView] = []
    i = j = 0
    while i < n or j < m:
        if i < n and j < m:
            sub = substitution(i, j)
            if sub < 2 and cost[i][j] == cost[i + 1][j + 1] + sub:
                pairs.append(AlignedPairView(op=SAME if sub == 0 else CHANGED,
                                             position=len(pairs), a=_ref(a[i]), b=_ref(b[j])))
                i, j = i + 1, j + 1
                continue
        if i < n and (j == m or cost[i][j] == cost[i + 1][j] + 1):
            pairs.append(AlignedPairView(op=DELETED, position=len(pairs), a=_ref(a[i]), b=None))
            i += 1
        else:
            pairs.append(AlignedPairView(op=INSERTED, position=len(pairs), a=None, b=_ref(b[j])))
            j += 1
    return cost[0][0], pairs


def retries(events: Sequence[StepEvent]) -> int:
    """Steps that repeat a failed step of the same agent activation (same type, name and
    arguments)."""
    failed: set[tuple[str, str, str, str]] = set()
    count = 0
    for e in events:
        if e.type not in ("model", "tool"):
            continue
        key = (e.agent_step_id, *_key(e))
        if key in failed:
            count += 1
        if e.error is not None:
            failed.add(key)
    return count


def run_metrics(events: Sequence[StepEvent], duration_ms: int) -> RunMetrics:
    model = [e for e in events if e.type == "model"]
    tool = [e for e in events if e.type == "tool"]
    return RunMetrics(
        path_length=len(model) + len(tool), model_steps=len(model), tool_calls=len(tool),
        retries=retries(events),
        input_tokens=sum(e.tokens.input for e in model if e.tokens is not None),
        output_tokens=sum(e.tokens.output for e in model if e.tokens is not None),
        duration_ms=duration_ms,
        failed_steps=sum(1 for e in model + tool if e.error is not None))


def metric_deltas(a: RunMetrics, b: RunMetrics) -> dict[str, int]:
    return {name: getattr(b, name) - getattr(a, name) for name in RunMetrics.model_fields}


def compare(a: Sequence[StepEvent], a_duration_ms: int, b: Sequence[StepEvent],
            b_duration_ms: int) -> Comparison:
    """Align two runs (each its events and the run's duration) and measure the difference."""
    distance, alignment = align(canonical_order(a), canonical_order(b))
    counts = {op: 0 for op in (SAME, CHANGED, INSERTED, DELETED)}
    for pair in alignment:
        counts[pair.op] += 1
    first = next((p for p in alignment if p.op != SAME), None)
    ma, mb = run_metrics(a, a_duration_ms), run_metrics(b, b_duration_ms)
    return Comparison(distance=distance, alignment=alignment, first_divergence=first,
                      counts=counts, a=ma, b=mb, deltas=metric_deltas(ma, mb))
