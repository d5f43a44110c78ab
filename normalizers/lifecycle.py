"""When a trace is done enough to finalize: the one definition of `root_ended`."""

from __future__ import annotations

from collections.abc import Iterable

from trajhub.normalizers.model import Span


def is_null_id(span_id: str) -> bool:
    """A parent id that means "no parent": empty (OTLP), or all zeros (Coze Loop's "0", and
    exporters that send a zero-filled id)."""
    return span_id == "" or set(span_id) <= {"0"}


def root_ended(spans: Iterable[Span]) -> bool:
    """The trace's own root (a span with no parent at all) has arrived, ended.

    A trace whose top span points at a parent not (yet) here is not done: the real root is
    usually exported last. If that parent never comes (a remote parent), the service's
    maximum open time finalizes the trajectory anyway. This is deliberately stricter than the
    builder's choice of root, which hangs a trace under its earliest parentless span."""
    return any(is_null_id(s.parent_span_id) and s.end_ns > 0 for s in spans)
