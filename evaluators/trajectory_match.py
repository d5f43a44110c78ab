"""Trajectory matching against an expected trajectory (agentevals' modes, graded).

Modes, as docs/evaluators.md §a3 states them for agentevals, over the steps of one level:
- `strict`: the same steps at the same positions. Calls the agent issued together (parallel tool
  calls of one model turn) may come in any order among themselves, as agentevals allows any order
  *within one message*. When the expected tool steps carry turns, the turn structure must match
  too (the same number of turns, the same calls in each), as agentevals compares messages; so
  "x and y together" and "x, then y" differ. As in agentevals, message content is not compared;
  unlike it, model turns that call no tool are not positions (the expected trajectory lists no
  model steps).
- `in_order`: the expected steps appear as an ordered subsequence; extras allowed (Google ADK
  IN_ORDER, Mastra `relaxed`, LangSmith `trajectory_subsequence`).
- `unordered`: multiset equality by name plus args.
- `superset`: every expected step has its own matching actual step; extras allowed.
- `subset`: every actual step has its own matching expected step; nothing beyond the reference.

Levels: `tool` (tool calls with their arguments), `agent` (agent entries, args = their decoded
input) and `graph` (graph node visits). Expected steps of the other types are ignored.

agentevals only answers true/false; the score here is graded (see `_score`) and `passed` is the
agentevals verdict. Missing, extra, out-of-order and repeated steps are listed in the reason.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from trajhub.evaluators._config import ConfigError, Options, require_type
from trajhub.evaluators.expectations import (
    ArgsMatchSpec,
    Expectations,
    ExpectedStep,
    check_args_match_spec,
)
from trajhub.evaluators.matching import (
    ArgsOverride,
    StepPattern,
    matcher_for_mode,
    max_matching,
    ordered_matching,
    resolve_matcher,
)
from trajhub.evaluators.result import EvaluatorOutput
from trajhub.evaluators.trajectory_view import TrajectoryView, parse_trajectory
from trajhub.normalizers.document import decode_json_text

NAME = "trajectory_match"
MODES = ("strict", "in_order", "unordered", "superset", "subset")
LEVELS = ("tool", "agent", "graph")
#: Mastra's cost of one repeated step when repeats are not allowed.
REPEAT_PENALTY = 0.1


@dataclass(frozen=True)
class TrajectoryMatchConfig(Options):
    EVALUATOR = NAME

    mode: str = "strict"
    level: str = "tool"
    #: the default matcher: a mode name or a list of dotted key paths (as an override)
    args_match: ArgsMatchSpec = "exact"
    #: tool (or agent/node) name -> mode name, dotted key paths, or a callable(out, ref) -> bool
    args_match_overrides: Mapping[str, ArgsOverride] = field(default_factory=dict)
    allow_repeated: bool = True

    def __post_init__(self) -> None:
        _one_of("mode", self.mode, MODES)
        _one_of("level", self.level, LEVELS)
        object.__setattr__(self, "args_match", _spec("args_match", self.args_match))
        require_type(NAME, "allow_repeated", self.allow_repeated, bool)
        require_type(NAME, "args_match_overrides", self.args_match_overrides, Mapping)
        overrides: dict[str, ArgsOverride] = {}
        for tool, override in self.args_match_overrides.items():
            where = f"args_match_overrides.{tool}"
            if isinstance(override, str | list | tuple):
                # JSON lists become immutable key paths; [] is refused, not "compare nothing"
                overrides[tool] = _spec(where, override)
            elif callable(override):
                overrides[tool] = override
            else:
                raise ConfigError(
                    f"{NAME}: option {where!r} must be a matcher name, a list of key paths"
                    " or a callable"
                )
        object.__setattr__(self, "args_match_overrides", overrides)


@dataclass(frozen=True)
class MatchedStep:
    index: int  # position in the expected or the actual sequence
    name: str
    args: Any

    def __str__(self) -> str:
        if self.args is None:
            return f"#{self.index} {self.name}"
        return f"#{self.index} {self.name}({_compact(self.args)})"


@dataclass(frozen=True)
class RepeatedStep:
    name: str
    args: Any
    count: int


@dataclass(frozen=True)
class TrajectoryMatchReason:
    mode: str
    level: str
    expected: tuple[MatchedStep, ...]
    actual: tuple[MatchedStep, ...]
    matched: int
    missing: tuple[MatchedStep, ...]
    extra: tuple[MatchedStep, ...]
    out_of_order: tuple[MatchedStep, ...]
    #: expected steps whose name was called, but never with matching args
    args_mismatch: tuple[MatchedStep, ...]
    repeated: tuple[RepeatedStep, ...]
    extra_allowed: bool
    missing_allowed: bool
    #: calls per turn, when the expectation gives turns and the mode is strict
    expected_turns: tuple[int, ...] | None = None
    actual_turns: tuple[int, ...] | None = None

    def explain_lines(self) -> list[str]:
        lines = [
            (
                f"{self.mode} match at {self.level} level: {self.matched} of"
                f" {len(self.expected)} expected, {len(self.actual)} actual"
            ),
            f"expected: {_refs(self.expected)}",
            f"actual: {_refs(self.actual)}",
        ]
        if self.missing:
            note = " (allowed in this mode)" if self.missing_allowed else ""
            lines.append(f"missing{note}: {_refs(self.missing)}")
        if self.args_mismatch:
            lines.append(f"called with other args: {_refs(self.args_mismatch)}")
        if self.out_of_order:
            lines.append(f"out of order: {_refs(self.out_of_order)}")
        if self.extra:
            note = " (allowed in this mode)" if self.extra_allowed else ""
            lines.append(f"extra{note}: {_refs(self.extra)}")
        if self.expected_turns is not None and self.expected_turns != self.actual_turns:
            lines.append(
                f"turns differ: expected calls per turn {list(self.expected_turns)},"
                f" actual {list(self.actual_turns or ())}"
            )
        if self.repeated:
            reps = ", ".join(f"{r.name}({_compact(r.args)}) x{r.count}" for r in self.repeated)
            lines.append(f"repeated: {reps}")
        return lines


def trajectory_match(
    doc: Mapping[str, Any],
    expectations: Expectations,
    config: TrajectoryMatchConfig,
) -> EvaluatorOutput:
    view = parse_trajectory(doc)
    reference = _reference(expectations, config)
    output, groups = _actual(view, config.level)

    free = max_matching(reference, output)
    turns = _reference_turns(expectations, config)
    if config.mode == "strict" and turns is not None:
        pairs, turns_differ = _turn_pairs(reference, turns, output, groups)
    elif config.mode == "strict":
        pairs, turns_differ = _strict_pairs(reference, output, groups), False
    elif config.mode == "in_order":
        pairs, turns_differ = ordered_matching(reference, output), False
    else:
        pairs, turns_differ = free, False

    n, m = len(reference), len(output)
    score, passed = _score(config.mode, n, m, len(pairs))
    passed = passed and not turns_differ
    ordered = config.mode in ("strict", "in_order")
    unpaired = [i for i in range(n) if i not in pairs]
    out_of_order = [i for i in unpaired if ordered and i in free]
    missing = [i for i in unpaired if i not in out_of_order]
    paired_outputs = set(pairs.values())
    repeated = _repeated(output)
    if repeated and not config.allow_repeated:
        score = max(0.0, score - REPEAT_PENALTY * len(repeated))
        passed = False

    ref_steps = tuple(MatchedStep(i, item.name, item.args) for i, item in enumerate(reference))
    out_steps = tuple(MatchedStep(j, item.name, item.args) for j, item in enumerate(output))
    output_names = {item.name for item in output}
    reason = TrajectoryMatchReason(
        mode=config.mode,
        level=config.level,
        expected=ref_steps,
        actual=out_steps,
        matched=len(pairs),
        missing=tuple(ref_steps[i] for i in missing),
        extra=tuple(out_steps[j] for j in range(m) if j not in paired_outputs),
        out_of_order=tuple(ref_steps[i] for i in out_of_order),
        args_mismatch=tuple(ref_steps[i] for i in missing if reference[i].name in output_names),
        repeated=repeated,
        extra_allowed=config.mode in ("in_order", "superset"),
        missing_allowed=config.mode == "subset",
        expected_turns=_turn_sizes(turns) if turns is not None else None,
        actual_turns=_turn_sizes(groups) if turns is not None else None,
    )
    return EvaluatorOutput(evaluator=NAME, score=score, passed=passed, reason=reason)


def _score(mode: str, n: int, m: int, matched: int) -> tuple[float, bool]:
    """Graded score and agentevals verdict. The denominator is what the mode holds to account:
    both sides for strict/unordered, the reference for in_order/superset (extras are free), the
    output for subset (missing reference steps are free)."""
    if mode in ("strict", "unordered"):
        denominator = max(n, m)
        passed = matched == n == m
    elif mode == "subset":
        denominator = m
        passed = matched == m
    else:
        denominator = n
        passed = matched == n
    return (matched / denominator if denominator else 1.0), passed


def _strict_pairs(
    reference: Sequence[StepPattern], output: Sequence[StepPattern], groups: Sequence[int]
) -> dict[int, int]:
    """Positional pairing, except that within one group of calls issued together any order is
    fine: the reference slice at the group's positions is matched to the group as a multiset."""
    pairs: dict[int, int] = {}
    start = 0
    while start < len(output):
        end = start
        while end < len(output) and groups[end] == groups[start]:
            end += 1
        if start < len(reference):
            ref_slice = reference[start:end]
            for i, j in max_matching(ref_slice, output[start:end]).items():
                pairs[start + i] = start + j
        start = end
    return pairs


