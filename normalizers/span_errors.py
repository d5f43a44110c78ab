"""What a span says about its failure: its status, error attributes and `exception` event read
into one `ErrorInfo` (docs/trajectory-rules.md §4), and an error text cut to the one line the
schema's `msg` holds. Shared by the convention modules; never raises.
"""

from __future__ import annotations

from collections.abc import Iterable

from trajhub.normalizers.attrs import get_int, get_str
from trajhub.normalizers.model import STATUS_ERROR, STATUS_OK, Span
from trajhub.normalizers.reading import ErrorInfo

_TRACEBACK_MARK = "Traceback (most recent call last)"
_MAX_MESSAGE = 500
_GENERIC_EXCEPTION_TYPES = frozenset({"", "Exception", "BaseException", "Error"})
#: attributes that carry a numeric provider / HTTP code of a failed call
_CODE_KEYS = (
    "http.response.status_code",
    "http.status_code",
    "error.code",
    "error.status_code",
    "gen_ai.response.status_code",
)


def one_line(text: str) -> str:
    """The most specific single line of an error text: the part before a Python traceback, first
    non-empty line, capped (a traceback belongs in metadata, not in `msg`)."""
    head = text.split(_TRACEBACK_MARK, 1)[0]
    for line in head.splitlines():
        line = line.strip()
        if line:
            return line[:_MAX_MESSAGE]
    return ""


def split_error(text: str) -> tuple[str, str]:
    """(one-line message, the rest). The schema's `msg` is one line; Eino's graph errors append
    a "----\\nnode path: [...]" block and tracebacks are many lines, which belong in metadata."""
    stripped = text.strip()
    if not stripped:
        return "", ""
    lines = stripped.splitlines()
    first = next((line.strip() for line in lines if line.strip()), "")
    rest = stripped if len(lines) > 1 else ""
    return first, rest


def _traceback_of(text: str) -> str:
    index = text.find(_TRACEBACK_MARK)
    return text[index:].strip() if index >= 0 else ""


def span_failed(span: Span, extra_error_keys: Iterable[str] = ()) -> bool:
    """A span failed when its status is ERROR, its Coze Loop status_code is non-zero, or it carries
    error attributes or an `exception` event (docs/trajectory-rules.md §4). An explicit status OK
    wins over events: OpenInference records an `exception` event for GraphInterrupt/Command but
    deliberately sets OK, because those are control flow, not failures."""
    if span.status_code == STATUS_ERROR:
        return True
    if span.cozeloop is not None and span.cozeloop.status_code != 0:
        return True
    if span.status_code == STATUS_OK:
        return False
    attrs = span.attributes
    if any(get_str(attrs, key) for key in ("error.type", "error.message", *extra_error_keys)):
        return True
    if any(key.startswith("exception.") for key in attrs):
        return True
    return any(event.name == "exception" for event in span.events)


def span_error(span: Span, extra_message_keys: Iterable[str] = ()) -> ErrorInfo | None:
    """The ErrorInfo of a failed span (None when it did not fail), docs/trajectory-rules.md §4."""
    extra = tuple(extra_message_keys)
    if not span_failed(span, extra):
        return None
    return error_info(span, extra)


def error_info(span: Span, extra_message_keys: Iterable[str] = ()) -> ErrorInfo:
    """The ErrorInfo a span's status, error attributes and `exception` event describe, whether
    or not the span counts as failed (a root exported with status OK can still record the
    run's exception: docs/trajectory-rules.md §4)."""
    extra = tuple(extra_message_keys)
    attrs = span.attributes
    code = -1
    if span.cozeloop is not None and span.cozeloop.status_code != 0:
        code = span.cozeloop.status_code
    else:
        provider_code = get_int(attrs, *_CODE_KEYS)
        if provider_code is None:
            # OTel GenAI: error.type is "a provider code or an exception class"; use it when numeric
            provider_code = get_int(attrs, "error.type")
        if provider_code is not None and provider_code != 0:
            code = provider_code

    event = next((e for e in span.events if e.name == "exception"), None)
    ev_type = get_str(event.attributes, "exception.type") if event else None
    ev_message = get_str(event.attributes, "exception.message") if event else None
    ev_trace = get_str(event.attributes, "exception.stacktrace") if event else None
    attr_type = get_str(attrs, "exception.type", "error.type")
    attr_message = get_str(attrs, *extra, "error.message", "exception.message")

    candidates: list[str] = []
    # exception event first: it has the class and the message apart; LangSmith's event message
    # is repr(err)+traceback with a generic type, which one_line() cuts down to repr(err)
    if ev_message:
        line = one_line(ev_message)
        if ev_type and ev_type not in _GENERIC_EXCEPTION_TYPES and not line.startswith(ev_type):
            line = f"{ev_type}: {line}"
        candidates.append(line)
    if attr_message:
        line = one_line(attr_message)
        if (
            attr_type
            and attr_type not in _GENERIC_EXCEPTION_TYPES
            and not line.startswith(attr_type)
        ):
            line = f"{attr_type}: {line}"
        candidates.append(line)
    if span.status_message:
        candidates.append(one_line(span.status_message))
    if attr_type:
        candidates.append(attr_type)
    if ev_type:
        candidates.append(ev_type)
    message = next((c for c in candidates if c), "error")

    traceback = ev_trace or get_str(attrs, "exception.stacktrace", "error_trace") or ""
    if not traceback:
        for text in (span.status_message, ev_message or "", attr_message or ""):
            traceback = _traceback_of(text)
            if traceback:
                break
    return ErrorInfo(code=code, message=message, traceback=traceback)
