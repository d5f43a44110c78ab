"""Test-only builders of hand-made spans."""

from __future__ import annotations

from collections.abc import Mapping

from trajhub.normalizers.model import STATUS_UNSET, AttributeValue, Event, Span

TRACE = "0af7651916cd43dd8448eb211c80319c"
MS = 1_000_000


def span(
    span_id: str,
    parent: str = "",
    name: str = "",
    start_ms: float = 0,
    end_ms: float = 0,
    attrs: Mapping[str, AttributeValue] | None = None,
    *,
    status: int = STATUS_UNSET,
    message: str = "",
    events: tuple[Event, ...] = (),
    trace_id: str = TRACE,
    scope: str = "",
) -> Span:
    return Span(
        trace_id=trace_id,
        span_id=span_id,
        parent_span_id=parent,
        name=name or span_id,
        start_ns=int(start_ms * MS),
        end_ns=int(end_ms * MS),
        status_code=status,
        status_message=message,
        attributes=dict(attrs or {}),
        events=events,
        scope_name=scope,
    )
