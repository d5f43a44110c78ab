"""Log records attached to their spans as events (normalizers/log_events.py), without a server:
how a record's body becomes attributes, that nested values stay structured, that a record
naming no span is left out, and that the GenAI normalizer reads the content once whether it
came on the span, in an event, or both (`SPAN_AND_EVENT`). Ground truth is written here."""

from __future__ import annotations

import json
from typing import Any

from opentelemetry.proto.logs.v1.logs_pb2 import LogRecord

from tests.otlp_builders import kv
from trajhub.normalizers import derive
from trajhub.normalizers.log_events import BODY_KEY, LogEvent, attach, log_event
from trajhub.normalizers.model import Event, Span

TRACE = "0af7651916cd43dd8448eb211c80319c"
ROOT, CHAT = "00f067aa0ba902b7", "00f067aa0ba902b8"
T0 = 1_700_000_000_000_000_000

SYSTEM = [{"type": "text", "content": "You are terse."}]
INPUT = [{"role": "user", "parts": [{"type": "text", "content": "weather in sf?"}]}]
OUTPUT = [{"role": "assistant", "parts": [{"type": "text", "content": "Sunny."}],
           "finish_reason": "stop"}]


def _spans(chat_attributes: dict[str, Any] | None = None,
           chat_events: tuple[Event, ...] = ()) -> list[Span]:
    return [
        Span(trace_id=TRACE, span_id=ROOT, name="invoke_agent weather", start_ns=T0,
             end_ns=T0 + 10_000, attributes={"gen_ai.operation.name": "invoke_agent",
                                             "gen_ai.agent.name": "weather"}),
        Span(trace_id=TRACE, span_id=CHAT, parent_span_id=ROOT, name="chat gpt-4o",
             start_ns=T0 + 1_000, end_ns=T0 + 5_000, events=chat_events,
             attributes={"gen_ai.operation.name": "chat", "gen_ai.request.model": "gpt-4o",
                         **(chat_attributes or {})}),
    ]


def _details(time_ns: int = T0 + 4_000) -> LogEvent:
    """The util-genai details event: structured content attributes, no body."""
    return LogEvent(trace_id=TRACE, span_id=CHAT, time_ns=time_ns,
                    name="gen_ai.client.inference.operation.details",
                    attributes={"gen_ai.operation.name": "chat",
                                "gen_ai.system_instructions": SYSTEM,
                                "gen_ai.input.messages": INPUT,
                                "gen_ai.output.messages": OUTPUT})


def _model_step(spans: list[Span]) -> Any:
    trajectory = derive(spans).trajectory
    [step] = [s for a in trajectory.agent_steps for s in a.steps if s.type == "model"]
    return step


# ------------------------------------------------------------------------------ attach

def test_a_map_body_becomes_attributes_and_the_records_own_attribute_wins() -> None:
    log = LogEvent(trace_id=TRACE, span_id=CHAT, name="gen_ai.user.message", time_ns=T0 + 2,
                   attributes={"gen_ai.system": "openai", "content": "from the attribute"},
                   body={"content": "from the body", "id": "call_1"})
    [_, chat] = attach(_spans(), [log])
    assert chat.events == (Event("gen_ai.user.message", T0 + 2, {
        "content": "from the attribute", "id": "call_1", "gen_ai.system": "openai"}),)


def test_another_body_goes_under_the_body_key() -> None:
    logs = [LogEvent(TRACE, CHAT, "note", T0 + 1, {}, "plain text"),
            LogEvent(TRACE, CHAT, "list", T0 + 2, {}, [1, "two"])]
    [_, chat] = attach(_spans(), logs)
    assert [e.attributes for e in chat.events] == [{BODY_KEY: "plain text"},
                                                   {BODY_KEY: [1, "two"]}]
    assert LogEvent(TRACE, CHAT, "none", T0).event().attributes == {}


def test_nested_body_values_stay_structured_from_the_protobuf() -> None:
    record = LogRecord(time_unix_nano=T0 + 3, trace_id=bytes.fromhex(TRACE),
                       span_id=bytes.fromhex(CHAT), event_name="gen_ai.choice")
    body = record.body.kvlist_value
    body.values.append(kv("index", 0))
    body.values.append(kv("finish_reason", "stop"))
    message = body.values.add(key="message").value.kvlist_value
    message.values.append(kv("role", "assistant"))
    message.values.append(kv("content", "Sunny."))
    calls = message.values.add(key="tool_calls").value.array_value
    call = calls.values.add().kvlist_value
    call.values.append(kv("id", "call_1"))
    call.values.add(key="function").value.kvlist_value.values.append(kv("name", "weather"))
    record.attributes.append(kv("gen_ai.system", "openai"))
    event = log_event(record)
    assert (event.trace_id, event.span_id, event.name, event.time_ns) == (
        TRACE, CHAT, "gen_ai.choice", T0 + 3)
    assert event.event().attributes == {
        "index": 0, "finish_reason": "stop", "gen_ai.system": "openai",
        "message": {"role": "assistant", "content": "Sunny.",
                    "tool_calls": [{"id": "call_1", "function": {"name": "weather"}}]}}


