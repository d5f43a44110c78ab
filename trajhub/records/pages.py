"""The one shape of a list answer of the REST API: `Page[T]`, the records under `items` and,
when more follow, `next_cursor` to pass back as the `cursor` query parameter (null on the last
page, and always null for a list that is answered whole).

A list that had another item key (`rules`, `scores`, …) or offset paging (`next_offset`) keeps
the old field for one version as a deprecated alias: declared with `deprecated_alias`, sent in
every answer (`Page.answer` fills an old item key), marked `deprecated: true` in /openapi.json.

Only the standard library and pydantic are imported here: the records modules beside this one
are read by the client and the normalizers, which must not import the server.
"""

from __future__ import annotations

from typing import Any, ClassVar, Generic, TypeVar

from pydantic import BaseModel, Field

T = TypeVar("T")

NEXT_CURSOR = "pass as `cursor` for the next page; null on the last"


def deprecated_alias(replaced_by: str = "items", description: str = "") -> Any:
    """The pydantic field of an old name kept beside `replaced_by` for one version: required
    (always sent), marked deprecated, its description saying what to read instead."""
    return Field(description=(f"{description}; " if description else "")
                 + f"deprecated: use `{replaced_by}` (kept for one version)", deprecated=True)


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


__all__ = ["NEXT_CURSOR", "Page", "deprecated_alias"]
