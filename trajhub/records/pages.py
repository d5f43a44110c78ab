"""The one shape of a list answer of the REST API: `Page[T]`, the records under `items` and,
when more follow, `next_cursor` to pass back as the `cursor` query parameter (null on the last
page, and always null for a list that is answered whole).

A list that had another item key (`rules`, `scores`, …) or offset paging (`next_offset`) keeps
the old field for one version as a deprecated alias: declared with `deprecated_alias`, sent in
every answer (`Page.answer` fills an old item key), marked `deprecated: true` in /openapi.json.
A field renamed elsewhere (a time's `created_at`, now `created_time`) is declared the same way,
and `Renames` fills it from its new name.

Only the standard library and pydantic are imported here: the records modules beside this one
are read by the client and the normalizers, which must not import the server.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar, Generic, TypeVar

from pydantic import BaseModel, Field, model_validator

T = TypeVar("T")

NEXT_CURSOR = "pass as `cursor` for the next page; null on the last"


@dataclass(frozen=True)
class Renamed:
    """Metadata of a deprecated alias that holds the same value as its replacement under an
    old name (`deprecated_alias(renamed=True)`): `Renames` fills either from the other."""

    replaced_by: str


def deprecated_alias(replaced_by: str = "items", description: str = "",
                     default: Any = ..., *, renamed: bool = False) -> Any:
    """The pydantic field of an old name kept beside `replaced_by` for one version: always
    sent, marked deprecated, its description saying what to read instead. Its `default` (none:
    required) is what a client reads from a server that lacks it; `renamed`: the same value as
    `replaced_by`, filled from it (`Renames`)."""
    field = Field(default, description=(f"{description}; " if description else "")
                  + f"deprecated: use `{replaced_by}` (kept for one version)", deprecated=True)
    if renamed:
        field.metadata.append(Renamed(replaced_by))
    return field


@functools.cache
def _renames(model: type[BaseModel]) -> tuple[tuple[str, str], ...]:
    return tuple((name, marker.replaced_by) for name, info in model.model_fields.items()
                 for marker in info.metadata if isinstance(marker, Renamed))


class Renames(BaseModel):
    """A model with renamed fields (`deprecated_alias(renamed=True)`): given one of a pair, it
    fills the other, so that the server may build it from either name (a stored column keeps
    the old one) and a client reads the new name from a server that sends only the old."""

    @model_validator(mode="before")
    @classmethod
    def _fill_renamed(cls, data: Any) -> Any:
        pairs = _renames(cls)
        if not pairs or not isinstance(data, Mapping):
            return data
        out = dict(data)
        for old, new in pairs:
            if old in out and new not in out:
                out[new] = out[old]
            elif new in out and old not in out:
                out[old] = out[new]
        return out


class Page(BaseModel, Generic[T]):
    """One page of a list. A subclass names the list's component in /openapi.json (e.g.
    `class RuleList(Page[Rule])`) and adds the list's other fields (`total`, old keys)."""

    #: the old item keys of this list (deprecated fields of the same type as `items`), which
    #: `answer` fills with the items
    item_aliases: ClassVar[tuple[str, ...]] = ()

    items: list[T]
    next_cursor: str | None = Field(description=NEXT_CURSOR)

    @classmethod
    def __pydantic_init_subclass__(cls, **kwargs: Any) -> None:
        super().__pydantic_init_subclass__(**kwargs)
        items = cls.model_fields["items"].annotation
        cls.item_aliases = tuple(name for name, f in cls.model_fields.items()
                                 if f.deprecated and f.annotation == items)

    @classmethod
    def answer(cls, items: list[Any], next_cursor: str | None = None, **fields: Any
               ) -> dict[str, Any]:
        """The answer as JSON-ready data: the items (under each old item key too), the
        cursor, and the list's other `fields`."""
        doc: dict[str, Any] = {"items": items, "next_cursor": next_cursor, **fields}
        for alias in cls.item_aliases:
            doc[alias] = items
        return doc


__all__ = ["NEXT_CURSOR", "Page", "Renamed", "Renames", "deprecated_alias"]
