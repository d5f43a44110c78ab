"""What a trajectory summary says about the run besides its steps: the service, the session and
user ids where the instrumentation recorded them, and short previews of its input and output.

Computed once, when the trace is derived (by an ingest worker or the derivation worker), and
stored with the summary (the REST list only reads them)."""

from __future__ import annotations

from collections.abc import Sequence

from trajhub.normalizers.immutable import immutable
from trajhub.normalizers.model import AttributeValue, Span

#: Attribute keys that carry the session (conversation, thread) id, by convention
#: (docs/conventions.md, "Session, user and LangGraph position"; docs/coze-loop.md §2), in
#: order of precedence, best first (docs/conventions.md, "Which id is the session"): an id the
#: application named a session, then a conversation id, then a thread id. A trace is read rank
#: by rank: a session id on any of its spans beats a conversation id on its root.
SESSION_KEYS: tuple[tuple[str, ...], ...] = (
    (                                               # 1. the application's session id
        "session.id",                               # OpenInference, CozeLoop OTel
        "gen_ai.session.id",                        # Eino apmplus
        "langsmith.metadata.session_id",            # LangSmith
        "traceloop.association.properties.session_id",  # Traceloop metadata
        "session_id",                               # CozeLoop native tag
    ),
    (                                               # 2. the conversation id
        "gen_ai.conversation.id",                   # OTel GenAI (the official LangChain
                                                    # instrumentation: the thread id), Traceloop
                                                    # (configurable.thread_id)
        "langsmith.metadata.conversation_id",       # LangSmith
        "traceloop.association.properties.conversation_id",
    ),
    (                                               # 3. the thread id (LangGraph's thread_id)
        "langsmith.metadata.thread_id",             # LangSmith
        "traceloop.association.properties.thread_id",  # Traceloop metadata
        "thread_id",                                # CozeLoop native tag
    ),
)
USER_KEYS = (
    "user.id",                                      # OpenInference, CozeLoop OTel
    "gen_ai.user.id",                               # Eino apmplus
    "langsmith.metadata.user_id",                   # LangSmith
    "traceloop.association.properties.user_id",     # Traceloop metadata
    "user_id",                                      # CozeLoop native tag
)
#: CozeLoop OTel records the service (its `psm`) as a span attribute, not on the resource.
SERVICE_KEYS = ("service.name",)

#: characters kept of the run's input and output
PREVIEW_CHARS = 200


@immutable
class RunContext:
    service: str | None
    session_id: str | None
    user_id: str | None


def _text(value: AttributeValue | None) -> str | None:
    if isinstance(value, str | int) and not isinstance(value, bool):
        text = str(value).strip()
        return text or None
    return None


def _first(spans: Sequence[Span], keys: Sequence[str], resource: bool) -> str | None:
    """The first value under one of `keys`: on the root's attributes (then its resource), then
    on the other spans in start order."""
    for span in spans:
        for source in ((span.attributes, span.resource) if resource else (span.attributes,)):
            for key in keys:
                # most spans carry none of the keys: look up before converting
                if key in source and (found := _text(source[key])) is not None:
                    return found
    return None


def run_context(spans: Sequence[Span]) -> RunContext:
    """Service, session and user of a trace's spans; the root span (no parent present) first."""
    ids = {s.span_id for s in spans}
    ordered = sorted(spans, key=lambda s: (s.parent_span_id in ids, s.start_ns, s.span_id))
    return RunContext(
        service=_first(ordered, SERVICE_KEYS, resource=True),
        session_id=next((found for keys in SESSION_KEYS
                         if (found := _first(ordered, keys, resource=True)) is not None), None),
        user_id=_first(ordered, USER_KEYS, resource=True),
    )


def preview(text: str) -> str | None:
    """The start of a run's input or output, whitespace collapsed; None when empty.

    What `text[:PREVIEW_CHARS * 4]` collapses to, read through a window that doubles from
    just over PREVIEW_CHARS: a window's collapsed text is always a prefix of the larger one's
    (a word cut at its end is the start of that word), so once it is longer than
    PREVIEW_CHARS its start is the preview. Splitting the whole 4× span split every word of a
    long payload to keep 200 characters of it."""
    limit = min(len(text), PREVIEW_CHARS * 4)
    window = PREVIEW_CHARS + 1
    collapsed = " ".join(text[:window].split())
    while len(collapsed) <= PREVIEW_CHARS and window < limit:
        window = min(window * 2, limit)
        collapsed = " ".join(text[:window].split())
    if not collapsed:
        return None
    if len(collapsed) <= PREVIEW_CHARS:
        return collapsed
    return collapsed[:PREVIEW_CHARS - 1] + "…"
