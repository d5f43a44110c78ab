"""REST: the stored OTLP log records of a project (trajhub.records.logs), orphans included.

A record whose span is one of its trace's spans is that span's event in the derived
trajectory (normalizers/log_events.py); the others (their trace has no spans, their span is
not among them, or they name no trace) are kept and listed here with `orphaned=true`. A trace's
own records are also in `GET /api/v1/traces/{trace_id}` (`logs`, and `format=otlp_logs`)."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any

from fastapi import APIRouter, Query
from starlette.concurrency import run_in_threadpool

from trajhub.records.logs import LogRecordView
from trajhub.records.pages import Page
from trajhub.service.api.answers import CheckedRoute
from trajhub.service.api.cursors import bad_cursor, decode_cursor, next_page_cursor
from trajhub.service.api.models import example_config
from trajhub.service.api.params import PREFIX, Cursor, PageLimit, SpanIdQuery, Text, TraceIdQuery
from trajhub.service.api.scopes import Project, Rt
from trajhub.service.stored_logs import log_view
from trajhub.storage import log_reads, trace_reads

router = APIRouter(prefix=PREFIX, route_class=CheckedRoute, tags=["logs"])


class LogRecordPage(Page[LogRecordView]):
    model_config = example_config({"items": [LogRecordView.example()], "next_cursor": None})


@router.get("/logs", summary="List log records, the latest received first",
            response_model=LogRecordPage)
async def list_logs(
    rt: Rt,
    project: Project,
    trace_id: Annotated[TraceIdQuery | None, Query(description="only this trace's records")]
    = None,
    span_id: Annotated[SpanIdQuery | None, Query(description="only the records naming this "
                                                 "span")] = None,
    event_name: Annotated[Text | None, Query(description="only records of this event name")]
    = None,
    orphaned: Annotated[bool | None, Query(description="true: only the records attached to no "
                                           "span (their trace has no spans, their span is not "
                                           "in it, or they name no trace); false: only those "
                                           "that are a span's event")] = None,
    limit: PageLimit = 100,
    cursor: Cursor = None,
) -> Any:
    """Each item: the record's ids, times, severity, event name, body (a JSON value),
    attributes, resource and scope, and whether it is orphaned. Records are stored as
    received (`/v1/logs`, gRPC LogsService), once however often they are sent."""
    after = decode_cursor(cursor, (str, str, str, int, str))
    keyset = None
    if after is not None:
        try:
            keyset = (datetime.fromisoformat(after[0]), after[1], after[2], after[3],
                      bytes.fromhex(after[4]))
        except ValueError:
            raise bad_cursor() from None
    f = log_reads.LogFilter(trace_id=trace_id, span_id=span_id, event_name=event_name,
                            orphaned=orphaned, after=keyset, limit=limit)
    async with rt.db.acquire() as conn:
        rows = await log_reads.list_logs(conn, project, f)
        envelopes = await trace_reads.resources(conn, sorted({r.resource_id for r in rows}))
    items = await run_in_threadpool(lambda: [log_view(r, envelopes) for r in rows])
    next_cursor = next_page_cursor(rows, limit, lambda r: (
        r.received_at.isoformat(), r.trace_id, r.span_id, r.time_ns, r.digest.hex()))
    return LogRecordPage.answer(items, next_cursor)
