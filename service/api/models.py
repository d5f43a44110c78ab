"""The response bodies of the REST API, for /openapi.json and its readers.

These models declare each answer's shape (`response_model` / `responses`); a route that builds
its answer as a dict sends it through `answers.model_response`, which checks it against the
model's JSON Schema before orjson encodes it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Literal

from fastapi.encoders import jsonable_encoder
from pydantic import BaseModel, ConfigDict, Field
from pydantic.config import ExtraValues

from trajhub.records.evaluations import EVALUATION_RESULT
from trajhub.records.pages import Page, deprecated_alias
from trajhub.records.traces import TRACE_SUMMARY
from trajhub.records.trajectories import COST, TRAJECTORY_SUMMARY
from trajhub.service.api.cursors import offset_cursor
from trajhub.service.api.params import TimeText
from trajhub.service.api.records import response_model

TRACE_ID = "4bf92f3577b34da6a3ce929d0e0e4736"
SPAN_ID = "00f067aa0ba902b7"

#: each model's example by model name (the OpenAPI component name)
EXAMPLES: dict[str, dict[str, Any]] = {}


def example_config(doc: dict[str, Any], extra: ExtraValues | None = None) -> ConfigDict:
    """A model's config with `doc` as its example in the OpenAPI document (kept there exactly,
    nulls included: see `restore_examples`), and its `extra` setting if given."""

    def add(schema: dict[str, Any], model: type[BaseModel]) -> None:
        schema["examples"] = [doc]
        EXAMPLES[model.__name__] = doc

    if extra is None:
        return ConfigDict(json_schema_extra=add)
    return ConfigDict(json_schema_extra=add, extra=extra)


def restore_examples(openapi: dict[str, Any]) -> dict[str, Any]:
    """Put the null values back into the examples of an OpenAPI document built by FastAPI, which
    drops every null from the whole document: an example must show a nullable field as null, or
    it no longer validates against its own model."""
    for name, schema in openapi.get("components", {}).get("schemas", {}).items():
        # a model both read and answered is split into Name-Input and Name-Output
        doc = EXAMPLES.get(name.removesuffix("-Input").removesuffix("-Output"))
        if doc is not None and "examples" in schema:
            schema["examples"] = [jsonable_encoder(doc)]
    return openapi


#: the config of every request body: an unknown field is a 422, and so is a value of another
#: JSON type than the schema says (`0` for a boolean, `false` for a number), which pydantic
#: would otherwise convert: /openapi.json promises the types, so the server keeps to them
BODY_CONFIG = ConfigDict(extra="forbid", strict=True)


# ------------------------------------------------------------------------------------ health

class HealthStatus(BaseModel):
    model_config = example_config({"status": "ok"})
    status: Literal["ok"]


class ReadyStatus(BaseModel):
    model_config = example_config({"status": "ready"})
    status: Literal["ready", "unavailable", "degraded"]
    detail: str | None = Field(None, description="why not ready")


class ErrorDetail(BaseModel):
    """Every 4xx and 5xx of the REST API."""

    model_config = example_config({"detail": "unknown query parameter 'servce'"})
    detail: str | list[dict[str, Any]] = Field(
        description="what was wrong (a 422 for a bad JSON body lists pydantic's errors)")


# ------------------------------------------------------------------------------------ traces

# The models of declared records (trajhub.records) are generated; type checkers see BaseModel.
if TYPE_CHECKING:
    TraceSummary = BaseModel
    CostView = BaseModel
    TrajectorySummary = BaseModel
    EvaluationResult = BaseModel
else:
    #: a trace list row, as trajhub.records.traces declares it
    TraceSummary = response_model(TRACE_SUMMARY)
    #: money and tokens (trajhub.records.trajectories: COST)
    CostView = response_model(COST)
    #: a trajectory list row, as trajhub.records.trajectories declares it
    TrajectorySummary = response_model(TRAJECTORY_SUMMARY)
    #: an evaluation result, as trajhub.records.evaluations declares it
    EvaluationResult = response_model(EVALUATION_RESULT)


class TracePage(Page[TraceSummary]):
    model_config = example_config({"items": [TRACE_SUMMARY.example()], "next_cursor": None})


class SpanStatus(BaseModel):
    code: str | int = Field(description="unset, ok or error")
    message: str


class SpanEvent(BaseModel):
    name: str
    time_unix_nano: str
    attributes: dict[str, Any]


class SpanScope(BaseModel):
    name: str
    version: str


class CozeLoopView(BaseModel):
    span_type: str
    status_code: int
    input: str
    output: str
    log_id: str
    workspace_id: str
    object_storage: str


SPAN_EXAMPLE: dict[str, Any] = {
        "trace_id": TRACE_ID, "span_id": SPAN_ID, "parent_span_id": "", "name": "LangGraph",
        "kind": "internal", "start_time": "2026-11-22T10:00:00Z",
        "end_time": "2026-11-22T10:00:02.103000Z", "start_time_unix_nano": "1795341600000000000",
        "end_time_unix_nano": "1795341602103000000", "duration_ms": 2103.0,
        "status": {"code": "unset", "message": ""},
        "attributes": {"openinference.span.kind": "CHAIN"}, "events": [],
        "resource": {"service.name": "weather-agent"},
        "scope": {"name": "openinference.instrumentation.langchain", "version": "0.1.0"},
        "format": "otlp"}


class SpanView(BaseModel):
    """A stored span, decoded."""

    model_config = example_config(SPAN_EXAMPLE)
    trace_id: str
    span_id: str
    parent_span_id: str
    name: str
    kind: str | int = Field(description="OTLP span kind name (internal, server, client, …)")
    start_time: str
    end_time: str
    start_time_unix_nano: str
    end_time_unix_nano: str
    duration_ms: float
    status: SpanStatus
    attributes: dict[str, Any]
    events: list[SpanEvent]
    resource: dict[str, Any]
    scope: SpanScope
    format: Literal["otlp", "cozeloop"] = Field(description="how the span arrived")
    cozeloop: CozeLoopView | None = Field(None, description="Coze Loop native fields "
                                          "(format cozeloop only)")


class SpanNode(SpanView):
    model_config = example_config({**SPAN_EXAMPLE, "children": []})
    children: list[SpanNode] = Field(description="child spans (view=tree and trajectory)")


class TrajectoryNode(SpanNode):
    model_config = example_config({**SPAN_EXAMPLE, "children": [], "step_type": "root",
                             "original_parent_span_id": ""})
    step_type: str = Field(description="root, agent, graph, model or tool")
    original_parent_span_id: str = Field(description="the parent as sent (`parent_span_id` is "
                                         "the nearest kept ancestor)")


class TraceSpans(BaseModel):
    """`format=json`: the spans as a tree (`view=tree`, roots with nested `children`), in
    start order (`view=flat`), or only the trajectory nodes (`view=trajectory`)."""

    model_config = example_config({"trace_id": TRACE_ID, "spans": [{
        **SPAN_EXAMPLE, "children": []}]})

    trace_id: str
    spans: list[TrajectoryNode] | list[SpanNode] | list[SpanView]


class OtlpTrace(BaseModel):
    """`format=otlp`: an OTLP/JSON ExportTraceServiceRequest of the spans as received."""

    model_config = example_config({"resourceSpans": [{
        "resource": {"attributes": [{"key": "service.name",
                                     "value": {"stringValue": "weather-agent"}}]},
        "scopeSpans": [{"scope": {"name": "openinference.instrumentation.langchain"},
                        "spans": [{"traceId": TRACE_ID, "spanId": SPAN_ID, "name": "LangGraph",
                                   "kind": 1, "startTimeUnixNano": "1795341600000000000",
                                   "endTimeUnixNano": "1795341602103000000"}]}]}]})

    resourceSpans: list[dict[str, Any]]


class CozeLoopTrace(BaseModel):
    """`format=cozeloop`: the Coze Loop native spans (UploadSpan) as received."""

    model_config = example_config({"spans": [{
        "trace_id": TRACE_ID, "span_id": SPAN_ID, "parent_id": "0", "span_name": "ReActAgent",
        "span_type": "graph", "started_at_micros": 1795341600000000,
        "duration_micros": 2103000, "status_code": 0, "input": "what is the weather in sf",
        "output": "It is sunny in sf."}]})

    spans: list[dict[str, Any]]


TraceBody = TraceSpans | OtlpTrace | CozeLoopTrace


class ProjectEntry(BaseModel):
    name: str
    trace_count: int
    span_count: int
    first_span_at: str | None = Field(description="RFC 3339: when the earliest span started")
    last_span_at: str | None = Field(description="RFC 3339: when the latest span ended")


_PROJECT_EXAMPLE = {"name": "default", "trace_count": 42, "span_count": 518,
                    "first_span_at": "2026-11-20T08:00:00Z",
                    "last_span_at": "2026-11-22T10:00:02.103Z"}


class ProjectList(Page[ProjectEntry]):
    model_config = example_config({"items": [_PROJECT_EXAMPLE], "next_cursor": None,
                                   "projects": [_PROJECT_EXAMPLE]})
    projects: list[ProjectEntry] = deprecated_alias()


# ------------------------------------------------------------------------------ trajectories

class TrajectoryPage(Page[TrajectorySummary]):
    model_config = example_config({"items": [TRAJECTORY_SUMMARY.example()],
                                   "next_cursor": None, "total": 1})
    total: int | None = Field(None, description="how many match (only with `count=true`)")


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
        "next_cursor": offset_cursor(1), "steps": [_STEP_EXAMPLE], "next_offset": 1})
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


class TraceSpanPage(Page[SpanView]):
    """A page of a trace's spans in start order (start, end, span id)."""

    model_config = example_config({"trace_id": TRACE_ID, "total": 1, "items": [SPAN_EXAMPLE],
                                   "next_cursor": None})
    trace_id: str
    total: int = Field(description="how many spans the trace has: its `span_count` in the "
                       "trace list, which the derivation updates moments after spans arrive")


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


