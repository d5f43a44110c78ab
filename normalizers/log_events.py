"""Log records that name a span, attached to it as span events before the normalizers read it.

The GenAI instrumentations put message content in log records ("events") when told to
(`OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=EVENT_ONLY` or `SPAN_AND_EVENT`); a
normalizer reads span events (normalizers/genai.py, `_content` and `_event_content`). So each
record of a trace whose span id is one of the trace's spans becomes an event of that span: its
name is the record's event name (`LogRecord.event_name`, else its `event.name` attribute), its
time the record's (`time_unix_nano`, else `observed_time_unix_nano`), its attributes the
record's plus its body. A map body's keys become attributes (an attribute the record already
has wins); any other body goes under `BODY_KEY`. Nested values (maps, lists) stay structured.

Pure: the storage code loads the records (storage/derivation_store.py, `load_logs`).
"""

from __future__ import annotations

import dataclasses
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import field

from opentelemetry.proto.logs.v1.logs_pb2 import LogRecord

from trajhub.normalizers.immutable import immutable
from trajhub.normalizers.model import Attributes, AttributeValue, Event, Span
from trajhub.normalizers.sources import any_value, attributes

#: the attribute that holds a record's body when it is not a map (a string, a list, a number)
BODY_KEY = "log.record.body"


@immutable
class LogEvent:
    """A log record as the normalizers read it: the span it names and what it says."""

    trace_id: str
    span_id: str
    name: str
    time_ns: int
    attributes: Attributes = field(default_factory=dict)
    #: the record's body; None when it has none
    body: AttributeValue = None

    def event(self) -> Event:
        """The record as a span event: its attributes with the body mapped into them."""
        attrs: dict[str, AttributeValue] = {}
        if isinstance(self.body, dict):
            attrs.update(self.body)
        elif self.body is not None:
            attrs[BODY_KEY] = self.body
        attrs.update(self.attributes)  # the record's own attribute wins over a body key
        return Event(name=self.name, time_ns=self.time_ns, attributes=attrs)


def log_event(record: LogRecord) -> LogEvent:
    """A stored OTLP log record (service/ingest/log_decode.py names it the same way)."""
    attrs = attributes(record.attributes)
    name = record.event_name or attrs.get("event.name") or ""
    return LogEvent(
        trace_id=record.trace_id.hex(), span_id=record.span_id.hex(),
        name=name if isinstance(name, str) else "",
        time_ns=record.time_unix_nano or record.observed_time_unix_nano,
        attributes=attrs,
        body=any_value(record.body) if record.HasField("body") else None)


def attach(spans: Sequence[Span], logs: Iterable[LogEvent]) -> list[Span]:
    """`spans` with each record of `logs` that names one of them (same trace and span id) as
    an event after the span's own events, in time order (ties in the order given). A record
    that names no span of `spans` is left out; one equal to an event the span already has
    (an SDK that sent it both ways) is not added again."""
    by_span: dict[tuple[str, str], list[Event]] = defaultdict(list)
    for log in logs:
        if log.span_id:
            by_span[(log.trace_id, log.span_id)].append(log.event())
    if not by_span:
        return list(spans)
    out: list[Span] = []
    for span in spans:
        found = by_span.get((span.trace_id, span.span_id))
        if not found:
            out.append(span)
            continue
        found.sort(key=lambda e: e.time_ns)
        added = tuple(e for e in found if e not in span.events)
        out.append(dataclasses.replace(span, events=span.events + added))
    return out
