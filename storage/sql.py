"""Building parameterized WHERE clauses without counting `$n` by hand."""

from __future__ import annotations

from typing import Any


class Params:
    """Collects query arguments; calling it with a value returns that value's placeholder."""

    def __init__(self, *initial: Any) -> None:
        self.values: list[Any] = list(initial)

    def __call__(self, value: Any) -> str:
        self.values.append(value)
        return f"${len(self.values)}"


def in_trace_partition(alias: str = "") -> str:
    """`first_seen = (its trace's partition key)` for a query of one trace by `$1` (project)
    and `$2` (trace id): PostgreSQL then reads that trace's partition only (the subquery runs
    first, and the partitions it rules out are skipped), not every partition's index (migration
    0021)."""
    return (f"{alias}first_seen = (SELECT k.first_seen FROM trace_keys k "
            "WHERE k.project = $1 AND k.trace_id = $2)")
