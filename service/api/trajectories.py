"""REST: trajectories — list, fetch, explain, re-derive, and the dry-run normalizer."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import asdict
from typing import Annotated, Any, Literal

import orjson
from fastapi import APIRouter, Body, Depends, Header, HTTPException, Query, Request, Response

from trajhub.normalizers import NORMALIZER_VERSION, DerivationError, derive
from trajhub.normalizers.model import Span
from trajhub.normalizers.sources import span_from_cozeloop, spans_from_resource_spans
from trajhub.normalizers.trajectory import trajectory_to_json
from trajhub.service.api.common import (
    Project,
    Rt,
    decode_cursor,
    encode_cursor,
    json_response,
    parse_time,
    trace_id_param,
)
from trajhub.service.errors import IngestError
from trajhub.service.ingest.decode import decompress, parse_otlp
from trajhub.service.ingest.http import read_body
from trajhub.service.prices import summary_cost, table_for
from trajhub.service.stored_spans import iso_time
from trajhub.storage import assembly_store, trajectory_reads

router = APIRouter(prefix="/api/v1", tags=["trajectories"])


def summary_item(r: Any) -> dict[str, Any]:
    return {
        "trace_id": r["trace_id"],
        "status": r["status"],
        "revision": r["revision"],
        "normalizer_version": r["normalizer_version"],
        "framework": r["framework"],
        "conventions": r["conventions"],
        "root_name": r["root_name"],
        "agent_names": r["agent_names"],
        "tool_names": r["tool_names"],
        "model_names": r["model_names"],
        "start_time": iso_time(r["start_ns"]),
        "duration_ms": r["duration_ms"],
        "step_count": r["step_count"],
        "model_step_count": r["model_step_count"],
        "tool_step_count": r["tool_step_count"],
        "input_tokens": r["input_tokens"],
        "output_tokens": r["output_tokens"],
        "failed_model_steps": r["failed_model_steps"],
        "failed_tool_steps": r["failed_tool_steps"],
        "has_error": r["has_error"],
        "derivation_error": r["derivation_error"],
    }


def trajectory_filter(
    start: Annotated[str | None, Query(description="started at or after (RFC 3339 or Unix ns)")]
    = None,
    end: Annotated[str | None, Query(description="started before (RFC 3339 or Unix ns)")] = None,
    agent: Annotated[str | None, Query(description="has an agent (or graph) step of this name")]
    = None,
    tool: Annotated[str | None, Query(description="called this tool")] = None,
    model: Annotated[str | None, Query(description="called this model")] = None,
    framework: Annotated[str | None, Query(description="langgraph, langchain, eino, …")] = None,
    status: Annotated[Literal["open", "final"] | None, Query()] = None,
    failed_tool_steps: Annotated[bool | None, Query(description="has (true) or lacks (false) "
                                                    "failed tool steps")] = None,
    failed_model_steps: Annotated[bool | None, Query(description="has (true) or lacks (false) "
                                                     "failed model steps")] = None,
    has_error: Annotated[bool | None, Query(description="the root or any step failed")] = None,
    min_tokens: Annotated[int | None, Query(ge=0, description="input + output tokens")] = None,
    max_tokens: Annotated[int | None, Query(ge=0)] = None,
    min_duration_ms: Annotated[int | None, Query(ge=0)] = None,
    max_duration_ms: Annotated[int | None, Query(ge=0)] = None,
    q: Annotated[str | None, Query(description="text in the root input or output "
                                   "(case-insensitive)")] = None,
    sort: Annotated[Literal["start_time", "duration", "tokens", "steps"], Query()]
    = "start_time",
    order: Annotated[Literal["desc", "asc"], Query()] = "desc",
    limit: Annotated[int, Query(ge=1, le=1000)] = 50,
    cursor: Annotated[str | None, Query(description="`next_cursor` of the previous page")]
    = None,
) -> trajectory_reads.TrajectoryFilter:
    """FastAPI dependency: the trajectory query of a request (also used to fill datasets)."""
    return trajectory_reads.TrajectoryFilter(
        start_ns=parse_time(start, "start"), end_ns=parse_time(end, "end"), agent=agent,
        tool=tool, model=model, framework=framework, status=status,
        has_failed_tool_steps=failed_tool_steps, has_failed_model_steps=failed_model_steps,
        has_error=has_error, min_tokens=min_tokens, max_tokens=max_tokens,
        min_duration_ms=min_duration_ms, max_duration_ms=max_duration_ms, text=q, sort=sort,
        descending=order == "desc",
        cursor=decode_cursor(cursor, (int, str)),  # type: ignore[arg-type]
        limit=limit)


@router.get("/trajectories", summary="List trajectories (summaries), filtered and sorted")
async def list_trajectories(
    rt: Rt, project: Project,
    f: Annotated[trajectory_reads.TrajectoryFilter, Depends(trajectory_filter)],
) -> Response:
    async with rt.db.acquire() as conn:
        rows = await trajectory_reads.list_trajectories(conn, project, f)
    prices = table_for(rt.settings)
    next_cursor = (encode_cursor(rows[-1]["sort_value"], rows[-1]["trace_id"])
                   if len(rows) == f.limit else None)
    return json_response({"items": [summary_item(r) | {"cost": summary_cost(prices, r)}
                                    for r in rows], "next_cursor": next_cursor})


def _etag(revision: int) -> str:
    return f'"{revision}"'


@router.get(
    "/trajectories/{trace_id}",
    summary="One trajectory document",
    responses={200: {"description": "The trajectory, exactly in trajectory.schema.json's "
                     "format. Headers: `ETag` (the revision), `X-Trajectory-Status` (open or "
                     "final), `X-Trajectory-Revision`."},
               404: {"description": "No spans of this trace yet"},
               422: {"description": "The trace's spans could not be turned into a trajectory "
                     "(the message says why)"}},
)
async def get_trajectory(
    trace_id: str, rt: Rt, project: Project,
    if_none_match: Annotated[str | None, Header()] = None,
) -> Response:
    """An `open` trajectory (spans may still arrive) is served as it stands."""
    trace_id = trace_id_param(trace_id)
    async with rt.db.acquire() as conn:
        row = await trajectory_reads.trajectory(conn, project, trace_id)
    if row is None:
        raise HTTPException(404, f"no trajectory for trace {trace_id} in project {project!r} "
                                 "(yet)")
    headers = {"ETag": _etag(row["revision"]), "X-Trajectory-Status": row["status"],
               "X-Trajectory-Revision": str(row["revision"]),
               "X-Normalizer-Version": row["normalizer_version"]}
    if row["document"] is None:
        detail = f"trajectory could not be derived: {row['derivation_error']}"
        return json_response({"detail": detail}, 422, headers)
    if if_none_match == headers["ETag"]:
        return Response(status_code=304, headers=headers)
    return Response(row["document"].encode(), media_type="application/json", headers=headers)


@router.get("/trajectories/{trace_id}/explain",
            summary="How each span was classified, kept or dropped, and re-parented")
async def explain_trajectory(trace_id: str, rt: Rt, project: Project) -> Response:
    trace_id = trace_id_param(trace_id)
    async with rt.db.acquire() as conn:
        row = await trajectory_reads.explanation(conn, project, trace_id)
    if row is None:
        raise HTTPException(404, f"no trajectory for trace {trace_id} in project {project!r} "
                                 "(yet)")
    return json_response({
        "trace_id": trace_id, "status": row["status"], "revision": row["revision"],
        "normalizer_version": row["normalizer_version"],
        "derivation_error": row["derivation_error"], "warnings": row["warnings"],
        "spans": orjson.loads(row["explanation"]) if row["explanation"] else [],
    })


@router.post("/trajectories/rederive", status_code=202,
             summary="Rebuild stored trajectories from their raw spans")
async def rederive(
    rt: Rt, project: Project,
    since: Annotated[str | None, Body(embed=True, description="only traces starting at or after "
                                      "(RFC 3339 or Unix ns)")] = None,
    outdated: Annotated[bool, Body(embed=True, description="only trajectories built by another "
                                   "normalizer version")] = False,
) -> Response:
    """Queues the project's traces; the trajectory worker re-derives them (revision + 1)."""
    async with rt.db.acquire() as conn:
        queued = await assembly_store.queue_rederive(
            conn, project, parse_time(since, "since"), NORMALIZER_VERSION if outdated else None)
    return json_response({"queued": queued, "normalizer_version": NORMALIZER_VERSION}, 202)


