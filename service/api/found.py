"""A route's lookup or delete that may find nothing: what it found (or a 204 for a delete), or a
404 that says what is missing."""

from __future__ import annotations

from typing import TypeVar

from fastapi import HTTPException, Response

T = TypeVar("T")


def found(row: T | None, missing: str) -> T:
    """`row`; a 404 whose detail is `missing` when the lookup found nothing (None)."""
    if row is None:
        raise HTTPException(404, missing)
    return row


def deleted(done: bool, missing: str) -> Response:
    """The 204 of a delete that found what it deleted; a 404 whose detail is `missing` when
    there was nothing to delete."""
    if not done:
        raise HTTPException(404, missing)
    return Response(status_code=204)
