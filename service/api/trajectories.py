"""REST: trajectories — list, fetch, explain, re-derive, and the dry-run normalizer."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import asdict
from typing import Annotated, Any

import orjson
from fastapi import APIRouter, Header, HTTPException, Query, Request, Response
from fastapi.responses import StreamingResponse
from starlette.concurrency import run_in_threadpool

from trajhub.normalizers import NORMALIZER_VERSION, DerivationError, derive, pages
from trajhub.normalizers.model import Span
from trajhub.normalizers.trajectory import trajectory_to_json
from trajhub.records.documents import (
    TrajectoryDocument,
    TrajectoryExplanation,
    TrajectoryStepPage,
)
from trajhub.records.trajectories import TrajectorySummary
from trajhub.service.api.answers import CheckedRoute, json_response
from trajhub.service.api.cursors import next_page_cursor, offset_cursor, page_offset
from trajhub.service.api.filters import TrajectoryListQuery
from trajhub.service.api.models import (
    NOT_FOUND,
    ErrorDetail,
    NormalizeResult,
    RederiveQueued,
    RederiveRequest,
    TrajectoryPage,
)
from trajhub.service.api.params import (
    DEFAULT_PAGE,
    MAX_PAGE,
    PREFIX,
    Cursor,
    Offset,
    TraceIdPath,
    parse_time,
)
from trajhub.service.api.records import answer
from trajhub.service.api.scopes import Project, Rt, needs
from trajhub.service.api.stored import NOT_DERIVED, no_trajectory, paged_read
from trajhub.service.auth import ADMIN
from trajhub.service.errors import BadRequest, IngestError
from trajhub.service.ingest.bodies import read_body, require_media
from trajhub.service.ingest.decode import cozeloop_batch, decompress, otlp_batch, parse_otlp
from trajhub.service.prices import prices_for, summary_cost
from trajhub.service.stored_spans import batch_spans
from trajhub.storage import compression, derivation_store, trajectory_reads

router = APIRouter(prefix=PREFIX, route_class=CheckedRoute, tags=["trajectories"])

PROTOBUF = "application/x-protobuf"
JSON = "application/json"
#: a document of this many bytes or more is sent as it is decompressed (`get_trajectory`)
STREAM_FROM = 4 << 20


@router.get("/trajectories", summary="List trajectories (summaries), filtered and sorted",
            response_model=TrajectoryPage)
async def list_trajectories(
    rt: Rt, project: Project, query: Annotated[TrajectoryListQuery, Query()],
) -> Any:
    """Name filters (`agent`, `tool`, `model`) match case-insensitively; `service`,
    `session_id` and `user_id` match exactly. `count=true` adds `total`."""
    f = query.list_filter()
    async with rt.db.acquire() as conn:
        rows = await trajectory_reads.list_trajectories(conn, project, f)
        total = (await trajectory_reads.count_trajectories(conn, project, f)
                 if query.count else None)
    prices = prices_for(rt.settings)
    converters = {"cost": lambda usage: summary_cost(prices, usage)}
    next_cursor = next_page_cursor(rows, f.limit, lambda r: (r.sort_value, r.trace_id))
    page: dict[str, Any] = {
        "items": [answer(TrajectorySummary, r, converters) for r in rows],
        "next_cursor": next_cursor}
    if total is not None:
        page["total"] = total
    return page


def _etag(revision: int) -> str:
    return f'"{revision}"'


@router.get(
    "/trajectories/{trace_id}",
    summary="One trajectory document",
    responses={**NOT_FOUND, 200: {"model": TrajectoryDocument,
                     "description": "The trajectory, exactly in the format of "
                     "`GET /api/v1/schema/trajectory`. Headers: `ETag` (the revision), "
                     "`X-Trajectory-Status` (open or final), `X-Trajectory-Revision`."},
               304: {"description": "`If-None-Match` names the current revision"},
               404: {"model": ErrorDetail, "description": "No spans of this trace yet"},
               **NOT_DERIVED},
)
async def get_trajectory(
    trace_id: TraceIdPath, rt: Rt, project: Project,
    if_none_match: Annotated[str | None, Header()] = None,
) -> Response:
    """An `open` trajectory (spans may still arrive) is served as it stands."""
    async with rt.db.acquire() as conn:
        row = await trajectory_reads.trajectory_export(conn, project, trace_id)
    if row is None:
        raise no_trajectory(trace_id, project)
    headers = {"ETag": _etag(row.revision), "X-Trajectory-Status": row.status,
               "X-Trajectory-Revision": str(row.revision),
               "X-Normalizer-Version": row.normalizer_version}
    if row.document is None:
        detail = f"trajectory could not be derived: {row.derivation_error}"
        return json_response({"detail": detail}, 422, headers)
    if if_none_match == headers["ETag"]:
        return Response(status_code=304, headers=headers)
    size = compression.decompressed_size(row.document)
    if size is not None and size >= STREAM_FROM:
        # a large document is sent as it is decompressed, a piece at a time (off the event
        # loop): held whole, with the copy a slow client's socket buffer takes, it cost the
        # server twice its size (docs/large-traces.md)
        return StreamingResponse(compression.decompress_pieces(row.document), media_type=JSON,
                                 headers={**headers, "Content-Length": str(size)})
    # the stored bytes, decompressed (zstd releases the GIL: off the event loop)
    body = await run_in_threadpool(compression.decompress, row.document)
    return Response(body, media_type=JSON, headers=headers)


@router.get(
    "/trajectories/{trace_id}/steps", response_model=TrajectoryStepPage,
    summary="A page of a trajectory's steps, with the rest of the document but the steps",
    responses={**NOT_FOUND, 200: {"model": TrajectoryStepPage,
                     "description": "Headers as on `GET /api/v1/trajectories/{trace_id}`: "
                     "`ETag` (the revision), `X-Trajectory-Status`, `X-Trajectory-Revision`."},
               304: {"description": "`If-None-Match` names the current revision"},
               **NOT_DERIVED},
)
async def trajectory_steps(
    trace_id: TraceIdPath, rt: Rt, project: Project, response: Response,
    cursor: Cursor = None, offset: Offset = 0,
    limit: Annotated[int, Query(ge=1, le=MAX_PAGE)] = DEFAULT_PAGE,
    if_none_match: Annotated[str | None, Header()] = None,
) -> Any:
    """For a large trajectory (docs/large-traces.md): the first page answers in milliseconds
    whatever the run's size, where `GET /api/v1/trajectories/{trace_id}` (the export) sends the
    whole document. An offset at or past `total` gives an empty page."""
    offset = page_offset(cursor, offset)

    def wanted(head: dict[str, Any], order: object) -> range:
        return pages.chunk_range(offset, limit, int(head["step_total"]))

    read = await paged_read(rt, project, trace_id, wanted)
    headers = {"ETag": _etag(read.revision), "X-Trajectory-Status": read.status,
               "X-Trajectory-Revision": str(read.revision),
               "X-Normalizer-Version": read.normalizer_version}
    if if_none_match == headers["ETag"]:
        return Response(status_code=304, headers=headers)
    if read.head is not None:
        head, chunks = read.head, read.chunks
    else:
        assert read.document is not None
        head, steps = pages.head_and_steps(read.document)
        chunks = {n: steps[n * pages.CHUNK_STEPS:(n + 1) * pages.CHUNK_STEPS]
                  for n in pages.chunk_range(offset, limit, len(steps))}
    total = int(head["step_total"])
    end = min(offset + limit, total)
    response.headers.update(headers)
    following = end if end < total else None
    return TrajectoryStepPage.answer(
        pages.page_steps(head, chunks, offset, limit),
        offset_cursor(following) if following is not None else None,
        trace_id=trace_id, status=read.status, revision=read.revision,
        normalizer_version=read.normalizer_version, root_step=head["root_step"],
        agent_steps=head["agent_steps"], total=total, offset=offset, limit=limit,
        next_offset=following)


@router.get("/trajectories/{trace_id}/explain",
            summary="How each span was classified, kept or dropped, and re-parented",
            response_model=TrajectoryExplanation, responses=NOT_FOUND)
async def explain_trajectory(trace_id: TraceIdPath, rt: Rt, project: Project) -> Any:
    async with rt.db.acquire() as conn:
        row = await trajectory_reads.explanation(conn, project, trace_id)
    if row is None:
        raise no_trajectory(trace_id, project)
    return {
        "trace_id": trace_id, "status": row.status, "revision": row.revision,
        "normalizer_version": row.normalizer_version,
        "derivation_error": row.derivation_error, "warnings": row.warnings,
        "spans": orjson.loads(row.explanation) if row.explanation else [],
    }


@router.post("/trajectories/rederive", status_code=202, response_model=RederiveQueued,
             summary="Rebuild stored trajectories from their raw spans", openapi_extra=needs(ADMIN),
             responses={415: {"model": ErrorDetail, "description": "not application/json"}})
async def rederive(rt: Rt, project: Project, body: RederiveRequest) -> Any:
    """Queues the project's traces; the derivation worker re-derives them (revision + 1)."""
    async with rt.db.acquire() as conn:
        queued = await derivation_store.queue_rederive(
            conn, project, parse_time(body.since, "since"),
            NORMALIZER_VERSION if body.outdated else None)
    return {"queued": queued, "normalizer_version": NORMALIZER_VERSION}


