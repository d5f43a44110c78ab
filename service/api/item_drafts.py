"""REST: the dataset item a trajectory would become, before anything is saved.

A person adding a run to a set sees (and edits) the pre-filled expectations first; the draft is
built by the same function as `POST /api/v1/datasets/{name}/fill`, so what is shown is what a
fill stores.
"""

from __future__ import annotations

from typing import Any, Literal

import orjson
from fastapi import APIRouter
from pydantic import BaseModel, Field

from trajhub.service.api.answers import CheckedRoute
from trajhub.service.api.dataset_fill import item_from_trajectory
from trajhub.service.api.models import example_config
from trajhub.service.api.params import PREFIX, TraceIdPath
from trajhub.service.api.scopes import Project, Rt
from trajhub.service.api.stored import derived_trajectory

router = APIRouter(prefix=PREFIX, route_class=CheckedRoute, tags=["datasets"])


class ItemDraft(BaseModel):
    model_config = example_config({
        "source_trace_id": "1de9ea6670d3da1fc735df5ef7697fb9", "status": "final",
        "input": "What's the weather in Paris, what is 2+3, and what is 1/0?",
        "reference_output": "It is sunny and 22C in Paris. 2 + 3 = 5. 1/0 is undefined "
                            "(division by zero).",
        "expectations": {
            "agents": ["LangGraph"],
            "tools": {"LangGraph": ["get_weather", "add", "divide"]},
            "tool_order": ["get_weather", "add", "divide"],
            "trajectory": [{"type": "agent", "name": "LangGraph"},
                           {"type": "graph", "name": "agent"},
                           {"type": "tool", "name": "get_weather", "args": {"city": "Paris"},
                            "turn": 0}],
            "graph_runs": [["__start__", "agent", "tools", "agent", "tools", "agent"]]},
        "metadata": {"trace_id": "1de9ea6670d3da1fc735df5ef7697fb9"}})
    source_trace_id: str
    status: Literal["open", "final"] = Field(
        description="the trajectory's status: only a final one can be added to a set")
    input: Any = Field(description="the user's request, as the item would store it")
    reference_output: Any = Field(description="the run's final answer, as the reference")
    expectations: dict[str, Any] = Field(
        description="agents, tools per agent, tool_order and trajectory: what the run did")
    metadata: dict[str, Any] = Field(
        description="the rest of the run's state, as the item would store it (its source "
                    "trace id, the conversation before the request, the final message with "
                    "its tool calls, ...)")


@router.get("/trajectories/{trace_id}/item-draft", response_model=ItemDraft,
            summary="The dataset item this trajectory would become (nothing is stored)",
            responses={404: {"description": "No trajectory for this trace (yet)"},
                       422: {"description": "The trajectory could not be derived"}})
async def item_draft(trace_id: TraceIdPath, rt: Rt, project: Project) -> ItemDraft:
    row, document = await derived_trajectory(rt, project, trace_id)
    item = item_from_trajectory(trace_id, document, ())
    return ItemDraft(
        source_trace_id=trace_id, status=row.status,
        input=orjson.loads(item.input) if item.input is not None else None,
        reference_output=(orjson.loads(item.reference_output)
                          if item.reference_output is not None else None),
        expectations=orjson.loads(item.expectations), metadata=orjson.loads(item.metadata))
