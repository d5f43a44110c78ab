"""The contract between convention modules and the trajectory builder.

A convention module (one per instrumentation convention) recognises the spans it understands and
reads each into a `SpanReading`: what kind of step it is, its name, input and output, error and
model usage, in the units the trajectory wants. The builder (`normalizers.builder`) knows nothing
about attribute names; it only arranges readings into a trajectory.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import field
from enum import StrEnum
from typing import Protocol

from trajhub.normalizers.immutable import immutable
from trajhub.normalizers.model import Span


class StepKind(StrEnum):
    AGENT = "agent"
    GRAPH = "graph"
    MODEL = "model"
    TOOL = "tool"
    OTHER = "other"


@immutable
class ErrorInfo:
    """Why a span failed. `code`: the Coze Loop status code when non-zero, else a numeric
    provider/HTTP code when the span has one, else -1. `message`: one line; a traceback goes to
    `traceback` (the builder puts it in metadata)."""

    code: int
    message: str
    traceback: str = ""


@immutable
class ModelUsage:
    """Token counts and first-response latency of one model call; None = not recorded."""

    input_tokens: int | None = None
    output_tokens: int | None = None
    reasoning_tokens: int | None = None
    cache_read_tokens: int | None = None
    cache_write_tokens: int | None = None
    #: milliseconds, already converted from the source's unit
    latency_first_resp_ms: float | None = None


@immutable
class SpanReading:
    """What one convention reads from one span. The conventions pass the first four fields (who
    read it, what step it is, why, and its name) by position, the rest by keyword."""

    convention: str  # e.g. "openinference", "cozeloop", "genai"
    kind: StepKind
    rule: str  # the rule that decided `kind`, for /explain: "openinference.span.kind=LLM"
    name: str  # the step name; for a tool, the tool's own name
    input: str = ""
    output: str = ""
    error: ErrorInfo | None = None
    usage: ModelUsage | None = None  # model steps only
    #: strings an evaluator needs that the schema has no field for: model name/provider, tool
    #: call id, langgraph node/step, original span type ...
    metadata: Mapping[str, str] = field(default_factory=dict)
    framework: str = ""  # "langgraph", "langchain", "eino", "" when unknown
    warnings: tuple[str, ...] = ()


class TraceView(Protocol):
    """Read-only access to the other spans of the trace, for rules that look at neighbours
    (e.g. "a CHAIN whose direct children carry metadata.langgraph_node is a graph")."""

    def span(self, span_id: str) -> Span | None: ...

    def parent(self, span: Span) -> Span | None: ...

    def children(self, span: Span) -> Sequence[Span]: ...

    def all_spans(self) -> Sequence[Span]:
        """Every span of the trace, in start order (for spans whose parent link says nothing)."""
        ...


class Convention(Protocol):
    name: str

    def detect(self, span: Span) -> bool:
        """True when this convention produced the span (cheap: looks at a few keys)."""
        ...

    def read(self, span: Span, trace: TraceView) -> SpanReading:
        """Read a detected span. Never raises on odd input: missing or ill-typed attributes
        give empty fields and a warning."""
        ...
