"""The response bodies of the REST API, for /openapi.json and its readers.

These models declare each answer's shape (`response_model` / `responses`); a route that builds
its answer as a dict sends it through `answers.model_response`, which checks it against the
model's JSON Schema before orjson encodes it. The answers the Python client reads are declared
in trajhub.records (plain pydantic, no server), with their examples (`example_config`); the
rest are here.
"""

from __future__ import annotations

from typing import Any, Literal

from fastapi.encoders import jsonable_encoder
from pydantic import BaseModel, ConfigDict, Field

# the declared records (trajhub.records) are the response models of their rows
from trajhub.records import datasets as declared_sets
from trajhub.records import evaluations as declared_evaluations
from trajhub.records.documents import SpanExplanation, TrajectoryDocument
from trajhub.records.evaluations import EvaluationResult as EvaluationResult
from trajhub.records.evaluations import EvaluatorAggregate as EvaluatorAggregate
from trajhub.records.evaluations import ItemOutcomes as ItemOutcomes
from trajhub.records.examples import EXAMPLES, TRACE_ID
from trajhub.records.examples import example_config as example_config
from trajhub.records.pages import Page, deprecated_alias
from trajhub.records.projects import ProjectEntry as ProjectEntry
from trajhub.records.spans import SPAN_EXAMPLE, SpanView
from trajhub.records.traces import TraceSummary as TraceSummary
from trajhub.records.trajectories import CostView as CostView
from trajhub.records.trajectories import TrajectorySummary as TrajectorySummary
from trajhub.service.api.params import TimeText


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
    model_config = example_config({"status": "ready", "derivation_backlog": 12,
                                   "derivation_backlog_oldest_ms": 800,
                                   "derivation_backlog_oldest_seconds": 0.8})
    status: Literal["ready", "unavailable", "degraded"]
    detail: str | None = Field(None, description="why not ready")
    derivation_backlog: int | None = Field(None, description=(
        "traces waiting for their trajectory to be derived (every replica's: read from the "
        "database); absent when the database could not be read"))
    derivation_backlog_oldest_ms: int | None = Field(None, description=(
        "how long the oldest of them has waited, in whole milliseconds (0 when none waits)"))
    derivation_backlog_oldest_seconds: float | None = deprecated_alias(
        "derivation_backlog_oldest_ms", "how long the oldest of them has waited, in seconds "
        "(0 when none waits)", None)


class ErrorDetail(BaseModel):
    """Every 4xx and 5xx of the REST API."""

    model_config = example_config({"detail": "unknown query parameter 'servce'"})
    detail: str | list[dict[str, Any]] = Field(
        description="what was wrong (a 422 for a bad JSON body lists pydantic's errors)")


# ------------------------------------------------------------------------------------ traces

class TracePage(Page[TraceSummary]):
    model_config = example_config({"items": [TraceSummary.example()], "next_cursor": None})




_PROJECT_EXAMPLE = {"name": "default", "trace_count": 42, "span_count": 518,
                    "first_span_time": "2026-11-20T08:00:00Z",
                    "last_span_time": "2026-11-22T10:00:02.103Z",
                    "first_span_at": "2026-11-20T08:00:00Z",
                    "last_span_at": "2026-11-22T10:00:02.103Z"}


class ProjectList(Page[ProjectEntry]):
    model_config = example_config({"items": [_PROJECT_EXAMPLE], "next_cursor": None,
                                   "projects": [_PROJECT_EXAMPLE]})
    projects: list[ProjectEntry] = deprecated_alias()


# ------------------------------------------------------------------------------ trajectories

class TrajectoryPage(Page[TrajectorySummary]):
    model_config = example_config({"items": [TrajectorySummary.example()],
                                   "next_cursor": None, "total": 1})
    total: int | None = Field(None, description="how many match (only with `count=true`)")


