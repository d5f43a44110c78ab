"""Interrupted runs (docs/trajectory-rules.md, "Interrupted runs"): LangGraph's `interrupt()`
ends a run so that a person can answer and a later run on the same thread resumes it
(`Command(resume=...)`).

LangGraph raises `GraphInterrupt` (older: `NodeInterrupt`) out of the node that called
`interrupt()`; the instrumentations record it as an error, an `exception` event or a Coze Loop
status on that span and its ancestors (docs/conventions.md). It is control flow, not a failure
(`multiagent` drops it as an error); this module names the outcome: the root's metadata gets
`outcome = "interrupted"`, `interrupt_node` (the deepest kept step that recorded the interrupt:
the tool or node that called `interrupt()`) and `interrupt_payload` (the value it asked with, as
JSON when it could be read back from the recorded `Interrupt(value=...)`).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping
from dataclasses import replace
from typing import Any, Final

from trajhub.normalizers.attrs import dumps, parse_literal
from trajhub.normalizers.model import KeptTree, Span
from trajhub.normalizers.reading import SpanReading

#: root metadata keys (docs/trajectory-rules.md, "Interrupted runs")
OUTCOME: Final = "outcome"
INTERRUPTED: Final = "interrupted"
NODE: Final = "interrupt_node"
PAYLOAD: Final = "interrupt_payload"

_MARKS: Final = ("GraphInterrupt", "NodeInterrupt", "Interrupt(value=")
#: the value of the first `Interrupt(...)` of a recorded GraphInterrupt (Python repr)
_VALUE: Final = re.compile(r"Interrupt\(value=(.*?), (?:id|resumable|ns|when)=", re.DOTALL)
#: the fields of a LangGraph.js `Interrupt` as its GraphInterrupt's message writes them (`id` and
#: `value`; older releases `value`, `when`, `resumable`, `ns`)
_JS_FIELDS: Final = frozenset({"id", "value", "when", "resumable", "ns"})
_JS_START: Final = re.compile(r"(?:^|GraphInterrupt: )\[")
_DECODER: Final = json.JSONDecoder()


def js_interrupts(text: str) -> list[Any] | None:
    """The interrupts of a LangGraph.js GraphInterrupt recorded as its message: the JSON list
    `[{"id": ..., "value": ...}]` the error's message is, alone (Coze Loop JS) or after
    `GraphInterrupt: ` (OpenInference JS adds it with the stack, Traceloop JS's stack starts
    with it). None when the text is no such record."""
    for match in _JS_START.finditer(text):
        try:
            value, _ = _DECODER.raw_decode(text, match.end() - 1)
        except ValueError:
            continue
        if isinstance(value, list) and value and all(
            isinstance(i, dict) and "value" in i and set(i) <= _JS_FIELDS for i in value
        ):
            return value
    return None


def records_js_interrupt(span: Span) -> bool:
    """Whether the span recorded a LangGraph.js GraphInterrupt: its one-line error message is
    only the first line (`[`) of the JSON, so the span's own texts are read."""
    texts = [span.status_message, *(e.attributes.get("exception.message") for e in span.events
                                    if e.name == "exception"),
             span.attributes.get("error.message"), span.attributes.get("exception.message")]
    return any(isinstance(t, str) and js_interrupts(t) is not None for t in texts)


def is_interrupt(text: str) -> bool:
    """Whether an error's text records LangGraph's interrupt (Python's repr or JS's message)."""
    return any(m in text for m in _MARKS) or js_interrupts(text) is not None


def _texts(span: Span, reading: SpanReading) -> Iterator[str]:
    """Where a span records an exception: its status message, its error attributes, its
    `exception` events, the reading's error and control-flow note, a Coze Loop output."""
    yield span.status_message
    for key in ("error.type", "error.message", "exception.type", "exception.message"):
        value = span.attributes.get(key)
        if isinstance(value, str):
            yield value
    for event in span.events:
        if event.name == "exception":
            for key in ("exception.type", "exception.message"):
                value = event.attributes.get(key)
                if isinstance(value, str):
                    yield value
    if reading.error is not None:
        yield reading.error.message
    yield reading.metadata.get("control_flow", "")
    if span.cozeloop is not None and span.cozeloop.status_code != 0:
        yield span.cozeloop.output
        yield from span.cozeloop.tags_string.values()


def _interrupt_text(span: Span, reading: SpanReading) -> str | None:
    """The text that records this span's interrupt, None when it recorded none."""
    found = [t for t in _texts(span, reading) if t and is_interrupt(t)]
    if not found:
        return None
    with_value = [t for t in found if "Interrupt(value=" in t or js_interrupts(t) is not None]
    return (with_value or found)[0]


def _payload(text: str) -> str:
    match = _VALUE.search(text)
    if match is None:
        found = js_interrupts(text)
        return dumps(found[0]["value"]) if found else ""
    value = parse_literal(match.group(1))
    return dumps(value) if value is not None else match.group(1)


def _depth(span_id: str, parent_of: Mapping[str, str]) -> int:
    depth = 0
    while parent_of.get(span_id):
        span_id = parent_of[span_id]
        depth += 1
    return depth


def mark(
    readings: Mapping[str, SpanReading], recorded: Mapping[str, SpanReading], kept: KeptTree
) -> SpanReading:
    """The root reading, marked interrupted when a kept span recorded LangGraph's interrupt and
    the run did not fail for another reason (the root has no error)."""
    spans, parent_of, root_id = kept.spans, kept.parent_of, kept.root_id
    root = readings[root_id]
    if root.error is not None:
        return root
    hits = {
        span_id: text
        for span_id in parent_of
        if (text := _interrupt_text(spans[span_id], recorded[span_id])) is not None
        or (text := _interrupt_text(spans[span_id], readings[span_id])) is not None
    }
    if not hits:
        return root
    deepest = max(
        hits, key=lambda i: (_depth(i, parent_of), -spans[i].start_ns, i)
    )
    payload = next((p for i in sorted(hits, key=lambda i: -_depth(i, parent_of))
                    if (p := _payload(hits[i]))), "")
    node = readings[deepest].name if deepest != root_id else root.name
    metadata = {**root.metadata, OUTCOME: INTERRUPTED, NODE: node, PAYLOAD: payload}
    return replace(root, metadata=metadata)
