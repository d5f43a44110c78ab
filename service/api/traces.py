"""REST: raw traces and spans, and the projects that hold them."""

from __future__ import annotations

from typing import Annotated, Any, Literal

import orjson
from fastapi import APIRouter, HTTPException, Query, Response
from starlette.concurrency import run_in_threadpool

from trajhub.records.projects import ProjectEntry
from trajhub.records.spans import CozeLoopTrace, OtlpLogs, OtlpTrace, SpanView, TraceBody
from trajhub.records.traces import TraceSummary
from trajhub.service import stored_spans
from trajhub.service.api import views
from trajhub.service.api.answers import CheckedRoute, model_response
from trajhub.service.api.cursors import decode_cursor, encode_cursor, next_page_cursor
from trajhub.service.api.models import (
    NOT_FOUND,
    ErrorDetail,
    ProjectList,
    TracePage,
    TraceSpanPage,
)
from trajhub.service.api.params import (
    PREFIX,
    AttributeFilter,
    Cursor,
    PageLimit,
    SpanIdPath,
    Text,
    TimeText,
    TraceIdPath,
    attribute_filters,
    parse_time,
)
from trajhub.service.api.records import answer
from trajhub.service.api.scopes import Key, Project, Rt
from trajhub.service.api.stored import no_trajectory, not_derived
from trajhub.service.ingest.decode import FORMAT_COZELOOP
from trajhub.service.stored_logs import log_view, otlp_logs_json, otlp_logs_request
from trajhub.service.stored_spans import (
    otlp_json,
    span_view,
    to_model,
    to_otlp_request,
)
from trajhub.storage import files, log_reads, trace_reads, trajectory_reads

router = APIRouter(prefix=PREFIX, route_class=CheckedRoute, tags=["traces"])


@router.get("/traces", summary="List traces, newest first", response_model=TracePage)
async def list_traces(
    rt: Rt,
    project: Project,
    start: Annotated[TimeText | None, Query(description="traces starting at or after (RFC 3339 "
                                        "or Unix ns)")] = None,
    end: Annotated[TimeText | None, Query(description="traces starting before (RFC 3339 or Unix "
                                      "ns)")] = None,
    service: Annotated[Text | None, Query(description="resource service.name")] = None,
    span_name: Annotated[Text | None, Query(description="has a span with this name")] = None,
    has_error: Annotated[bool | None, Query(description="has (true) or lacks (false) a failed "
                                            "span")] = None,
    attribute: Annotated[list[AttributeFilter] | None, Query(
        max_length=20, description="key=value: has a span with this attribute; repeat to "
        "require several")] = None,
    min_duration_ms: Annotated[float | None, Query(ge=0, le=9.2e12, allow_inf_nan=False)]
    = None,
    limit: PageLimit = 50,
    cursor: Cursor = None,
) -> Any:
    """Each item: trace id, root span, service, start and end, duration, span count, error
    count. The list is filled by the derivation worker within moments of a trace's spans
    arriving."""
    f = trace_reads.TraceFilter(
        start_ns=parse_time(start, "start"), end_ns=parse_time(end, "end"), service=service,
        span_name=span_name, has_error=has_error,
        min_duration_ns=None if min_duration_ms is None else int(min_duration_ms * 1e6),
        attributes=attribute_filters(attribute),
        cursor=decode_cursor(cursor, (int, str)),
        limit=limit)
    async with rt.db.acquire() as conn:
        rows = await trace_reads.list_traces(conn, project, f)
    items = [answer(TraceSummary, r) for r in rows]
    next_cursor = next_page_cursor(rows, limit, lambda r: (r.start_ns, r.trace_id))
    return {"items": items, "next_cursor": next_cursor}


@router.get("/traces/{trace_id}", summary="One trace: its spans as a tree, flat, or OTLP/JSON",
            responses={**NOT_FOUND, 200: {"model": TraceBody},
                       422: {"model": ErrorDetail, "description": "view=trajectory of a trace "
                             "whose trajectory could not be derived (the message says why)"}})