class RederiveRequest(BaseModel):
    model_config = BODY_CONFIG
    since: TimeText | None = Field(None, description="only traces starting at or "
                              "after (RFC 3339 or Unix ns)")
    outdated: bool = Field(False, description="only trajectories built by another normalizer "
                           "version")


class RederiveQueued(BaseModel):
    model_config = example_config({"queued": 2, "normalizer_version": "1"})
    queued: int = Field(description="traces queued for the derivation worker")
    normalizer_version: str


class NormalizedTrace(BaseModel):
    trace_id: str
    trajectory: TrajectoryDocument | None = None
    warnings: list[str] | None = None
    explanation: list[SpanExplanation] | None = None
    error: str | None = Field(None, description="why no trajectory could be derived")


class NormalizeResult(BaseModel):
    model_config = example_config({"normalizer_version": "1", "rejected_spans": 0,
                             "error_message": "", "traces": [{
                                 "trace_id": TRACE_ID, "trajectory": {
                                     "id": TRACE_ID, "root_step": {}, "agent_steps": []},
                                 "warnings": [], "explanation": []}]})
    normalizer_version: str
    rejected_spans: int = Field(description="spans ingest would reject (as in OTLP "
                                "partial_success)")
    error_message: str = Field(description="why they would be rejected")
    traces: list[NormalizedTrace] = Field(description="one result per trace in the body")


