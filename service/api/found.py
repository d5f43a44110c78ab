"""A route's lookup, edit or delete that may find nothing: what it found (or a 204 for a
delete), or a 404 that says what is missing; and what a PATCH body changes."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Collection
from dataclasses import dataclass
from typing import Any, Concatenate, ParamSpec, TypeVar

import asyncpg
from fastapi import HTTPException, Response
from pydantic import BaseModel

from trajhub.storage.database import Connection

T = TypeVar("T")
P = ParamSpec("P")


@dataclass(frozen=True)
class RecordKind:
    """A kind of a project's records, as its routes' 404s and 409s name it: `name` (`alert
    rule`) after its `article` (`an`)."""

    name: str
    article: str = "a"

    def missing(self, key: object, project: str) -> str:
        """The 404 of a record not found: `no alert rule 7 in project 'default'`."""
        return f"no {self.name} {key!r} in project {project!r}"

    def taken(self, project: str, name: object) -> str:
        """The 409 of a name another record of the kind has: `project 'default' has an alert
        rule named 'slow'`."""
        return f"project {project!r} has {self.article} {self.name} named {name!r}"


def found(row: T | None, missing: str) -> T:
    """`row`; a 404 whose detail is `missing` when the lookup found nothing (None)."""
    if row is None:
        raise HTTPException(404, missing)
    return row


async def deleted(db: asyncpg.Pool, missing: str,
                  delete: Callable[Concatenate[Connection, P], Awaitable[bool]],
                  *args: P.args, **kwargs: P.kwargs) -> Response:
    """The 204 of a delete (`delete(conn, *args)`, True when it found what it deleted); a 404
    whose detail is `missing` when there was nothing to delete."""
    async with db.acquire() as conn:
        done = await delete(conn, *args, **kwargs)
    if not done:
        raise HTTPException(404, missing)
    return Response(status_code=204)


def patched(body: BaseModel, nullable: Collection[str] = ()) -> dict[str, Any]:
    """The fields a PATCH body gives, by name. A null for a field that always has a value (one
    not `nullable`) leaves it unchanged, so it is not among them."""
    given = body.model_dump(include=body.model_fields_set)
    return {k: v for k, v in given.items() if v is not None or k in nullable}


async def edited(update: Awaitable[T | None], missing: str, taken: str) -> T:
    """The row an edit of a named record returns; a 404 (`missing`) when there was none, a 409
    (`taken`) when the new name is another record's."""
    try:
        row = await update
    except asyncpg.UniqueViolationError:
        raise HTTPException(409, taken) from None
    return found(row, missing)
