"""The ordered registry of conventions (docs/conventions.md §1.1: the first to detect a span wins).

Order matters: LangSmith and Traceloop also set `gen_ai.operation.name`, with non-standard
values, so the vendor keys are checked before generic GenAI; Coze Loop native spans are
recognised by how they travelled, so they come first. One trace may mix conventions: detection is
per span.
"""

from __future__ import annotations

from trajhub.normalizers import apmplus, cozeloop
from trajhub.normalizers.genai import GENAI
from trajhub.normalizers.langsmith import LANGSMITH
from trajhub.normalizers.model import Span
from trajhub.normalizers.openinference import OPENINFERENCE
from trajhub.normalizers.reading import Convention, SpanReading, StepKind, TraceView
from trajhub.normalizers.traceloop import TRACELOOP


class Fallback:
    """Anything no convention recognises: kept only if it is the root, never a step."""

    name = "other"

    def detect(self, span: Span) -> bool:
        return True

    def read(self, span: Span, trace: TraceView) -> SpanReading:
        return SpanReading(self.name, StepKind.OTHER, "no convention recognised the span",
                           span.name)


FALLBACK = Fallback()

# The cozeloop module exports its native convention first ("cozeloop") and its OTel one after;
# they belong at different places in the order.
_COZELOOP_NATIVE = tuple(c for c in cozeloop.CONVENTIONS if c.name == "cozeloop")
_COZELOOP_OTEL = tuple(c for c in cozeloop.CONVENTIONS if c.name != "cozeloop")

CONVENTIONS: tuple[Convention, ...] = (
    *_COZELOOP_NATIVE,
    OPENINFERENCE,
    LANGSMITH,
    TRACELOOP,
    *_COZELOOP_OTEL,
    *apmplus.CONVENTIONS,
    GENAI,
    FALLBACK,
)