def _body_spans(body: bytes, media: str) -> tuple[list[Span], int, str]:
    """The spans ingest would store from this body (through the same decoding and per-span
    validation), with the count of those it would reject and why."""
    if media == PROTOBUF:
        batch = otlp_batch(parse_otlp(body, "protobuf"), None)
    else:
        try:
            doc = orjson.loads(body)
        except orjson.JSONDecodeError as exc:
            raise BadRequest(f"body is not valid JSON: {exc}") from None
        if isinstance(doc, dict) and isinstance(doc.get("spans"), list):
            batch = cozeloop_batch(body, None)
        else:
            batch = otlp_batch(parse_otlp(body, "json"), None)
    if not batch.rows and batch.rejected:
        raise BadRequest(f"every span was invalid; {batch.error_message}")
    return batch_spans(batch), batch.rejected, batch.error_message


def _derive_each_trace(spans: list[Span]) -> list[dict[str, Any]]:
    """One result per trace: its trajectory, warnings and explanation, or why it could not be
    derived (any failure, as the derivation worker records it, never a 500)."""
    by_trace: dict[str, list[Span]] = defaultdict(list)
    for span in spans:
        by_trace[span.trace_id].append(span)
    results: list[dict[str, Any]] = []
    for trace_id in sorted(by_trace):
        try:
            d = derive(by_trace[trace_id])
            trajectory = orjson.loads(trajectory_to_json(d.trajectory))
        except DerivationError as exc:
            results.append({"trace_id": trace_id, "error": str(exc)})
            continue
        except Exception as exc:
            results.append({"trace_id": trace_id, "error": f"{type(exc).__name__}: {exc}"})
            continue
        results.append({
            "trace_id": trace_id,
            "trajectory": trajectory,
            "warnings": list(d.warnings),
            "explanation": [asdict(e) for e in d.explanation],
        })
    return results


