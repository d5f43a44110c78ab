"""The trajectory query: one typed model for `GET /api/v1/trajectories` and for filling an
dataset by query (`POST /api/v1/datasets/{name}/fill`). Its parameters are the filters
trajhub.records.trajectories declares (its TrajectoryQuery), so a filter declared there works
in both with the same name, type and checks, and in the storage query, the CLI and the
client."""

from __future__ import annotations

from typing import Any, Literal

from fastapi import HTTPException
from pydantic import ConfigDict, Field, ValidationError

from trajhub.records import trajectories
from trajhub.records.scores import score_sort_name
from trajhub.records.trajectories import SORT_PATTERN, TRAJECTORY_SORTS
from trajhub.service.api.cursors import decode_cursor
from trajhub.service.api.params import CURSOR_DESCRIPTION, Text
from trajhub.service.api.records import filter_values
from trajhub.storage import trajectory_reads


class TrajectoryQuery(trajectories.TrajectoryQuery):
    """The declared filters, and what the API does with them."""

    def filter_values(self) -> dict[str, Any]:
        """The given filters by name, times as Unix ns, a score condition parsed; a bad one is
        a 400 naming its parameter."""
        return filter_values(self)

    def to_filter(self, *, sort: str = "start_time", descending: bool = True,
                  cursor: tuple[object, str] | None = None, limit: int = 50
                  ) -> trajectory_reads.TrajectoryFilter:
        """The storage filter."""
        return trajectory_reads.TrajectoryFilter(
            values=self.filter_values(), sort=sort, descending=descending, cursor=cursor,
            limit=limit)


class TrajectoryListQuery(TrajectoryQuery):
    """The query parameters of `GET /api/v1/trajectories`: the filters, then order and paging."""

    model_config = ConfigDict(extra="ignore", frozen=True)

    sort: str = Field("start_time", pattern=SORT_PATTERN, description=(
        f"{', '.join(TRAJECTORY_SORTS)}, or `score:<name>`: by the latest whole-run score of "
        "that name (a boolean as 1 or 0), listing only the trajectories that have one with a "
        "number or boolean value"))
    order: Literal["desc", "asc"] = "desc"
    # a plain int: the bounds of an Annotated Int32 would override these
    limit: int = Field(50, ge=1, le=1000)
    cursor: Text | None = Field(None, description=CURSOR_DESCRIPTION)
    count: bool = Field(False, description="add `total`: how many trajectories match (the "
                        "cursor aside)")

    def list_filter(self) -> trajectory_reads.TrajectoryFilter:
        # the sort value is an integer for the summary's sorts (start ns, ms, tokens, steps),
        # a number for a score
        kind = float if score_sort_name(self.sort) is not None else int
        return self.to_filter(sort=self.sort, descending=self.order == "desc",
                              cursor=decode_cursor(self.cursor, (kind, str)),
                              limit=self.limit)


def stored_filter(raw: Any) -> tuple[dict[str, Any], trajectory_reads.TrajectoryFilter]:
    """An online evaluation rule's filter (the list's query parameters by name, as JSON): the
    values as they are stored (checked and typed), and the storage filter. ValueError names
    what does not parse: an unknown filter, a value of the wrong type, a bad time or score."""
    if not isinstance(raw, dict):
        raise ValueError("filter must be an object of the trajectory list's filters by name")
    unknown = sorted(set(raw) - set(TrajectoryQuery.names()))
    if unknown:
        raise ValueError(f"filter: unknown filter {unknown[0]!r} (known: "
                         f"{', '.join(TrajectoryQuery.names())})")
    try:
        query = TrajectoryQuery.model_validate(raw)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        raise ValueError(f"filter.{where}: {first['msg']}") from None
    try:
        values = query.filter_values()
    except HTTPException as exc:
        raise ValueError(f"filter: {exc.detail}") from None
    stored = query.model_dump(exclude_none=True)
    return stored, trajectory_reads.TrajectoryFilter(values=values, limit=1)
