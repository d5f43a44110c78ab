"""REST: raw traces and spans."""

from __future__ import annotations

from typing import Annotated, Literal

import orjson
from fastapi import APIRouter, HTTPException, Query, Response

from trajhub.service.api.common import (
    Project,
    Rt,
    attribute_filters,
    decode_cursor,
    encode_cursor,
    json_response,
    parse_time,
    span_id_param,
    trace_id_param,
)
from trajhub.service.api.views import trajectory_nodes
from trajhub.service.ingest.decode import FORMAT_COZELOOP
from trajhub.service.stored_spans import (
    iso_time,
    otlp_json,
    span_tree,
    span_view,
    to_model,
    to_otlp_request,
)
from trajhub.storage import files, trace_reads

router = APIRouter(prefix="/api/v1", tags=["traces"])


@router.get("/traces", summary="List traces, newest first")
async def list_traces(
    rt: Rt,
    project: Project,
    start: Annotated[str | None, Query(description="traces starting at or after (RFC 3339 or "
                                       "Unix ns)")] = None,
    end: Annotated[str | None, Query(description="traces starting before (RFC 3339 or Unix ns)")]
    = None,
    service: Annotated[str | None, Query(description="resource service.name")] = None,
    span_name: Annotated[str | None, Query(description="has a span with this name")] = None,
    has_error: Annotated[bool | None, Query(description="has (true) or lacks (false) a failed "
                                            "span")] = None,
    attribute: Annotated[list[str] | None, Query(description="key=value: has a span with this "
                                                 "attribute; repeat to require several")] = None,
    min_duration_ms: Annotated[float | None, Query(ge=0)] = None,
    limit: Annotated[int, Query(ge=1, le=1000)] = 50,
    cursor: Annotated[str | None, Query(description="`next_cursor` of the previous page")] = None,
) -> Response:
    """Each item: trace id, root span name, service, start, duration, span count, error count.
    The list is filled by the trajectory worker within moments of a trace's spans arriving."""
    f = trace_reads.TraceFilter(
        start_ns=parse_time(start, "start"), end_ns=parse_time(end, "end"), service=service,
        span_name=span_name, has_error=has_error,
        min_duration_ns=None if min_duration_ms is None else int(min_duration_ms * 1e6),
        attributes=attribute_filters(attribute),
        cursor=decode_cursor(cursor, (int, str)),  # type: ignore[arg-type]
        limit=limit)
    async with rt.db.acquire() as conn:
        rows = await trace_reads.list_traces(conn, project, f)
    items = [{
        "trace_id": r["trace_id"],
        "root_span_id": r["root_span_id"],
        "root_span_name": r["root_name"],
        "service_name": r["service_name"],
        "start_time": iso_time(r["start_ns"]),
        "start_time_unix_nano": str(r["start_ns"]),
        "duration_ms": (r["end_ns"] - r["start_ns"]) / 1e6,
        "span_count": r["span_count"],
        "error_count": r["error_count"],
    } for r in rows]
    next_cursor = (encode_cursor(rows[-1]["start_ns"], rows[-1]["trace_id"])
                   if len(rows) == limit else None)
    return json_response({"items": items, "next_cursor": next_cursor})


@router.get("/traces/{trace_id}", summary="One trace: its spans as a tree, flat, or OTLP/JSON")
async def get_trace(
    trace_id: str,
    rt: Rt,
    project: Project,
    view: Annotated[Literal["tree", "flat", "trajectory"], Query(
        description="tree: children nested; flat: start order; trajectory: only the spans "
                    "that are trajectory nodes, re-parented")] = "tree",
    format: Annotated[Literal["json", "otlp", "cozeloop"], Query(
        description="json: trajhub's span view; otlp: an OTLP/JSON ExportTraceServiceRequest "
                    "of the spans as received; cozeloop: the Coze Loop native spans as received"
    )] = "json",
) -> Response:
    trace_id = trace_id_param(trace_id)
    async with rt.db.acquire() as conn:
        rows = await trace_reads.trace_spans(conn, project, trace_id)
        if not rows:
            raise HTTPException(404, f"trace {trace_id} not found in project {project!r}")
        envelopes = await trace_reads.resources(
            conn, sorted({r["resource_id"] for r in rows if r["resource_id"] is not None}))
    if format == "otlp":
        return json_response(otlp_json(to_otlp_request(rows, envelopes)))
    if format == "cozeloop":
        return json_response({"spans": [orjson.loads(r["body"]) for r in rows
                                        if r["format"] == FORMAT_COZELOOP]})
    spans = to_model(rows, envelopes)
    views = [span_view(s) for s in spans]
    if view == "trajectory":
        return json_response({"trace_id": trace_id, "spans": trajectory_nodes(spans, views)})
    if view == "flat":
        return json_response({"trace_id": trace_id, "spans": views})
    return json_response({"trace_id": trace_id, "spans": span_tree(views)})


@router.get("/traces/{trace_id}/spans/{span_id}", summary="One span")
async def get_span(trace_id: str, span_id: str, rt: Rt, project: Project) -> Response:
    trace_id, span_id = trace_id_param(trace_id), span_id_param(span_id)
    async with rt.db.acquire() as conn:
        row = await trace_reads.span(conn, project, trace_id, span_id)
        if row is None:
            raise HTTPException(404, f"span {span_id} of trace {trace_id} not found in project "
                                     f"{project!r}")
        envelopes = await trace_reads.resources(
            conn, [row["resource_id"]] if row["resource_id"] is not None else [])
    return json_response(span_view(to_model([row], envelopes)[0]))


@router.get("/files/{key:path}", summary="A file uploaded through /v1/loop/files/upload",
            tags=["coze loop"])
async def get_file(key: str, rt: Rt, project: Project) -> Response:
    async with rt.db.acquire() as conn:
        content = await files.get(conn, project, key)
    if content is None:
        raise HTTPException(404, f"file {key!r} not found in project {project!r}")
    return Response(content, media_type="application/octet-stream")