@router.post(
    "/normalize", tags=["trajectories"], response_model=NormalizeResult,
    summary="Dry run: spans in, trajectories and explanations out; nothing is stored",
    openapi_extra={"requestBody": {"required": True, "content": {
        PROTOBUF: {"schema": {"type": "string", "format": "binary"}},
        "application/protobuf": {"schema": {"type": "string", "format": "binary"}},
        JSON: {"schema": {"type": "object", "description":
                          "OTLP/JSON, or Coze Loop native {\"spans\": [...]}"}}}}},
    responses={413: {"model": ErrorDetail, "description": "body over the size limit"},
               415: {"model": ErrorDetail, "description": "not protobuf or JSON"}},
)
async def normalize(request: Request, rt: Rt) -> Any:
    """For instrumentation authors: see what trajhub makes of a request body before sending
    real traffic. The body goes through ingest's decoding and per-span validation (spans ingest
    would reject are counted in `rejected_spans`), then the normalizer; one result per trace."""
    try:
        media = require_media(request.headers.get("content-type", ""), PROTOBUF,
                              "application/protobuf", JSON)
        media = PROTOBUF if media == "application/protobuf" else media
        limit = rt.settings.max_request_bytes
        body = decompress(await read_body(request, limit),
                          request.headers.get("content-encoding", ""), limit)
        # decoding and deriving are CPU work: off the event loop
        spans, rejected, error_message = await run_in_threadpool(_body_spans, body, media)
    except IngestError as error:
        raise HTTPException(error.http_status, error.message) from None
    results = await run_in_threadpool(_derive_each_trace, spans)
    return {
        "normalizer_version": NORMALIZER_VERSION, "rejected_spans": rejected,
                          "error_message": error_message, "traces": results}
