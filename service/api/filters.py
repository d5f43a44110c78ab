"""The trajectory query: one typed model for `GET /api/v1/trajectories` and for filling an
evaluation set by query (`POST /api/v1/datasets/{name}/fill`), so a filter added here works in
both with the same name, type and checks."""

from __future__ import annotations

from typing import Literal

from fastapi import HTTPException
from pydantic import BaseModel, ConfigDict, Field

from trajhub.service.api.common import Int64, Text, TimeText, decode_cursor, time_ns
from trajhub.storage import trajectory_reads


class TrajectoryQuery(BaseModel):
    """Filters over trajectory summaries; every one given must match."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    start: TimeText | None = Field(None, description="started at or after (RFC 3339 or Unix ns)")
    end: TimeText | None = Field(None, description="started before (RFC 3339 or Unix ns)")
    agent: Text | None = Field(None, description="has an agent (or graph) step of this name "
                               "(case-insensitive)")
    tool: Text | None = Field(None, description="called this tool (case-insensitive)")
    model: Text | None = Field(None, description="called this model (case-insensitive)")
    framework: Text | None = Field(None, description="langgraph, langchain, eino, …")
    service: Text | None = Field(None, description="the service (resource `service.name`, or "
                                 "Coze Loop's service name) of the run")
    session_id: Text | None = Field(None, description="the session (conversation, thread) id "
                                    "the instrumentation recorded")
    user_id: Text | None = Field(None, description="the user id the instrumentation recorded")
    status: Literal["open", "final"] | None = None
    failed_tool_steps: bool | None = Field(None, description="has (true) or lacks (false) "
                                           "failed tool steps")
    failed_model_steps: bool | None = Field(None, description="has (true) or lacks (false) "
                                            "failed model steps")
    has_error: bool | None = Field(None, description="the root or any step failed")
    min_tokens: Int64 | None = Field(None, description="input + output tokens")
    max_tokens: Int64 | None = None
    min_duration_ms: Int64 | None = None
    max_duration_ms: Int64 | None = None
    q: Text | None = Field(None, description="text in the root input or output, ignoring "
                           "case: the text must occur as written, and each of its words must "
                           "begin a word of the input or output (`weath` finds 'weather', "
                           "`eather` does not). Words are split as PostgreSQL's text search "
                           "splits them; only the first 100,000 characters of the input and of "
                           "the output are searched. Text without letters or digits is matched "
                           "by a slow scan.")

    def to_filter(self, *, sort: str = "start_time", descending: bool = True,
                  cursor: tuple[object, str] | None = None, limit: int = 50
                  ) -> trajectory_reads.TrajectoryFilter:
        """The storage filter; a bad time is a 400 naming its parameter."""
        try:
            start_ns, end_ns = time_ns(self.start, "start"), time_ns(self.end, "end")
        except ValueError as exc:
            raise HTTPException(400, str(exc)) from None
        return trajectory_reads.TrajectoryFilter(
            start_ns=start_ns, end_ns=end_ns, agent=self.agent, tool=self.tool,
            model=self.model, framework=self.framework, service=self.service,
            session_id=self.session_id, user_id=self.user_id, status=self.status,
            has_failed_tool_steps=self.failed_tool_steps,
            has_failed_model_steps=self.failed_model_steps, has_error=self.has_error,
            min_tokens=self.min_tokens, max_tokens=self.max_tokens,
            min_duration_ms=self.min_duration_ms, max_duration_ms=self.max_duration_ms,
            text=self.q, sort=sort, descending=descending, cursor=cursor, limit=limit)


class TrajectoryListQuery(TrajectoryQuery):
    """The query parameters of `GET /api/v1/trajectories`: the filters, then order and paging."""

    model_config = ConfigDict(extra="ignore", frozen=True)

    sort: Literal["start_time", "duration", "tokens", "steps"] = "start_time"
    order: Literal["desc", "asc"] = "desc"
    # a plain int: the bounds of an Annotated Int32 would override these
    limit: int = Field(50, ge=1, le=1000)
    cursor: Text | None = Field(None, description="`next_cursor` of the previous page")
    count: bool = Field(False, description="add `total`: how many trajectories match (the "
                        "cursor aside)")

    def list_filter(self) -> trajectory_reads.TrajectoryFilter:
        # the sort value is an integer for every sort (start ns, ms, tokens, steps)
        return self.to_filter(sort=self.sort, descending=self.order == "desc",
                              cursor=decode_cursor(self.cursor, (int, str)),  # type: ignore[arg-type]
                              limit=self.limit)