class TraceSpanPage(Page[SpanView]):
    """A page of a trace's spans in start order (start, end, span id)."""

    model_config = example_config({"trace_id": TRACE_ID, "total": 1, "items": [SPAN_EXAMPLE],
                                   "next_cursor": None})
    trace_id: str
    total: int = Field(description="how many spans the trace has: its `span_count` in the "
                       "trace list, which the derivation updates moments after spans arrive")


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
                             "created_time": "2026-11-22T10:00:00Z",
                             "updated_time": "2026-11-22T10:00:00Z",
                             "created_at": "2026-11-22T10:00:00Z",
                             "updated_at": "2026-11-22T10:00:00Z"}


class Dataset(declared_sets.Dataset):
    model_config = example_config(DATASET_EXAMPLE)


class DatasetList(Page[Dataset]):
    model_config = example_config({"items": [DATASET_EXAMPLE], "next_cursor": None})


ITEM_EXAMPLE: dict[str, Any] = {
        "id": "6f1d0c6b1c7e4a0e9d5b0f3a8e2c4b71", "dataset": "weather",
        "input": "what is the weather in sf", "reference_output": "It is sunny in sf.",
        "expectations": {"agents": ["LangGraph"], "tools": {"LangGraph": ["get_weather"]}},
        "metadata": {"trace_id": TRACE_ID, "input_messages": [
            {"role": "system", "content": "Answer briefly."},
            {"role": "user", "content": "what is the weather in sf"}]},
        "source_trace_id": TRACE_ID, "tags": ["smoke"],
        "created_time": "2026-11-22T10:00:00Z", "updated_time": "2026-11-22T10:00:00Z",
        "created_at": "2026-11-22T10:00:00Z", "updated_at": "2026-11-22T10:00:00Z"}


class Item(declared_sets.Item):
    model_config = example_config(ITEM_EXAMPLE)
    # the snapshot as the API's model of a trajectory document (trajhub.records.datasets:
    # ItemWithTrajectory declares it as a plain object)
    trajectory: TrajectoryDocument | None = Field(
        None, exclude_if=lambda value: value is None,
        description=declared_sets.TRAJECTORY_DESCRIPTION)


class ItemPage(Page[Item]):
    model_config = example_config({"items": [ITEM_EXAMPLE], "next_cursor": None})


class FillOutcome(declared_sets.FillOutcome):
    model_config = example_config({"added": 2, "skipped_duplicates": 1, "sampled_out": 0,
                             "not_found": [], "not_final": [],
                             "item_ids": ["6f1d0c6b1c7e4a0e9d5b0f3a8e2c4b71"]})


class ImportOutcome(declared_sets.ImportOutcome):
    model_config = example_config({"added": 10, "skipped_duplicates": 0})


# ------------------------------------------------------------------------------- evaluations

EVALUATION_EXAMPLE: dict[str, Any] = {
        "id": 7, "dataset": "weather", "target": "snapshot", "run": None,
        "evaluators": [{"name": "expected_agents_tools", "config": {}}], "status": "done",
        "error": None, "item_count": 3, "done_items": 3,
        "created_time": "2026-11-22T10:00:00Z", "finished_time": "2026-11-22T10:00:01Z",
        "created_at": "2026-11-22T10:00:00Z", "finished_at": "2026-11-22T10:00:01Z"}


class Evaluation(declared_evaluations.Evaluation):
    model_config = example_config(EVALUATION_EXAMPLE)


class EvaluationDetail(declared_evaluations.EvaluationDetail):
    model_config = example_config({
        **EVALUATION_EXAMPLE,
        "aggregates": [{"evaluator": "expected_agents_tools", "total": 3, "passed": 2,
                        "failed": 1, "errors": 0, "pass_rate": 0.667, "mean_score": 0.8}],
        "items": {"total": 3, "evaluated": 3, "passed": 2, "errors": 0, "failed": 1}})


class EvaluationPage(Page[Evaluation]):
    model_config = example_config({"items": [EVALUATION_EXAMPLE], "next_cursor": None})


class ResultPage(Page[EvaluationResult]):
    model_config = example_config({"items": [EvaluationResult.example()], "next_cursor": None})


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
