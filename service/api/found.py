"""A route's lookup that may find nothing: what it found, or a 404 that says what is missing."""

from __future__ import annotations

from typing import TypeVar

from fastapi import HTTPException

T = TypeVar("T")


def found(row: T | None, missing: str) -> T:
    """`row`; a 404 whose detail is `missing` when the lookup found nothing (None)."""
    if row is None:
        raise HTTPException(404, missing)
    return row