def test_the_event_name_falls_back_to_the_attribute_and_the_time_to_the_observed_time() -> None:
    record = LogRecord(observed_time_unix_nano=T0 + 9)
    record.attributes.append(kv("event.name", "gen_ai.user.message"))
    event = log_event(record)
    assert (event.name, event.time_ns, event.body) == ("gen_ai.user.message", T0 + 9, None)


def test_records_that_name_no_span_of_the_trace_are_left_out() -> None:
    spans = _spans()
    logs = [LogEvent(TRACE, "ffffffffffffffff", "gen_ai.user.message", T0),  # not in the trace
            LogEvent(TRACE, "", "gen_ai.user.message", T0),  # names no span
            LogEvent("1" * 32, CHAT, "gen_ai.user.message", T0)]  # another trace's
    assert attach(spans, logs) == spans


def test_events_follow_the_spans_own_in_time_order_and_a_duplicate_is_added_once() -> None:
    own = Event("exception", T0 + 3, {"exception.message": "x"})
    logs = [LogEvent(TRACE, CHAT, "b", T0 + 5), LogEvent(TRACE, CHAT, "a", T0 + 4),
            LogEvent(TRACE, CHAT, "exception", T0 + 3, {"exception.message": "x"})]
    [_, chat] = attach(_spans(chat_events=(own,)), logs)
    assert [e.name for e in chat.events] == ["exception", "a", "b"]


# --------------------------------------------------------------------- the content read

def _texts(step: Any) -> tuple[Any, Any]:
    return json.loads(step.input), json.loads(step.output)


def test_event_only_content_fills_the_model_step_with_its_system_instructions() -> None:
    step = _model_step(attach(_spans(), [_details()]))
    assert _texts(step) == ([{"role": "system", "content": "You are terse."},
                             {"role": "user", "content": "weather in sf?"}],
                            {"role": "assistant", "content": "Sunny."})


def test_span_and_event_content_is_counted_once_and_the_span_wins() -> None:
    on_span = {"gen_ai.system_instructions": json.dumps(SYSTEM),
               "gen_ai.input.messages": json.dumps(INPUT),
               "gen_ai.output.messages": json.dumps(OUTPUT)}
    only_span = _model_step(_spans(on_span))
    both = _model_step(attach(_spans(on_span), [_details()]))
    assert (both.input, both.output) == (only_span.input, only_span.output)
    assert both.input.count("You are terse.") == 1 and both.input.count("weather in sf?") == 1
    assert both.output.count("Sunny.") == 1
    # the span's own value wins where the two differ
    differing = _model_step(attach(_spans({"gen_ai.output.messages": json.dumps(
        [{"role": "assistant", "parts": [{"type": "text", "content": "Rainy."}]}])}),
        [_details()]))
    assert "Rainy." in differing.output and "Sunny." not in differing.output
    assert differing.input.count("You are terse.") == 1  # what the span lacks, from the event


def test_the_older_message_events_in_record_bodies_give_input_and_output() -> None:
    user = LogEvent(TRACE, CHAT, "gen_ai.user.message", T0 + 2, {"gen_ai.system": "openai"},
                    {"content": "weather in sf?"})
    system = LogEvent(TRACE, CHAT, "gen_ai.system.message", T0 + 1,
                      {"gen_ai.system": "openai", "event.name": "gen_ai.system.message"},
                      {"content": "You are terse."})
    choice = LogEvent(TRACE, CHAT, "gen_ai.choice", T0 + 4, {"gen_ai.system": "openai"},
                      {"index": 0, "finish_reason": "stop",
                       "message": {"role": "assistant", "content": "Sunny.", "tool_calls": [
                           {"id": "call_1", "type": "function", "function": {
                               "name": "get_weather", "arguments": '{"city": "sf"}'}}]}})
    step = _model_step(attach(_spans(), [choice, user, system]))
    assert _texts(step) == (
        [{"role": "system", "content": "You are terse."},
         {"role": "user", "content": "weather in sf?"}],
        {"role": "assistant", "content": "Sunny.",
         "tool_calls": [{"id": "call_1", "name": "get_weather", "arguments": {"city": "sf"}}]})
