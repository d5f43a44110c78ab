"""One scripted weather conversation on the official `openai` client, traced by one official OTel
GenAI instrumentation of it, exporting traces and logs to a trajhub server. Run in a process of
its own (an instrumentation patches the client globally, and the OTel providers can be set
once) by tests/test_genai_events_openai.py:

  python -m tests.genai_openai_client --instr genai_openai --content EVENT_ONLY \\
      --transport grpc --http URL --grpc HOST:PORT --project P --openai URL

`--instr genai_openai` is opentelemetry-instrumentation-genai-openai, `openai_v2` is
opentelemetry-instrumentation-openai-v2 (run in .venv-openai-v2: it needs an older
opentelemetry-util-genai, pyproject.toml's `openai-v2` extra). `--content` is
OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT: SPAN_ONLY, EVENT_ONLY or SPAN_AND_EVENT, in
the current GenAI conventions (both take their content mode from opentelemetry-util-genai), or
`true`, openai-v2's older conventions (message events with the content in their body). The
conversation runs twice, plain and streaming, each under an `invoke_agent weather_agent` span
of the application's (the instrumentations trace the client calls only): the model asks for
`get_weather`, the application answers it, the model answers. Prints the two trace ids as JSON,
`{"plain": ..., "stream": ...}`.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from typing import Any

SYSTEM = "You are a weather assistant. Use tools."
QUESTION = "What's the weather in Paris?"
TOOL_RESULT = "Sunny, 22C in Paris"
TOOLS = [{"type": "function", "function": {
    "name": "get_weather", "description": "The weather in a city.",
    "parameters": {"type": "object", "properties": {"city": {"type": "string"}},
                   "required": ["city"]}}}]
AGENT = "weather_agent"


def _providers(transport: str, http: str, grpc_target: str, project: str) -> tuple[Any, Any]:
    """The global tracer and logger providers, exporting to trajhub into `project`."""
    from opentelemetry import trace
    from opentelemetry._logs import set_logger_provider
    from opentelemetry.sdk._logs import LoggerProvider
    from opentelemetry.sdk._logs.export import BatchLogRecordProcessor
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor

    headers = {"trajhub-project": project}
    if transport == "grpc":
        from opentelemetry.exporter.otlp.proto.grpc._log_exporter import OTLPLogExporter
        from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter

        spans: Any = OTLPSpanExporter(endpoint=grpc_target, insecure=True, headers=headers)
        logs: Any = OTLPLogExporter(endpoint=grpc_target, insecure=True, headers=headers)
    else:
        from opentelemetry.exporter.otlp.proto.http._log_exporter import (
            OTLPLogExporter as HttpLogExporter,
        )
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import (
            OTLPSpanExporter as HttpSpanExporter,
        )

        spans = HttpSpanExporter(endpoint=f"{http}/v1/traces", headers=headers)
        logs = HttpLogExporter(endpoint=f"{http}/v1/logs", headers=headers)
    resource = Resource.create({"service.name": "genai-openai-client"})
    tracer_provider = TracerProvider(resource=resource)
    tracer_provider.add_span_processor(BatchSpanProcessor(spans))
    trace.set_tracer_provider(tracer_provider)
    logger_provider = LoggerProvider(resource=resource)
    logger_provider.add_log_record_processor(BatchLogRecordProcessor(logs))
    set_logger_provider(logger_provider)
    return tracer_provider, logger_provider


def _ask(client: Any, messages: list[dict[str, Any]], stream: bool
         ) -> tuple[str, list[dict[str, Any]]]:
    """One chat completion: the answer's text and its tool calls (in the request's form)."""
    if not stream:
        message = client.chat.completions.create(model="gpt-4o-mini", messages=messages,
                                                 tools=TOOLS).choices[0].message
        return message.content or "", [c.model_dump(exclude_none=True)
                                       for c in message.tool_calls or []]
    content, calls = "", {}
    for chunk in client.chat.completions.create(model="gpt-4o-mini", messages=messages,
                                                tools=TOOLS, stream=True,
                                                stream_options={"include_usage": True}):
        for choice in chunk.choices:
            content += choice.delta.content or ""
            for part in choice.delta.tool_calls or []:
                call = calls.setdefault(part.index, {"id": "", "type": "function",
                                                     "function": {"name": "", "arguments": ""}})
                call["id"] = part.id or call["id"]
                if part.function is not None:
                    call["function"]["name"] += part.function.name or ""
                    call["function"]["arguments"] += part.function.arguments or ""
    return content, [calls[i] for i in sorted(calls)]


def converse(client: Any, stream: bool) -> str:
    """The conversation under the application's agent span; its trace id (hex)."""
    from opentelemetry import trace

    tracer = trace.get_tracer("genai-openai-client")
    with tracer.start_as_current_span(
            f"invoke_agent {AGENT}",
            attributes={"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": AGENT}
    ) as span:
        messages: list[dict[str, Any]] = [{"role": "system", "content": SYSTEM},
                                          {"role": "user", "content": QUESTION}]
        content, calls = _ask(client, messages, stream)
        messages.append({"role": "assistant", "content": content, "tool_calls": calls})
        for call in calls:
            messages.append({"role": "tool", "tool_call_id": call["id"], "content": TOOL_RESULT})
        _ask(client, messages, stream)
        return format(span.get_span_context().trace_id, "032x")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--instr", required=True, choices=["genai_openai", "openai_v2"])
    parser.add_argument("--content", required=True,
                        choices=["SPAN_ONLY", "EVENT_ONLY", "SPAN_AND_EVENT", "true"])
    parser.add_argument("--transport", required=True, choices=["http", "grpc"])
    parser.add_argument("--http", required=True)
    parser.add_argument("--grpc", required=True)
    parser.add_argument("--project", required=True)
    parser.add_argument("--openai", required=True)
    args = parser.parse_args()
    os.environ["OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"] = args.content
    if args.content != "true":
        # the content modes are those of the current conventions; `true` is openai-v2's older
        # conventions, without the opt-in: `gen_ai.{system,user,assistant,tool}.message` and
        # `gen_ai.choice` events with their content in the record's body
        os.environ["OTEL_SEMCONV_STABILITY_OPT_IN"] = "gen_ai_latest_experimental"
    tracer_provider, logger_provider = _providers(args.transport, args.http, args.grpc,
                                                  args.project)
    if args.instr == "genai_openai":
        from opentelemetry.instrumentation.genai.openai import OpenAIInstrumentor
    else:
        from opentelemetry.instrumentation.openai_v2 import (  # type: ignore[no-redef]
            OpenAIInstrumentor,
        )
    OpenAIInstrumentor().instrument()
    import openai

    client = openai.OpenAI(base_url=args.openai, api_key="sk-offline-dummy", max_retries=0)
    traces = {"plain": converse(client, False), "stream": converse(client, True)}
    tracer_provider.force_flush()
    logger_provider.force_flush()
    tracer_provider.shutdown()
    logger_provider.shutdown()
    print(json.dumps(traces))
    return 0


if __name__ == "__main__":
    sys.exit(main())