def _turn_pairs(
    reference: Sequence[StepPattern], turns: Sequence[int], output: Sequence[StepPattern],
    groups: Sequence[int],
) -> tuple[dict[int, int], bool]:
    """Strict matching by turn, as agentevals compares messages: the k-th expected turn against
    the k-th actual turn, calls of one turn in any order. Also says whether the turn structure
    (number of turns, calls per turn) differs, which fails strict even when every call pairs."""
    ref_spans, out_spans = _spans(turns), _spans(groups)
    pairs: dict[int, int] = {}
    for (r0, r1), (o0, o1) in zip(ref_spans, out_spans, strict=False):
        for i, j in max_matching(reference[r0:r1], output[o0:o1]).items():
            pairs[r0 + i] = o0 + j
    sizes_differ = [r1 - r0 for r0, r1 in ref_spans] != [o1 - o0 for o0, o1 in out_spans]
    return pairs, sizes_differ


def _spans(groups: Sequence[int]) -> list[tuple[int, int]]:
    """[start, end) of each run of equal group ids."""
    spans: list[tuple[int, int]] = []
    for index, group in enumerate(groups):
        if spans and groups[spans[-1][0]] == group:
            spans[-1] = (spans[-1][0], index + 1)
        else:
            spans.append((index, index + 1))
    return spans


