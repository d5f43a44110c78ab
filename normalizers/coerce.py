"""Value coercions: one loosely typed value to an int, float, string, bool, list or map, for the
normalizers, the evaluators and the service's document reads. Looking keys up in a span's
attributes, and parsing the text inside them, is `normalizers.attrs`'s job, built on these.

Span attributes and stored trajectory documents both carry values whose type was chosen by
someone else (an instrumentation, an older normalizer, a hand-written test document). Every
module reads such a value through these functions, so one value means one thing everywhere.
None of them raises. The semantics:

- `to_int`: an exact integer, or None. An int; a finite float with no fractional part; a string
  (or ASCII bytes) spelling an integer ("12", " +12 ") or a number with an integral value
  ("12.0", "1e3"). Not a bool (`True` is not a count), not NaN/±inf, not a fractional value
  (12.5, "12.5": a count or a whole-millisecond time that is fractional was not written as the
  schema says, so it is unknown rather than silently truncated), not anything else.
- `to_whole`: the whole part of a finite number, or None: what `to_int` reads, and also a
  fractional number or number string truncated toward zero (12.5 and "12.5" are 12). For values
  stored or sent in whole units where a fraction is only excess precision: the times and counts
  of a stored trajectory document (the schema's whole milliseconds and integer token counts; both
  of the document readers this replaced kept the whole part of a fractional number) and the
  microsecond times of the Coze Loop wire. Span attributes are read with `to_int`: there a
  fractional count is not the count the convention asked for, and derivation ignores it.
- `to_float`: a finite number, or None. An int or float (not a bool) or a string spelling a
  decimal number; NaN and ±inf are None.
- `to_str`: always a string. None is ""; a string is itself; a bool is "true"/"false" (as JSON
  writes it); a number is its Python text; bytes are decoded as UTF-8; anything else (lists,
  maps) is key-sorted JSON, so the same value gives the same text whatever order its keys came in.
- `to_bool`: a bool, or None. A bool is itself; the strings "true"/"false" (any case, surrounding
  spaces ignored) are their value. Numbers are not bools, as bools are not numbers.
- `to_list`: the value if it is a list or tuple, else an empty tuple.
- `to_dict`: the value if it is a mapping, else an empty mapping.

Callers that need a default for unknown write it where they read (`to_int(x) or 0`), so "unknown"
and "zero" stay distinguishable for the readers that care (e.g. a step with no recorded start).
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping, Sequence
from types import MappingProxyType
from typing import Any

_INT_RE = re.compile(r"^[+-]?\d+$")
_FLOAT_RE = re.compile(r"^[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?$")

_EMPTY: Mapping[str, Any] = MappingProxyType({})


def to_int(value: object) -> int | None:
    """An exact integer (see the module doc); None otherwise."""
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, float):
        return int(value) if math.isfinite(value) and value == int(value) else None
    if isinstance(value, (str, bytes)):
        text = value.decode("ascii", errors="replace") if isinstance(value, bytes) else value
        text = text.strip()
        if _INT_RE.match(text):
            try:
                return int(text)
            except ValueError:  # more digits than int() converts: no count is that long
                return None
        if _FLOAT_RE.match(text):
            return to_int(float(text))
    return None


def to_whole(value: object) -> int | None:
    """The whole part of a finite number (see the module doc); None otherwise."""
    exact = to_int(value)
    if exact is not None:
        return exact
    number = value if isinstance(value, float) else to_float(value)
    if isinstance(number, float) and math.isfinite(number):
        return int(number)
    return None


def to_float(value: object) -> float | None:
    """A finite number (see the module doc); None otherwise."""
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, (int, float)):
        number = float(value)
    elif isinstance(value, str) and _FLOAT_RE.match(value.strip()):
        number = float(value.strip())
    else:
        return None
    return number if math.isfinite(number) else None


def to_str(value: object) -> str:
    """Any value as a string (see the module doc)."""
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return repr(value) if isinstance(value, float) else str(value)
    if isinstance(value, bytes):
        return value.decode("utf-8", errors="replace")
    try:
        return json.dumps(value, ensure_ascii=False, sort_keys=True, default=_json_default)
    except (TypeError, ValueError, RecursionError):  # e.g. mixed key types, absurd nesting
        return repr(value)[:10_000]


def _json_default(value: object) -> str:
    # bytes inside lists/maps: keep them readable rather than failing the whole dump
    if isinstance(value, bytes):
        return value.decode("utf-8", errors="replace")
    return str(value)


def to_bool(value: object) -> bool | None:
    """A bool (see the module doc); None otherwise."""
    if isinstance(value, bool):
        return value
    if isinstance(value, str):
        text = value.strip().lower()
        if text in ("true", "false"):
            return text == "true"
    return None


def to_list(value: object) -> Sequence[Any]:
    """The value if it is a list or tuple, else an empty tuple."""
    return value if isinstance(value, (list, tuple)) else ()


def to_dict(value: object) -> Mapping[str, Any]:
    """The value if it is a mapping, else an empty (read-only) mapping."""
    return value if isinstance(value, Mapping) else _EMPTY