# ---------------------------------------------------------------------------------- datasets

DATASET_EXAMPLE: dict[str, Any] = {"name": "weather", "description": "", "item_count": 3,
                             "created_at": "2026-11-22T10:00:00Z",
                             "updated_at": "2026-11-22T10:00:00Z"}


class Dataset(BaseModel):
    model_config = example_config(DATASET_EXAMPLE)
    name: str
    description: str
    item_count: int
    created_at: str
    updated_at: str


class DatasetList(Page[Dataset]):
    model_config = example_config({"items": [DATASET_EXAMPLE], "next_cursor": None})


ITEM_EXAMPLE: dict[str, Any] = {
        "id": "6f1d0c6b1c7e4a0e9d5b0f3a8e2c4b71", "dataset": "weather",
        "input": "what is the weather in sf", "reference_output": "It is sunny in sf.",
        "expectations": {"agents": ["LangGraph"], "tools": {"LangGraph": ["get_weather"]}},
        "metadata": {"trace_id": TRACE_ID, "input_messages": [
            {"role": "system", "content": "Answer briefly."},
            {"role": "user", "content": "what is the weather in sf"}]},
        "source_trace_id": TRACE_ID, "tags": ["smoke"], "created_at": "2026-11-22T10:00:00Z",
        "updated_at": "2026-11-22T10:00:00Z"}


class Item(BaseModel):
    model_config = example_config(ITEM_EXAMPLE)
    id: str
    dataset: str
    input: Any
    reference_output: Any
    expectations: dict[str, Any]
    metadata: dict[str, Any] = Field(
        description="the rest of the run's state: what its input and output held besides the "
                    "request and the final answer (filled items), or what was given")
    source_trace_id: str | None
    tags: list[str]
    created_at: str
    updated_at: str
    trajectory: TrajectoryDocument | None = Field(
        None, description="the trajectory snapshot (single items, or `include_trajectory`)")


