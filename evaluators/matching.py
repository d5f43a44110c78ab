"""Argument matchers and sequence alignment for trajectory_match.

Argument matchers follow agentevals (docs/evaluators.md §a3). A matcher is always called as
`matcher(output_args, reference_args)`: `subset` means the output's args are a subset of the
reference's, `superset` the reverse. (agentevals' `subset` *trajectory* mode swaps the two
arguments internally; we keep one direction everywhere so an override means the same in every
mode.)

Pairing uses maximum bipartite matching rather than agentevals' first-fit, so the verdict never
depends on the order calls were listed in when a loose matcher lets one call match several.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from trajhub.evaluators.expectations import ARGS_MATCH_MODES

ArgsMatcher = Callable[[Any, Any], bool]
#: A per-tool override: a mode name, dotted key paths to compare (only those), or a callable.
ArgsOverride = str | tuple[str, ...] | ArgsMatcher

_MISSING = object()


def _exact(output: Any, reference: Any) -> bool:
    return bool(output == reference)


def _ignore(output: Any, reference: Any) -> bool:
    return True


def _contained(small: Any, big: Any) -> bool:
    """Every key/value of `small` is in `big` (top level, as agentevals). Non-objects must be
    equal: there is nothing to be a subset of."""
    if isinstance(small, Mapping) and isinstance(big, Mapping):
        return all(key in big and big[key] == value for key, value in small.items())
    return bool(small == big)


def _subset(output: Any, reference: Any) -> bool:
    return _contained(output, reference)


def _superset(output: Any, reference: Any) -> bool:
    return _contained(reference, output)


_MODES: dict[str, ArgsMatcher] = {
    "exact": _exact,
    "ignore": _ignore,
    "subset": _subset,
    "superset": _superset,
}
assert set(_MODES) == set(ARGS_MATCH_MODES)


def matcher_for_mode(mode: str) -> ArgsMatcher:
    try:
        return _MODES[mode]
    except KeyError:
        raise ValueError(f"unknown args matcher {mode!r}") from None


def keys_matcher(paths: Sequence[str]) -> ArgsMatcher:
    """Compare only the values at the given dotted key paths; absent counts as a value."""

    def lookup(args: Any, path: str) -> Any:
        current = args
        for part in path.split("."):
            if not isinstance(current, Mapping) or part not in current:
                return _MISSING
            current = current[part]
        return current

    def matcher(output: Any, reference: Any) -> bool:
        return all(lookup(output, p) == lookup(reference, p) for p in paths)

    return matcher


def resolve_matcher(override: ArgsOverride) -> ArgsMatcher:
    if isinstance(override, str):
        return matcher_for_mode(override)
    if isinstance(override, tuple):
        return keys_matcher(override)
    return override


@dataclass(frozen=True)
class StepPattern:
    """One step to align: a name and its args. `args` None on a reference step = unspecified."""

    name: str
    args: Any
    matcher: ArgsMatcher

    def matches(self, output: StepPattern) -> bool:
        """`self` is the reference step, `output` the actual one."""
        if self.name != output.name:
            return False
        return self.args is None or self.matcher(output.args, self.args)


def max_matching(reference: Sequence[StepPattern], output: Sequence[StepPattern]) -> dict[int, int]:
    """Maximum one-to-one pairing reference index -> output index (Kuhn's augmenting paths;
    trajectories are short, so O(V·E) is nothing)."""
    edges = [[j for j, out in enumerate(output) if ref.matches(out)] for ref in reference]
    owner: dict[int, int] = {}  # output index -> reference index

    def augment(i: int, seen: set[int]) -> bool:
        for j in edges[i]:
            if j in seen:
                continue
            seen.add(j)
            if j not in owner or augment(owner[j], seen):
                owner[j] = i
                return True
        return False

    for i in range(len(reference)):
        augment(i, set())
    return {i: j for j, i in owner.items()}


def ordered_matching(reference: Sequence[StepPattern], output: Sequence[StepPattern]
                     ) -> dict[int, int]:
    """Longest in-order alignment (LCS under the matcher): reference index -> output index."""
    n, m = len(reference), len(output)
    best = [[0] * (m + 1) for _ in range(n + 1)]
    for i in range(n - 1, -1, -1):
        for j in range(m - 1, -1, -1):
            if reference[i].matches(output[j]):
                best[i][j] = 1 + best[i + 1][j + 1]
            else:
                best[i][j] = max(best[i + 1][j], best[i][j + 1])
    pairs: dict[int, int] = {}
    i = j = 0
    while i < n and j < m:
        if reference[i].matches(output[j]) and best[i][j] == 1 + best[i + 1][j + 1]:
            pairs[i] = j
            i += 1
            j += 1
        elif best[i + 1][j] >= best[i][j + 1]:
            i += 1
        else:
            j += 1
    return pairs
