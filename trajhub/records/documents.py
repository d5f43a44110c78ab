"""Trajectory documents as the REST API answers them: the document (its top level named, the
rest free-form JSON in the format of `GET /api/v1/schema/trajectory`), a page of its steps, how
the derivation read each span, and the document as ATIF."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from trajhub.records.examples import SPAN_ID, TRACE_ID, example_config
from trajhub.records.pages import Page, deprecated_alias

#: the ATIF version trajhub writes: normalizers/atif.py's SCHEMA_VERSION, which this module cannot
#: import (the normalizers need protobuf); tests/test_client_models.py holds the two equal
ATIF_SCHEMA_VERSION = "ATIF-v1.8"


class TrajectoryDocument(BaseModel):
    """A trajectory in the format of `GET /api/v1/schema/trajectory` (that JSON Schema is the
    full contract; this names its top level)."""

    model_config = ConfigDict(extra="allow", json_schema_extra={"examples": [{
        "id": TRACE_ID, "root_step": {"name": "LangGraph", "input": "what is the weather in sf",
                                      "output": "It is sunny in sf."},
        "agent_steps": [{"name": "LangGraph", "steps": [{"type": "model"}, {"type": "tool"}]}]}]})
    id: str = Field(description="the trace id")
    root_step: dict[str, Any]
    agent_steps: list[dict[str, Any]]


_STEP_EXAMPLE = {"id": SPAN_ID, "parent_id": "17346b4501eaf614", "type": "model",
                 "name": "ChatOpenAI", "input": "[]", "output": "[]", "metadata": {},
                 "basic_info": {"started_at": "1700000000000", "duration": "5"},
                 "offset": 0, "agent_step_id": "17346b4501eaf614"}


class PagedAgent(BaseModel):
    """An entry of the document's `agent_steps` without its `steps`: where they are in the flat
    order instead."""

    model_config = ConfigDict(extra="allow")
    id: str
    name: str
    step_offset: int = Field(description="the offset of this agent's first step")
    step_count: int = Field(description="how many steps its `steps` list holds")
    step_types: dict[str, int] = Field(description="how many of them of each type")
    failed_steps: int = Field(description="how many of them failed")
    models: list[str] = Field(description="the distinct models of its model steps (their "
                              "`metadata.model_name`, else their name), in order")


class PagedStep(BaseModel):
    """A step of the document (`agent_steps[].steps[]`, in the format of `GET
    /api/v1/schema/trajectory`), with its place."""

    model_config = ConfigDict(extra="allow")
    offset: int = Field(description="its position in the flat order")
    agent_step_id: str = Field(description="the agent entry whose `steps` hold it")
    id: str
    type: str
    name: str


class TrajectoryStepPage(Page[PagedStep]):
    """A page of a trajectory's steps, with everything of the document but the other steps.
    The steps of all agents, flattened in document order (the steps of `agent_steps[0]`, then
    those of `agent_steps[1]`, …), are numbered by offset from 0."""

    model_config = example_config({
        "trace_id": TRACE_ID, "status": "final", "revision": 1, "normalizer_version": "1",
        "root_step": {"id": "17346b4501eaf614", "name": "LangGraph"},
        "agent_steps": [{"id": "17346b4501eaf614", "name": "LangGraph", "step_offset": 0,
                         "step_count": 2, "step_types": {"model": 1, "tool": 1},
                         "failed_steps": 0, "models": ["gpt-4o-mini"]}],
        "total": 2, "offset": 0, "limit": 1, "items": [_STEP_EXAMPLE],
        # the cursor of offset 1 (service/api/cursors.py, `offset_cursor`)
        "next_cursor": "WzFd", "steps": [_STEP_EXAMPLE], "next_offset": 1})
    trace_id: str
    status: str = Field(description="open (spans may still arrive) or final")
    revision: int = Field(description="the revision the page comes from; a later page of "
                          "another revision may place steps differently")
    normalizer_version: str
    root_step: dict[str, Any]
    agent_steps: list[PagedAgent]
    total: int = Field(description="how many steps the trajectory has")
    offset: int
    limit: int
    steps: list[PagedStep] = deprecated_alias()
    next_offset: int | None = deprecated_alias(
        "next_cursor", "pass as `offset` for the next page; null on the last")


class SpanExplanation(BaseModel):
    span_id: str
    name: str
    parent_span_id: str = Field(description="as sent")
    kind: str = Field(description="agent, graph, model, tool, other or root")
    convention: str
    rule: str = Field(description="the rule that classified the span")
    kept: bool
    new_parent_id: str = Field(description="nearest kept ancestor; empty for the root and for "
                               "dropped spans")
    warnings: list[str]


class TrajectoryExplanation(BaseModel):
    model_config = example_config({
        "trace_id": TRACE_ID, "status": "final", "revision": 1, "normalizer_version": "1",
        "derivation_error": None, "warnings": [], "spans": [{
            "span_id": SPAN_ID, "name": "LangGraph", "parent_span_id": "", "kind": "root",
            "convention": "openinference", "rule": "no parent", "kept": True,
            "new_parent_id": "", "warnings": []}]})
    trace_id: str
    status: Literal["open", "final"]
    revision: int
    normalizer_version: str
    derivation_error: str | None
    warnings: list[str]
    spans: list[SpanExplanation]


ATIF_EXAMPLE: dict[str, Any] = {
    "schema_version": ATIF_SCHEMA_VERSION, "session_id": "4bf92f3577b34da6a3ce929d0e0e4736",
    "trajectory_id": "00f067aa0ba902b7", "agent": {"name": "weather_agent", "version": "unknown"},
    "steps": [{"step_id": 1, "source": "user", "message": "what is the weather in sf"},
              {"step_id": 2, "source": "agent", "message": "It is sunny in sf.",
               "llm_call_count": 1, "metrics": {"prompt_tokens": 21, "completion_tokens": 7}}]}


class AtifTrajectory(BaseModel):
    """An ATIF trajectory (Harbor's RFC 0001, `ATIF-v1.8`; docs/atif.md): the fields named here,
    and the optional ones ATIF defines (`final_metrics`, `notes`, `extra`,
    `subagent_trajectories`, …)."""

    model_config = ConfigDict(extra="allow", json_schema_extra={"examples": [ATIF_EXAMPLE]})
    schema_version: str = Field(description="`ATIF-v1.0` … `ATIF-v1.8`; exports write "
                                            f"`{ATIF_SCHEMA_VERSION}`")
    agent: dict[str, Any] = Field(description="the agent: `name`, `version`, `model_name`, …")
    steps: list[dict[str, Any]] = Field(min_length=1, description="the steps, `step_id` from 1")


class AtifImported(BaseModel):
    """Where an imported ATIF file was stored."""

    model_config = ConfigDict(json_schema_extra={"examples": [{
        "project": "default", "trace_id": "4bf92f3577b34da6a3ce929d0e0e4736", "spans": 6}]})
    project: str
    trace_id: str = Field(description="the stored trajectory's trace id (a hash of the file: "
                                      "the same file imported again is stored once)")
    spans: int = Field(description="the spans written for it")