class ItemPage(Page[Item]):
    model_config = example_config({"items": [ITEM_EXAMPLE], "next_cursor": None})


class FillOutcome(BaseModel):
    model_config = example_config({"added": 2, "skipped_duplicates": 1, "sampled_out": 0,
                             "not_found": [], "not_final": [],
                             "item_ids": ["6f1d0c6b1c7e4a0e9d5b0f3a8e2c4b71"]})
    added: int
    skipped_duplicates: int = Field(description="traces the set already held")
    sampled_out: int
    not_found: list[str] = Field(description="trace ids with no trajectory")
    not_final: list[str] = Field(description="trace ids whose trajectory is still open")
    item_ids: list[str]


class ImportOutcome(BaseModel):
    model_config = example_config({"added": 10, "skipped_duplicates": 0})
    added: int
    skipped_duplicates: int


# ------------------------------------------------------------------------------- evaluations

EVALUATION_EXAMPLE: dict[str, Any] = {
        "id": 7, "dataset": "weather", "target": "snapshot", "run": None,
        "evaluators": [{"name": "expected_agents_tools", "config": {}}], "status": "done",
        "error": None, "item_count": 3, "done_items": 3, "created_at": "2026-11-22T10:00:00Z",
        "finished_at": "2026-11-22T10:00:01Z"}


class Evaluation(BaseModel):
    model_config = example_config(EVALUATION_EXAMPLE)
    id: int
    dataset: str
    target: Literal["snapshot", "live"]
    run: str | None
    evaluators: list[dict[str, Any]]
    status: str = Field(description="running, done or failed")
    error: str | None
    item_count: int
    done_items: int
    created_at: str | None
    finished_at: str | None


class EvaluatorAggregate(BaseModel):
    evaluator: str
    total: int
    passed: int
    failed: int
    errors: int
    pass_rate: float | None = Field(description="errors count as not passed")
    mean_score: float | None


class ItemOutcomes(BaseModel):
    total: int
    evaluated: int
    passed: int
    errors: int
    failed: int


class EvaluationDetail(Evaluation):
    model_config = example_config({
        **EVALUATION_EXAMPLE,
        "aggregates": [{"evaluator": "expected_agents_tools", "total": 3, "passed": 2,
                        "failed": 1, "errors": 0, "pass_rate": 0.667, "mean_score": 0.8}],
        "items": {"total": 3, "evaluated": 3, "passed": 2, "errors": 0, "failed": 1}})
    aggregates: list[EvaluatorAggregate]
    items: ItemOutcomes


class EvaluationPage(Page[Evaluation]):
    model_config = example_config({"items": [EVALUATION_EXAMPLE], "next_cursor": None})


class ResultPage(Page[EvaluationResult]):
    model_config = example_config({"items": [EVALUATION_RESULT.example()], "next_cursor": None})


#: the error answers every REST route may give
ERRORS: dict[int | str, dict[str, Any]] = {
    400: {"model": ErrorDetail, "description": "a bad parameter (named in `detail`)"},
    401: {"model": ErrorDetail, "description": "no API key, or one that is not valid "
                                               "(unknown or revoked); `detail` says which"},
    403: {"model": ErrorDetail, "description": "the API key is for another project, or its "
                                               "scope is too small; `detail` says which"},
    # FastAPI would document its own 422 body (a list only); ours may also carry one sentence
    422: {"model": ErrorDetail, "description": "a JSON body that does not fit its schema "
                                               "(pydantic's errors), or a value in it that the "
                                               "route cannot use (`detail` names it)"},
    503: {"model": ErrorDetail, "description": "the database is unreachable: retry after "
                                               "`Retry-After` seconds; or a stored value needs "
                                               "a compression dictionary the database does "
                                               "not hold (`detail` names it)"},
}
#: the answer of a route that names something which may not exist
NOT_FOUND: dict[int | str, dict[str, Any]] = {
    404: {"model": ErrorDetail, "description": "not found (`detail` says what)"},
}
#: the answer of a route with a request body to a body of another Content-Type
UNSUPPORTED_MEDIA: dict[int | str, dict[str, Any]] = {
    415: {"model": ErrorDetail, "description": "the body's Content-Type is not one the route "
                                               "takes (`detail` names them)"},
}


# ------------------------------------------------------------------------------------ ingest

class OtlpPartialSuccess(BaseModel):
    rejectedSpans: str | int = Field(
        description="spans rejected (a string in OTLP/JSON: int64)")
    errorMessage: str


