"""A tool call's arguments in canonical form, and their hash: how a recorded call (the
server's tool results, trajhub.normalizers.playback) and a re-run agent's call
(`trajhub.service.client.replay`) are matched. One definition, so the two always agree.

Standard library only: the normalizers and the client both read it.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from typing import Any


def canonical_value(value: Any) -> Any:
    """A JSON-able value in canonical form: integral floats as integers, keys as text, tuples as
    lists, anything else as its text."""
    if isinstance(value, bool) or value is None or isinstance(value, (int, str)):
        return value
    if isinstance(value, float):
        return int(value) if value.is_integer() else value
    if isinstance(value, Mapping):
        return {str(k): canonical_value(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [canonical_value(v) for v in value]
    return str(value)


def canonical_arguments(arguments: Any) -> str:
    """Canonical JSON of an arguments value: keys sorted, no whitespace, UTF-8, integral floats
    as integers."""
    return json.dumps(canonical_value(arguments), sort_keys=True, separators=(",", ":"),
                      ensure_ascii=False)


def arguments_hash(arguments: Any) -> str:
    return "sha256:" + hashlib.sha256(canonical_arguments(arguments).encode()).hexdigest()
