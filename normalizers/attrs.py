"""Reading span attributes: getters that look keys up in an attribute map (the first present key
wins), the JSON and Python-literal text inside attribute values, flattened attributes rebuilt
into lists and maps, and the helpers that copy them into a reading's metadata. Shared by every
convention module; what a span says about its failure is `normalizers.span_errors`'s job.

Converting one loosely typed value to an int, float or string is `normalizers.coerce`'s job;
these readers use it. Like it, none of them raises: a normalizer must never crash on odd input
(instrumentations disagree on types: CozeLoop JS sends token counts as strings, OTLP/JSON may send
ints as decimal strings, a buggy client may send anything).
"""

from __future__ import annotations

import ast
import json
from collections.abc import Callable, Mapping
from typing import Any, TypeVar

import orjson

from trajhub.normalizers.coerce import to_float, to_int, to_str
from trajhub.normalizers.model import AttributeValue

T = TypeVar("T")


def get_str(attrs: Mapping[str, AttributeValue], *keys: str) -> str | None:
    """The first present key as a string. Scalars are stringified (bools as true/false), lists and
    maps become JSON; an empty string counts as absent."""
    for key in keys:
        if key not in attrs:
            continue
        text = to_str(attrs[key])
        if text:
            return text
    return None


def put(metadata: dict[str, str], key: str, value: object) -> None:
    """Set metadata[key] to the value as a string unless that is empty: absent beats ""."""
    text = to_str(value)
    if text:
        metadata[key] = text


def copy_attrs(
    metadata: dict[str, str], attrs: Mapping[str, AttributeValue], keys: Mapping[str, str]
) -> None:
    """For each metadata name → attribute key, set the name to the attribute's value as a string
    (`put`: an absent or empty attribute sets nothing)."""
    for name, key in keys.items():
        put(metadata, name, attrs.get(key))


def put_tool_call_id(metadata: dict[str, str], warnings: list[str], call_id: str | None) -> None:
    """A tool step's call id in its metadata, or, when the convention found none, the warning
    every convention gives for that."""
    if call_id:
        metadata["tool_call_id"] = call_id
    else:
        warnings.append("tool call id not found")


def get_int(attrs: Mapping[str, AttributeValue], *keys: str) -> int | None:
    """The first of `keys` whose value is an integer (`to_int`); an ill-typed one is skipped."""
    return _first(attrs, keys, to_int)


def get_float(attrs: Mapping[str, AttributeValue], *keys: str) -> float | None:
    """The first of `keys` whose value is a finite number (`to_float`)."""
    return _first(attrs, keys, to_float)


def _first(attrs: Mapping[str, AttributeValue], keys: tuple[str, ...],
           read: Callable[[object], T | None]) -> T | None:
    for key in keys:
        value = read(attrs.get(key))
        if value is not None:
            return value
    return None


def first_present_int(
    attrs: Mapping[str, AttributeValue], *keys: str, warnings: list[str], label: str
) -> int | None:
    """The value of the first of `keys` present in `attrs`, as an integer (`to_int`).

    Unlike `get_int`, a later key is not tried when the first present one is ill-typed: the
    producer did send the count, so the reading gets None and the warning
    `{label}{key} is not an integer: {value!r}` (e.g. label "apmplus: ")."""
    for key in keys:
        if key in attrs:
            value = to_int(attrs[key])
            if value is None:
                warnings.append(f"{label}{key} is not an integer: {attrs[key]!r}")
            return value
    return None


#: how a JSON text can start (after whitespace): a value, or NaN/Infinity, which Python's json
#: accepts and orjson does not
_JSON_START = frozenset('{["-0123456789tfnNI')
#: the texts that are JSON and start with a letter: nothing else does
_JSON_WORDS = frozenset(("true", "false", "null", "NaN", "Infinity"))
#: what follows a leading "-" in JSON (as Python's json reads it: -Infinity too)
_JSON_NUMBER_AFTER_MINUS = frozenset("0123456789I")


def _may_be_json(text: str) -> bool:
    first = text[:1]
    if first.isspace():
        text = text.strip()
        first = text[:1]
    if first not in _JSON_START:
        return False
    if first.isalpha():
        # prose that starts with t, f or n ("the …") is not JSON: without this check each
        # such text cost both parsers' exceptions
        word = text.strip()  # the text itself when there is nothing to strip: no copy
        return len(word) <= 8 and word in _JSON_WORDS
    return first != "-" or text[1:2] in _JSON_NUMBER_AFTER_MINUS  # `text` starts at `first`


def parse_json(text: str | None) -> Any:
    """The JSON value of `text`, or None when it is absent or not JSON."""
    # Most texts that are not JSON are prose (an input.value): refused here by how they
    # start, without the cost of a parser's exception.
    if not text or not _may_be_json(text):
        return None
    try:
        # orjson: faster than json on the hot path of every derivation (bench/README.md, "The
        # derivation's Python")
        return orjson.loads(text)
    except orjson.JSONDecodeError:
        pass
    try:  # what orjson refuses but Python accepts: NaN, integers beyond 64 bits
        return json.loads(text)
    except (ValueError, RecursionError):
        return None


def parse_literal(text: str) -> Any:
    """The value of a Python literal (`str(dict)`, as some Python callbacks record arguments and
    token details), or None. `ast.literal_eval` evaluates literals only, never code."""
    if not text or len(text) > 100_000:
        return None
    try:
        return ast.literal_eval(text.strip())
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return None


def dig(value: Any, *path: str | int) -> Any:
    """value[path[0]][path[1]]..., None as soon as a step does not exist."""
    for key in path:
        if isinstance(key, int) and isinstance(value, list) and -len(value) <= key < len(value):
            value = value[key]
        elif isinstance(key, str) and isinstance(value, dict):
            value = value.get(key)
        else:
            return None
    return value


def dumps(value: Any) -> str:
    """Compact, key-sorted JSON: reassembled values must not depend on attribute arrival order."""
    return json.dumps(value, ensure_ascii=False, sort_keys=True, separators=(",", ":"))


def unflatten(attrs: Mapping[str, AttributeValue], prefix: str) -> Any:
    """Rebuild `prefix.0.message.role = x`-style flattened attributes into nested lists/dicts.

    A path segment that is a decimal number indexes a list (sparse indexes are compacted in index
    order); any other segment is a dict key. Returns None when no key has the prefix. When the same
    node is both a leaf and a container (malformed input), the container wins."""
    dotted = prefix + "."
    tree: dict[str, Any] = {}
    found = False
    for key in sorted(k for k in attrs if k.startswith(dotted)):
        parts = key[len(dotted) :].split(".")
        if not all(parts):
            continue
        found = True
        node = tree
        for part in parts[:-1]:
            child = node.get(part)
            if not isinstance(child, dict):
                child = {}
                node[part] = child
            node = child
        if not isinstance(node.get(parts[-1]), dict):
            node[parts[-1]] = _plain(attrs[key])
    return _listify(tree) if found else None


def _plain(value: AttributeValue) -> Any:
    if isinstance(value, bytes):
        return value.decode("utf-8", errors="replace")
    return value


def _listify(node: Any) -> Any:
    if not isinstance(node, dict):
        return node
    converted = {k: _listify(v) for k, v in node.items()}
    if converted and all(k.isdigit() for k in converted):
        return [converted[k] for k in sorted(converted, key=int)]
    return converted
