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
