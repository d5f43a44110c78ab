"""How long work that failed waits before its next attempt: an alert notification whose webhook
did not take it, a rule run whose judge could not be reached."""

from __future__ import annotations

#: the first retry after this long, doubling with each failed attempt up to MAX_BACKOFF_SECONDS
BACKOFF_SECONDS = 1.0
MAX_BACKOFF_SECONDS = 300.0


def backoff_seconds(attempts: int) -> float:
    """The wait before the next attempt after `attempts` failed ones (1 s, 2 s, 4 s, …)."""
    return float(min(MAX_BACKOFF_SECONDS, BACKOFF_SECONDS * 2 ** max(0, attempts - 1)))
