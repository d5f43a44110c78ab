"""The trajectory query: one typed model for `GET /api/v1/trajectories` and for filling an
evaluation set by query (`POST /api/v1/datasets/{name}/fill`). Its parameters are the filters
trajhub.records.trajectories declares (TRAJECTORY_FILTER), so a filter declared there works in
both with the same name, type and checks, and in the storage query, the CLI and the client."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Literal

from fastapi import HTTPException
from pydantic import BaseModel, ConfigDict, Field

from trajhub.records.trajectories import TRAJECTORY_FILTER, TRAJECTORY_SORTS
from trajhub.service.api.common import Text, decode_cursor, time_ns
from trajhub.service.api.records import query_model
from trajhub.storage import trajectory_reads


class TrajectoryQueryBase(BaseModel):
    """What the generated query model does with its parameters."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    def filter_values(self) -> dict[str, Any]:
        """The given filters by name, times as Unix ns; a bad time is a 400 naming its
        parameter."""
        values: dict[str, Any] = {}
        for param in TRAJECTORY_FILTER.params:
            value = getattr(self, param.name)
            if value is None:
                continue
            if param.convert == "time":
                try:
                    value = time_ns(value, param.name)
                except ValueError as exc:
                    raise HTTPException(400, str(exc)) from None
            values[param.name] = value
        return values

    def to_filter(self, *, sort: str = "start_time", descending: bool = True,
                  cursor: tuple[object, str] | None = None, limit: int = 50
                  ) -> trajectory_reads.TrajectoryFilter:
        """The storage filter."""
        return trajectory_reads.TrajectoryFilter(
            values=self.filter_values(), sort=sort, descending=descending, cursor=cursor,
            limit=limit)


# the generated model's fields are not known statically: type checkers see the base
if TYPE_CHECKING:
    TrajectoryQuery = TrajectoryQueryBase
    SortName = str
else:
    TrajectoryQuery = query_model(TRAJECTORY_FILTER, TrajectoryQueryBase)
    SortName = Literal[tuple(TRAJECTORY_SORTS)]


class TrajectoryListQuery(TrajectoryQuery):
    """The query parameters of `GET /api/v1/trajectories`: the filters, then order and paging."""

    model_config = ConfigDict(extra="ignore", frozen=True)

    sort: SortName = "start_time"
    order: Literal["desc", "asc"] = "desc"
    # a plain int: the bounds of an Annotated Int32 would override these
    limit: int = Field(50, ge=1, le=1000)
    cursor: Text | None = Field(None, description="`next_cursor` of the previous page")
    count: bool = Field(False, description="add `total`: how many trajectories match (the "
                        "cursor aside)")

    def list_filter(self) -> trajectory_reads.TrajectoryFilter:
        # the sort value is an integer for every sort (start ns, ms, tokens, steps)
        return self.to_filter(sort=self.sort, descending=self.order == "desc",
                              cursor=decode_cursor(self.cursor, (int, str)),
                              limit=self.limit)
