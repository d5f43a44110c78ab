"""Text PostgreSQL can hold.

PostgreSQL `text` and `jsonb` cannot contain the NUL character, which OTLP strings and JSON
may. Every string trajhub copies out of a span into a text column goes through `pg_text`: the
NUL becomes U+FFFD, the replacement character. Nothing is lost: the span's raw bytes, stored
unchanged in `spans.body`, keep the original.
"""

from __future__ import annotations

from collections.abc import Iterable

REPLACEMENT = "\ufffd"


def pg_text(value: str) -> str:
    return value.replace("\x00", REPLACEMENT) if "\x00" in value else value


def pg_texts(values: Iterable[str]) -> list[str]:
    return [pg_text(v) for v in values]


def pg_opt(value: str | None) -> str | None:
    return None if value is None else pg_text(value)
