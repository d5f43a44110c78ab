"""The OpenAPI example of a list answer that also carries its items under their old name (a
deprecated alias of `items`, kept for clients written before pages)."""

from __future__ import annotations

from typing import Any


def aliased_page_example(item: Any, alias: str) -> dict[str, Any]:
    """A one-item page: `item` in `items` and again in the deprecated `alias`."""
    return {"items": [item], "next_cursor": None, alias: [item]}