class OtlpExportResponse(BaseModel):
    """An ExportTraceServiceResponse: in OTLP/JSON here, in protobuf for protobuf requests.
    `partialSuccess` is present only when spans were rejected (named in `errorMessage`)."""

    model_config = example_config({"partialSuccess": {
        "rejectedSpans": "1", "errorMessage": "rejected 1 span(s): span 'x': invalid trace_id"}})
    partialSuccess: OtlpPartialSuccess | None = None


class CozeLoopReply(BaseModel):
    """Coze Loop's reply: `code` 0 when stored (`msg` then names rejected spans, if any)."""

    model_config = example_config({"code": 0, "msg": ""})
    code: int
    msg: str


def inline_schema(model: type[BaseModel]) -> dict[str, Any]:
    """The model's JSON Schema with its `$defs` put in place: an OpenAPI document resolves
    `#/$defs/...` from its own root, where they are not."""
    schema = model.model_json_schema()
    defs = schema.pop("$defs", {})

    def resolve(node: Any) -> Any:
        if isinstance(node, dict):
            ref = node.get("$ref")
            if isinstance(ref, str) and ref.startswith("#/$defs/"):
                return resolve(defs[ref.removeprefix("#/$defs/")])
            return {k: resolve(v) for k, v in node.items()}
        if isinstance(node, list):
            return [resolve(v) for v in node]
        return node

    resolved: dict[str, Any] = resolve(schema)
    return resolved


class RpcStatus(BaseModel):
    """A google.rpc.Status in OTLP/JSON: what an OTLP/HTTP export answers on failure
    (docs/otlp.md A5), in protobuf for protobuf requests."""

    model_config = example_config({"code": 3, "message": "body is not valid JSON"})
    code: int = Field(description="the gRPC status code (3 INVALID_ARGUMENT, 14 UNAVAILABLE, …)")
    message: str
    details: list[dict[str, Any]] | None = Field(None, description="RetryInfo on 503")


def _otlp_error(description: str) -> dict[str, Any]:
    return {"description": description + ": a google.rpc.Status in the request's encoding",
            "content": {
                "application/json": {"schema": inline_schema(RpcStatus)},
                "application/x-protobuf": {"schema": {
                    "type": "string", "format": "binary",
                    "description": "google.rpc.Status"}}}}


#: the `responses` of the OTLP/HTTP export routes
OTLP_RESPONSES: dict[int | str, dict[str, Any]] = {
    200: {
        "description": "stored; rejected spans are counted in `partialSuccess`",
        "content": {
            "application/json": {"schema": inline_schema(OtlpExportResponse)},
            "application/x-protobuf": {"schema": {
                "type": "string", "format": "binary",
                "description": "opentelemetry.proto.collector.trace.v1."
                               "ExportTraceServiceResponse"}},
        }},
    400: _otlp_error("an undecodable body, or every span in it invalid (code 3)"),
    401: _otlp_error("no API key, or one that is not valid (code 16, UNAUTHENTICATED)"),
    403: _otlp_error("the API key is for another project or lacks the `ingest` scope (code 7, "
                     "PERMISSION_DENIED)"),
    413: _otlp_error("the (decompressed) body is over the size limit (code 8)"),
    415: _otlp_error("not protobuf or JSON (code 3)"),
    503: _otlp_error("the database is unreachable or ingestion is saturated: retry after "
                     "`Retry-After` seconds (code 14, with RetryInfo)"),
}
#: the `responses` of the Coze Loop ingest routes: every answer is a CozeLoopReply
COZELOOP_RESPONSES: dict[int | str, dict[str, Any]] = {
    200: {"model": CozeLoopReply},
    400: {"model": CozeLoopReply, "description": "a body that cannot be read, or in which "
                                                 "every span is invalid; `msg` says why"},
    401: {"model": CozeLoopReply, "description": "no API key (COZELOOP_API_TOKEN), or one "
                                                 "that is not valid; `msg` says which"},
    403: {"model": CozeLoopReply, "description": "the API key is for another workspace "
                                                 "(project) or lacks the `ingest` scope"},
    413: {"model": CozeLoopReply, "description": "the body is over the size limit"},
    415: {"model": CozeLoopReply, "description": "not the Content-Type the route takes"},
    503: {"model": CozeLoopReply, "description": "the database is unreachable or ingestion "
                                                 "is saturated: retry after `Retry-After` "
                                                 "seconds"},
}