def _turn_sizes(groups: Sequence[int]) -> tuple[int, ...]:
    return tuple(end - start for start, end in _spans(groups))


def _reference_turns(expectations: Expectations, config: TrajectoryMatchConfig) -> list[int] | None:
    """The expected tool steps' turns, when the expectation gives them (at the tool level)."""
    if config.level != "tool" or expectations.trajectory is None:
        return None
    turns = [s.turn for s in expectations.trajectory if s.type == "tool"]
    if not turns or any(t is None for t in turns):
        return None
    return [t for t in turns if t is not None]


def _reference(expectations: Expectations, config: TrajectoryMatchConfig) -> list[StepPattern]:
    steps: Sequence[ExpectedStep]
    if expectations.trajectory is not None:
        steps = [s for s in expectations.trajectory if s.type == config.level]
    elif config.level == "tool" and expectations.tool_order:
        # An item with only a tool order still says which tools, in which order; args unknown.
        steps = [ExpectedStep("tool", name) for name in expectations.tool_order]
    elif config.level == "agent" and expectations.agents:
        steps = [ExpectedStep("agent", name) for name in expectations.agents]
    else:
        raise ValueError(f"{NAME}: the item has no expected trajectory")
    return [StepPattern(s.name, s.args, _matcher(s, config)) for s in steps]


def _matcher(step: ExpectedStep, config: TrajectoryMatchConfig) -> Callable[[Any, Any], bool]:
    # Most specific wins: the step's own matcher, then the per-tool override, then the default.
    if step.args_match is not None:
        return resolve_matcher(step.args_match)
    override = config.args_match_overrides.get(step.name)
    if override is not None:
        return resolve_matcher(override)
    return resolve_matcher(config.args_match)


def _actual(view: TrajectoryView, level: str) -> tuple[list[StepPattern], list[int]]:
    """Actual steps of the level, and for each a group id (equal ids = issued together)."""
    unused = matcher_for_mode("ignore")  # actual items never act as the reference side
    if level == "tool":
        calls = view.tool_calls
        return [StepPattern(c.name, c.arguments, unused) for c in calls], [c.turn for c in calls]
    if level == "agent":
        agents = view.agents
        items = [StepPattern(a.name, decode_json_text(a.input), unused) for a in agents]
        return items, list(range(len(items)))
    nodes = view.graph_nodes
    return [StepPattern(node.name, None, unused) for node in nodes], list(range(len(nodes)))


def _repeated(output: Sequence[StepPattern]) -> tuple[RepeatedStep, ...]:
    counts: dict[str, tuple[StepPattern, int]] = {}
    for item in output:
        key = json.dumps([item.name, item.args], sort_keys=True, default=str)
        first, count = counts.get(key, (item, 0))
        counts[key] = (first, count + 1)
    return tuple(
        RepeatedStep(item.name, item.args, count) for item, count in counts.values() if count > 1
    )


def _spec(option: str, value: Any) -> ArgsMatchSpec:
    try:
        return check_args_match_spec(value)
    except ValueError as err:
        raise ConfigError(f"{NAME}: option {option!r} {err}") from None


def _one_of(option: str, value: Any, allowed: Sequence[str]) -> None:
    if value not in allowed:
        raise ConfigError(f"{NAME}: option {option!r} must be one of {', '.join(allowed)}")


def _compact(args: Any) -> str:
    text = args if isinstance(args, str) else json.dumps(args, ensure_ascii=False, default=str)
    return text if len(text) <= 80 else text[:77] + "..."


def _refs(refs: Sequence[MatchedStep]) -> str:
    return ", ".join(map(str, refs)) if refs else "none"