async def get_trace(
    trace_id: TraceIdPath,
    rt: Rt,
    project: Project,
    view: Annotated[Literal["tree", "flat", "trajectory"], Query(
        description="tree: children nested; flat: start order; trajectory: only the spans "
                    "that are trajectory nodes, re-parented (as the derivation worker "
                    "classified them)")] = "tree",
    format: Annotated[Literal["json", "otlp", "cozeloop", "otlp_logs"], Query(
        description="json: trajhub's span view, with the trace's log records (`logs`); otlp: "
                    "an OTLP/JSON ExportTraceServiceRequest of the spans as received; cozeloop: "
                    "the Coze Loop native spans as received; otlp_logs: an OTLP/JSON "
                    "ExportLogsServiceRequest of the trace's log records as received (also of a "
                    "trace that has records but no spans), which `/v1/logs` takes back"
    )] = "json",
) -> Response:
    async with rt.db.acquire() as conn:
        rows = await trace_reads.trace_spans(conn, project, trace_id)
        logs = (await log_reads.trace_logs(conn, project, trace_id)
                if format in ("json", "otlp_logs") else [])
        if not rows and not (format == "otlp_logs" and logs):
            raise HTTPException(404, f"trace {trace_id} not found in project {project!r}")
        envelopes = await trace_reads.resources(conn, sorted(
            {r.resource_id for r in rows if r.resource_id is not None}
            | {r.resource_id for r in logs}))
        stored = (await trajectory_reads.explanation(conn, project, trace_id)
                  if view == "trajectory" and format == "json" else None)
    if format == "json":
        explanation = None
        if view == "trajectory":
            if stored is None:
                raise no_trajectory(trace_id, project)
            if stored.explanation is None:
                raise not_derived(stored.derivation_error)
            explanation = stored.explanation
        log_views = await run_in_threadpool(lambda: [log_view(r, envelopes) for r in logs])
        # streamed a page of spans at a time: a large trace's views are hundreds of MiB
        # (docs/large-traces.md)
        return await views.export(trace_id, rows, envelopes, view, explanation, log_views)

    def answer_body() -> Response:
        if format == "otlp":
            return model_response(OtlpTrace, otlp_json(to_otlp_request(rows, envelopes)))
        if format == "otlp_logs":
            return model_response(OtlpLogs,
                                  otlp_logs_json(otlp_logs_request(logs, envelopes)))
        return model_response(CozeLoopTrace, {"spans": [
            orjson.loads(stored_spans.body(r)) for r in rows if r.format == FORMAT_COZELOOP]})

    # a large trace's spans take seconds to decode: off the event loop, so that other
    # requests (a first page) are answered meanwhile
    return await run_in_threadpool(answer_body)


@router.get("/traces/{trace_id}/spans", summary="A page of a trace's spans, in start order",
            response_model=TraceSpanPage, responses=NOT_FOUND)
async def trace_span_page(
    trace_id: TraceIdPath, rt: Rt, project: Project,
    limit: PageLimit = 100,
    cursor: Cursor = None,
) -> Any:
    """The spans of `GET /api/v1/traces/{trace_id}?view=flat`, a page at a time
    (docs/large-traces.md): a first page answers in milliseconds whatever the trace's size."""
    after = decode_cursor(cursor, (int, int, str))
    async with rt.db.acquire() as conn:
        total, rows = await trace_reads.trace_span_page(
            conn, project, trace_id, (after[0], after[1], after[2]) if after else None,
            limit + 1)  # one more: whether a next page exists
        if not total:
            raise HTTPException(404, f"trace {trace_id} not found in project {project!r}")
        more, rows = len(rows) > limit, rows[:limit]
        envelopes = await trace_reads.resources(
            conn, sorted({r.resource_id for r in rows if r.resource_id is not None}))
    next_cursor = (encode_cursor(rows[-1].start_ns, rows[-1].end_ns, rows[-1].span_id)
                   if more else None)
    return {
        "trace_id": trace_id, "total": total,
        "items": [span_view(s) for s in to_model(rows, envelopes)], "next_cursor": next_cursor}


@router.get("/traces/{trace_id}/spans/{span_id}", summary="One span", response_model=SpanView,
            responses=NOT_FOUND)
async def get_span(trace_id: TraceIdPath, span_id: SpanIdPath, rt: Rt, project: Project
                   ) -> Any:
    async with rt.db.acquire() as conn:
        row = await trace_reads.span(conn, project, trace_id, span_id)
        if row is None:
            raise HTTPException(404, f"span {span_id} of trace {trace_id} not found in project "
                                     f"{project!r}")
        envelopes = await trace_reads.resources(
            conn, [row.resource_id] if row.resource_id is not None else [])
    return span_view(to_model([row], envelopes)[0])


@router.get("/files/{key:path}", summary="A file uploaded through /v1/loop/files/upload",
            tags=["coze loop"], response_class=Response,
            responses={**NOT_FOUND,
                       200: {"description": "the file's bytes, as uploaded", "content": {
                "application/octet-stream": {"schema": {"type": "string",
                                                        "format": "binary"}}}}})
async def get_file(key: str, rt: Rt, project: Project) -> Response:
    if "\x00" in key or len(key) > 1000:
        raise HTTPException(400, "path parameter 'key': must be at most 1000 characters, "
                                 "without NUL")
    async with rt.db.acquire() as conn:
        content = await files.get(conn, project, key)
    if content is None:
        raise HTTPException(404, f"file {key[:200]!r} not found in project {project!r}")
    return Response(content, media_type="application/octet-stream")


@router.get("/projects", summary="List the projects, with their trace and span counts",
            tags=["projects"], response_model=ProjectList)
async def list_projects(rt: Rt, key: Key) -> Any:
    """Every project that holds a trace, by name: its trace and span counts, when its earliest
    span started and when its latest span ended. Counted from the trace list, which the
    derivation worker fills within moments of spans arriving. An API key sees its own project
    only, listed even while it holds no trace (so a client learns which project it works in)."""
    only = key.project if key is not None else None
    async with rt.db.acquire() as conn:
        rows = await trace_reads.projects(conn, only)
    projects = [answer(ProjectEntry, r) for r in rows]
    if only is not None and not projects:
        projects = [{"name": only, "trace_count": 0, "span_count": 0, "first_span_time": None,
                     "last_span_time": None, "first_span_at": None, "last_span_at": None}]
    return ProjectList.answer(projects)

