"""The per-trace index of span attributes and names (`traces.attribute_keys`, migration 0014).

The trace list's attribute filter asks "has this trace a span whose attributes contain
{key: value}?". Answering that from `spans` costs a look at every span of every trace walked.
Instead, derivation (service/derivation.py) stores per trace the set of 32-bit hashes of its spans'
(key, value) pairs and span names, with a GIN index; a filter first picks the traces whose set
holds one of its hashes, and the exact span check then runs only on those. A hash is only a
pre-filter: a collision costs one extra exact check, never a wrong answer.

Values are hashed by what JSONB containment compares: strings and booleans as themselves, and
numbers by value (120, 120.0 and 1.2e2 hash alike, as `{"k": 120} <@ {"k": 120.0}` holds).
Pure functions, used by derivation (when storing) and the API (when filtering), so both sides
hash alike.
"""

from __future__ import annotations

import functools
import json
import zlib
from collections.abc import Iterable
from typing import Any

import orjson

from trajhub.storage.database import RowMapping


def _canonical(key: str, value: Any) -> str | None:
    """The text hashed for one (key, value) pair; None for values spans never hold (null,
    arrays, objects): those match no stored span, so they have no hash."""
    if isinstance(value, bool):
        return f"b\x00{key}\x00{'true' if value else 'false'}"
    if isinstance(value, (int, float)):
        # equal JSON numbers map to one double (and a few unequal ones too: a collision)
        return f"n\x00{key}\x00{float(value)!r}"
    if isinstance(value, str):
        return f"s\x00{key}\x00{value}"
    return None


def _stored_texts(key: str, value: Any) -> list[str]:
    """The texts hashed for a pair of a stored span. Python's sets count True as 1 and False
    as 0, so the trace's pairs are collected in a set and such a value stands for both."""
    if (isinstance(value, (bool, int, float)) and value in (0, 1)):
        return [f"b\x00{key}\x00{'true' if value else 'false'}", f"n\x00{key}\x00{float(value)!r}"]
    text = _canonical(key, value)
    return [] if text is None else [text]


def _hash(text: str) -> int:
    h = zlib.crc32(text.encode("utf-8", "surrogatepass"))
    return h - (1 << 32) if h >= 1 << 31 else h  # int4


def _name_entry(name: str) -> str:
    return f"name\x00{name}"


def _load(attributes: str | bytes) -> Any:
    try:
        return orjson.loads(attributes)
    except orjson.JSONDecodeError:  # e.g. an integer beyond 64 bits (stored JSONB numeric)
        return json.loads(attributes, parse_int=float)


# Most pairs and span names recur from trace to trace (span kinds, model and tool names, graph
# nodes), so their hashes are kept: looking one up costs a tenth of building its text and
# hashing it. A pair is keyed as the trace's set holds it (True and 1 alike, which
# `_stored_texts` hashes alike too).
@functools.lru_cache(maxsize=100_000)
def _pair_hashes(pair: tuple[str, Any]) -> tuple[int, ...]:
    return tuple(_hash(t) for t in _stored_texts(*pair))


@functools.lru_cache(maxsize=100_000)
def _name_hash(name: str) -> int:
    return _hash(_name_entry(name))


def trace_attribute_keys(spans: Iterable[RowMapping]) -> list[int]:
    """The sorted hash set of a trace: its spans' `attributes` (the stored JSONB text) pairs
    and their names."""
    names: set[str] = set()
    pairs: set[tuple[str, Any]] = set()
    for span in spans:
        names.add(span["name"])
        attributes = span["attributes"]
        if not attributes:
            continue
        loaded = _load(attributes)
        if not isinstance(loaded, dict):
            continue
        try:  # one C-level pass: span attributes hold scalars only
            pairs.update(loaded.items())
        except TypeError:  # an unhashable (nested) value: no span filter can match it
            pairs.update((k, v) for k, v in loaded.items() if not isinstance(v, (list, dict)))
    keys = {_name_hash(name) for name in names}
    for pair in pairs:
        keys.update(_pair_hashes(pair))
    return sorted(keys)


def attribute_filter_keys(documents: Iterable[str]) -> list[int] | None:
    """The hashes a trace must hold one of to match any of `documents` (JSON objects, each
    one span attribute filter alternative); None when a document cannot be pre-filtered
    (then only the exact check applies)."""
    keys = []
    for document in documents:
        loaded = _load(document)
        if not isinstance(loaded, dict) or len(loaded) != 1:
            return None
        ((key, value),) = loaded.items()
        text = _canonical(key, value)
        if text is None:
            return None
        keys.append(_hash(text))
    return keys


def span_name_key(name: str) -> int:
    """The hash a trace holds when one of its spans has this name."""
    return _hash(_name_entry(name))
