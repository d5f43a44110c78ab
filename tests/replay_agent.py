"""Run the scripted LangGraph agent (tests/fake_agent.py) once, traced by the LangSmith SDK in
OTel mode through the OpenTelemetry SDK's OTLP/HTTP exporter into a trajhub server — a user's
agent process. Optionally its tools are the recorded tool results of an earlier trace, served by
`trajhub.service.client.replay`.

    python -m tests.replay_agent URL PROJECT SCRIPT [--tools-from TRACE_ID]

Prints one JSON line: {"trace_id", "unanswered": [...], "answered": int}. A separate process,
because LangSmith's OTel mode uses the global tracer provider and environment.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import warnings
from typing import Any

from pydantic import Field

from tests import fake_agent

U = fake_agent._usage

#: the scripts, by name; each turn is what the scripted model answers, in order
SCRIPTS: dict[str, list[dict[str, Any]]] = {
    "react": fake_agent.react_script(),
    # the model stops after the weather and the sum: it never asks for 1/0
    "no_divide": [
        fake_agent.react_script()[0],
        dict(content="It is sunny and 22C in Paris, and 2 + 3 = 5.", tool_calls=[],
             usage=U(180, 16), finish_reason="stop"),
    ],
    # a "new model" re-run over recorded tools: same first turn, then a call the recording
    # never saw (add 10 + 5) instead of 1/0, then an answer
    "replay_v2": [
        dict(content="Checking weather and sum.",
             tool_calls=[
                 {"name": "get_weather", "args": {"city": "Paris"}, "id": "call_w_v2",
                  "type": "tool_call"},
                 {"name": "add", "args": {"a": 2, "b": 3}, "id": "call_a_v2",
                  "type": "tool_call"}],
             usage=U(100, 20), finish_reason="tool_calls"),
        dict(content="One more sum.",
             tool_calls=[{"name": "add", "args": {"a": 10, "b": 5}, "id": "call_a2_v2",
                          "type": "tool_call"}],
             usage=U(150, 15), finish_reason="tool_calls"),
        dict(content="Sunny, 22C in Paris; 2 + 3 = 5.", tool_calls=[], usage=U(200, 22),
             finish_reason="stop"),
    ],
}
MODEL_NAMES = {"react": fake_agent.MODEL_NAME, "no_divide": fake_agent.MODEL_NAME,
               "replay_v2": "fake-gpt-4o-mini-v2"}


class ScriptedToolChatModel(fake_agent.ScriptedToolChatModel):
    """fake_agent's model playing one of SCRIPTS (same class name, so the same step name)."""

    turns: list[dict[str, Any]] = Field(default_factory=list)

    def model_post_init(self, __context: Any) -> None:
        super().model_post_init(__context)
        object.__setattr__(self, "_script", list(self.turns))


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("url")
    ap.add_argument("project")
    ap.add_argument("script", choices=sorted(SCRIPTS))
    ap.add_argument("--tools-from", help="serve the recorded tool results of this trace")
    args = ap.parse_args()

    os.environ.update({"LANGSMITH_TRACING": "true", "LANGSMITH_OTEL_ENABLED": "true",
                       "LANGSMITH_OTEL_ONLY": "true", "LANGSMITH_API_KEY": "lsv2_offline",
                       "LANGSMITH_PROJECT": "replay-tests",
                       "LANGSMITH_ENDPOINT": "http://127.0.0.1:9"})
    from opentelemetry import trace
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import ReadableSpan, SpanProcessor, TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor

    roots: list[str] = []

    class RootIds(SpanProcessor):
        def on_end(self, span: ReadableSpan) -> None:
            if span.parent is None and span.context is not None:
                roots.append(format(span.context.trace_id, "032x"))

    provider = TracerProvider(resource=Resource.create({"service.name": "replay-agent",
                                                        "service.version": args.script}))
    provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter(
        endpoint=f"{args.url}/v1/traces", headers={"trajhub-project": args.project})))
    provider.add_span_processor(RootIds())
    trace.set_tracer_provider(provider)

    warnings.filterwarnings("ignore")
    from langgraph.prebuilt import ToolNode, create_react_agent

    tools: list[Any] = list(fake_agent.TOOLS)
    replay = None
    if args.tools_from:
        from trajhub.service.client.replay import RecordedTools

        replay = RecordedTools.from_server(args.url, args.tools_from, project=args.project)
        tools = replay.langchain_tools(tools)
    model = ScriptedToolChatModel(turns=SCRIPTS[args.script], model_name=MODEL_NAMES[args.script],
                        temperature=0.0)
    graph = create_react_agent(model, ToolNode(tools, handle_tool_errors=True),
                               prompt="You are a helpful assistant. Use tools.")
    fake_agent.run_graph(graph, stream=True)

    from langchain_core.tracers.langchain import wait_for_all_tracers

    wait_for_all_tracers()
    provider.force_flush()
    provider.shutdown()
    print(json.dumps({
        "trace_id": roots[-1] if roots else None,
        "answered": replay.answered if replay else 0,
        "unanswered": [c.__dict__ for c in replay.unanswered] if replay else [],
    }))
    return 0


if __name__ == "__main__":
    sys.exit(main())
