"""The run context a trajectory summary carries: service, session and user ids read where each
instrumentation records them (docs/conventions.md, "Session, user and LangGraph position";
docs/coze-loop.md §2), and the input/output previews."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from trajhub.normalizers.model import Span
from trajhub.normalizers.run_context import PREVIEW_CHARS, preview, run_context
from trajhub.normalizers.sources import span_from_cozeloop

TRACE = "ab" * 16


def _span(span_id: str, parent: str = "", start: int = 0, **attributes: object) -> Span:
    return Span(trace_id=TRACE, span_id=span_id, name="s", start_ns=start, end_ns=start + 1,
                parent_span_id=parent, attributes=dict(attributes))  # type: ignore[arg-type]


@pytest.mark.parametrize(("session_key", "user_key"), [
    ("session.id", "user.id"),                                   # OpenInference, CozeLoop OTel
    ("gen_ai.session.id", "gen_ai.user.id"),                     # Eino apmplus
    ("langsmith.metadata.session_id", "langsmith.metadata.user_id"),  # LangSmith
])
def test_session_and_user_from_each_convention(session_key: str, user_key: str) -> None:
    spans = [_span("1" * 16, **{session_key: "s-1", user_key: "u-1"})]
    context = run_context(spans)
    assert (context.session_id, context.user_id) == ("s-1", "u-1")


def test_traceloop_conversation_and_langsmith_thread() -> None:
    assert run_context([_span("1" * 16, **{"gen_ai.conversation.id": "t-1"})]).session_id \
        == "t-1"
    assert run_context([_span("1" * 16, **{"langsmith.metadata.thread_id": "t-2"})]) \
        .session_id == "t-2"


def test_cozeloop_native_tags() -> None:
    span = span_from_cozeloop({
        "trace_id": TRACE, "span_id": "1" * 16, "parent_id": "0", "span_name": "agent",
        "started_at_micros": 1, "duration_micros": 1, "service_name": "loop-svc",
        "tags_string": {"thread_id": "thread-9", "user_id": "user-9"}})
    context = run_context([span])
    assert context == type(context)("loop-svc", "thread-9", "user-9")


def test_the_root_wins_then_the_resource_then_other_spans() -> None:
    root = Span(trace_id=TRACE, span_id="1" * 16, name="root", start_ns=5, end_ns=9,
                attributes={"user.id": "root-user"}, resource={"service.name": "svc",
                                                               "session.id": "res-session"})
    child = _span("2" * 16, parent="1" * 16, start=1, **{"user.id": "child-user",
                                                          "session.id": "child-session"})
    context = run_context([child, root])
    assert context.user_id == "root-user"
    assert context.session_id == "res-session"
    assert context.service == "svc"
    assert run_context([_span("3" * 16)]) == type(context)(None, None, None)


def test_preview_collapses_whitespace_and_truncates() -> None:
    assert preview("") is None and preview("  \n ") is None
    assert preview("what  is\n the weather") == "what is the weather"
    long = preview("word " * 200)
    assert long is not None and len(long) == PREVIEW_CHARS and long.endswith("…")


@given(st.text(alphabet=st.sampled_from("ab \n\t\u3000é"), max_size=4 * PREVIEW_CHARS + 50))
def test_a_preview_is_the_first_four_previews_worth_of_text_collapsed_then_cut(text: str) -> None:
    # the preview reads the text through a growing window; whatever the text's words and
    # spaces, that must equal collapsing its first 4 * PREVIEW_CHARS characters at once
    collapsed = " ".join(text[:4 * PREVIEW_CHARS].split())
    expected = (None if not collapsed else collapsed if len(collapsed) <= PREVIEW_CHARS
                else collapsed[:PREVIEW_CHARS - 1] + "…")
    assert preview(text) == expected


# ----------------------------------------------- which id is the session (docs/conventions.md)
def test_a_session_id_beats_a_conversation_id_which_beats_a_thread_id() -> None:
    root = _span("1" * 16, **{"gen_ai.conversation.id": "conversation-1",
                              "traceloop.association.properties.thread_id": "thread-1"})
    child = _span("2" * 16, parent="1" * 16, start=1,
                  **{"traceloop.association.properties.session_id": "session-1"})
    # the session id wins even though only a child span carries it
    assert run_context([root, child]).session_id == "session-1"
    assert run_context([root]).session_id == "conversation-1"
    thread_only = _span("1" * 16, **{"langsmith.metadata.thread_id": "thread-2"})
    assert run_context([thread_only]).session_id == "thread-2"
    both = _span("1" * 16, **{"langsmith.metadata.thread_id": "thread-3",
                              "langsmith.metadata.session_id": "session-3"})
    assert run_context([both]).session_id == "session-3"


def test_cozeloop_native_session_tag_beats_its_thread_tag() -> None:
    span = span_from_cozeloop({
        "trace_id": TRACE, "span_id": "1" * 16, "parent_id": "0", "span_name": "agent",
        "started_at_micros": 1, "duration_micros": 1,
        "tags_string": {"thread_id": "thread-9", "session_id": "session-9"}})
    assert run_context([span]).session_id == "session-9"


def test_an_empty_session_id_falls_through_to_the_next_rank() -> None:
    span = _span("1" * 16, **{"session.id": "  ", "gen_ai.conversation.id": "conversation-2"})
    assert run_context([span]).session_id == "conversation-2"
