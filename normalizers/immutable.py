"""`@immutable`: the normalizers' value classes, frozen to the type checker, cheap to build.

Derivation builds several of these per span (a `Span`, its `SpanReading`, steps, events), and a
frozen dataclass sets each field through `object.__setattr__` in `__init__`: on loadgen's traces
those `__init__`s were a noticeable share of deriving a trace (bench/README.md, "The
derivation's Python"). So the class is a plain slotted dataclass at run time, and
`typing.dataclass_transform(frozen_default=True)` makes `mypy --strict` reject any assignment
to its fields, as `frozen=True` did. Equal instances still hash alike (`unsafe_hash`, what
`frozen=True` with `eq` generated), so one can still be a set member or a key.

Only the normalizers' classes use it: derivation builds them by the span. Elsewhere (the
client's models, storage rows, evaluators) a dataclass is built by the request or by the
run, where `frozen=True`'s run-time guard costs nothing that shows, and a client's user may
not run a type checker.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TypeVar, dataclass_transform

T = TypeVar("T")


@dataclass_transform(frozen_default=True, field_specifiers=(field,))
def immutable(cls: type[T]) -> type[T]:
    """A slotted dataclass of `cls` whose fields only its constructor sets."""
    return dataclass(slots=True, unsafe_hash=True)(cls)