def _body_spans(body: bytes, content_type: str) -> list[Span]:
    media = content_type.split(";", 1)[0].strip().lower()
    if media in ("application/x-protobuf", "application/protobuf"):
        return list(spans_from_resource_spans(parse_otlp(body, "protobuf").resource_spans))
    if media != "application/json":
        raise HTTPException(415, f"unsupported Content-Type {content_type!r}: send OTLP "
                                 "protobuf, OTLP/JSON or Coze Loop native JSON")
    try:
        doc = orjson.loads(body)
    except orjson.JSONDecodeError as exc:
        raise HTTPException(400, f"body is not valid JSON: {exc}") from None
    if isinstance(doc, dict) and isinstance(doc.get("spans"), list):
        return [span_from_cozeloop(s) for s in doc["spans"] if isinstance(s, dict)]
    return list(spans_from_resource_spans(parse_otlp(body, "json").resource_spans))


@router.post(
    "/normalize", tags=["trajectories"],
    summary="Dry run: spans in, trajectories and explanations out; nothing is stored",
    openapi_extra={"requestBody": {"required": True, "content": {
        "application/x-protobuf": {"schema": {"type": "string", "format": "binary"}},
        "application/json": {"schema": {"type": "object", "description":
                             "OTLP/JSON, or Coze Loop native {\"spans\": [...]}"}}}}},
)
async def normalize(request: Request, rt: Rt) -> Response:
    """For instrumentation authors: see what trajhub makes of a request body before sending
    real traffic. One result per trace in the body."""
    try:
        limit = rt.settings.max_request_bytes
        body = decompress(await read_body(request, limit),
                          request.headers.get("content-encoding", ""), limit)
        spans = _body_spans(body, request.headers.get("content-type", ""))
    except IngestError as error:
        raise HTTPException(error.http_status, error.message) from None
    by_trace: dict[str, list[Span]] = defaultdict(list)
    for span in spans:
        by_trace[span.trace_id].append(span)
    results: list[dict[str, Any]] = []
    for trace_id in sorted(by_trace):
        try:
            d = derive(by_trace[trace_id])
        except DerivationError as exc:
            results.append({"trace_id": trace_id, "error": str(exc)})
            continue
        results.append({
            "trace_id": trace_id,
            "trajectory": orjson.loads(trajectory_to_json(d.trajectory)),
            "warnings": list(d.warnings),
            "explanation": [asdict(e) for e in d.explanation],
        })
    return json_response({"normalizer_version": NORMALIZER_VERSION, "traces": results})
