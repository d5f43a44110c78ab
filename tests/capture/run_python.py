"""Capture one shape under one Python instrumentation (one process per capture: the
instrumentations patch LangChain globally and the OTel tracer provider can be set only once).

  python -m tests.capture.run_python --instr openinference --shape parallel_tools --mode stream

Writes tests/fixtures/real-clients/<instr>/<shape>.<graph>.<mode>/http_NNN_*.{bin,json}.
OTel clients export OTLP/HTTP protobuf, gzip-compressed (the captures stay small), through a
BatchSpanProcessor with a trace/span id generator seeded from the capture's name, so re-running
gives the same ids and no two captures share a trace id. cozeloop Python posts its native JSON.

The `EVENT_CLIENTS` are `otel_genai` with its message content sent as OTLP log events
(`EVENT_ONLY`, or `SPAN_AND_EVENT`): they export logs too, through a global LoggerProvider, and
export over OTLP/HTTP or OTLP/gRPC (gzip either way) as `transport()` says; the gRPC receiver
saves `grpc_NNN_v1_{traces,logs}.*`, gzipped as the HTTP bodies are.
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import sys
import time
import zlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tests.capture import agents, script

FIXTURES = Path(__file__).parent.parent / "fixtures" / "real-clients"
#: `otel_genai` is the official OpenTelemetry LangChain instrumentation
#: (opentelemetry-instrumentation-genai-langchain); `openinference_genai` is OpenInference with
#: its OTel GenAI dual-write on (each span carries both conventions)
OTEL_CLIENTS = ("openinference", "traceloop", "langsmith", "otel_genai", "openinference_genai")
#: `otel_genai` with its content capture sending log events: client → the content capturing
#: mode (OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT) of opentelemetry-util-genai
EVENT_CLIENTS = {"otel_genai_event_only": "EVENT_ONLY",
                 "otel_genai_span_and_event": "SPAN_AND_EVENT"}
CLIENTS = (*OTEL_CLIENTS, *EVENT_CLIENTS, "cozeloop_python")
WORKSPACE_ID = "7480000000000000001"
TOKEN = "pat_dummy_offline_token"


def capture_dir(instr: str, shape: str, mode: str) -> Path:
    return FIXTURES / instr / f"{shape}.{script.SHAPES[shape]['graph']}.{mode}"


def transport(instr: str, shape: str, mode: str) -> str:
    """"http" or "grpc": how a capture exports. The event clients alternate by shape and mode,
    and take opposite transports from each other, so each shape goes over both transports in
    each content mode, and each shape and mode over both across the two content modes."""
    if instr not in EVENT_CLIENTS:
        return "http"
    flip = list(script.SHAPES).index(shape) + (mode == "invoke") + list(EVENT_CLIENTS).index(instr)
    return "grpc" if flip % 2 else "http"


def _exporters(endpoint: str, grpc_transport: bool) -> tuple[Any, Any]:
    """The OTLP span and log exporters to `endpoint`, gzip-compressed, over HTTP or gRPC."""
    if grpc_transport:
        import grpc
        from opentelemetry.exporter.otlp.proto.grpc._log_exporter import OTLPLogExporter
        from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter

        options: dict[str, Any] = {"endpoint": endpoint, "insecure": True,
                                   "compression": grpc.Compression.Gzip}
        return OTLPSpanExporter(**options), OTLPLogExporter(**options)
    from opentelemetry.exporter.otlp.proto.http import Compression
    from opentelemetry.exporter.otlp.proto.http._log_exporter import (
        OTLPLogExporter as HttpLogExporter,
    )
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import (
        OTLPSpanExporter as HttpSpanExporter,
    )

    return (HttpSpanExporter(endpoint=endpoint + "/v1/traces", compression=Compression.Gzip),
            HttpLogExporter(endpoint=endpoint + "/v1/logs", compression=Compression.Gzip))


def _logger_provider(resource: Any, exporter: Any) -> Any:
    """A LoggerProvider exporting through `exporter`, set as the global one: util-genai's
    handler takes the global provider when the instrumentation is given none."""
    from opentelemetry._logs import set_logger_provider
    from opentelemetry.sdk._logs import LoggerProvider
    from opentelemetry.sdk._logs.export import BatchLogRecordProcessor

    provider = LoggerProvider(resource=resource)
    provider.add_log_record_processor(BatchLogRecordProcessor(exporter))
    set_logger_provider(provider)
    return provider


def _otel_provider(name: str, endpoint: str, seed: int, grpc_transport: bool = False
                   ) -> tuple[Any, Any]:
    """The global tracer provider (and, for an event client, the global logger provider, else
    None) exporting to `endpoint`."""
    from opentelemetry import trace
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor
    from opentelemetry.sdk.trace.id_generator import IdGenerator

    class SeededIdGenerator(IdGenerator):
        def __init__(self) -> None:
            self._random = random.Random(seed)

        def generate_span_id(self) -> int:
            return self._random.getrandbits(64) or 1

        def generate_trace_id(self) -> int:
            return self._random.getrandbits(128) or 1

    resource = Resource.create({"service.name": f"capture-{name}", "service.version": "0.0.1",
                                "deployment.environment": "offline-test"})
    provider = TracerProvider(resource=resource, id_generator=SeededIdGenerator())
    span_exporter, log_exporter = _exporters(endpoint, grpc_transport)
    provider.add_span_processor(BatchSpanProcessor(span_exporter))
    trace.set_tracer_provider(provider)
    logs = _logger_provider(resource, log_exporter) if name in EVENT_CLIENTS else None
    return provider, logs


def _instrument(name: str, provider: Any, endpoint: str) -> None:
    if name == "openinference":
        from openinference.instrumentation.langchain import LangChainInstrumentor

        LangChainInstrumentor().instrument(tracer_provider=provider)
    elif name == "openinference_genai":
        # TraceConfig.enable_genai_semconv (env OPENINFERENCE_ENABLE_GENAI_SEMCONV): at the end
        # of each span, OpenInference adds the gen_ai.* attributes its own ones map to
        from openinference.instrumentation import TraceConfig
        from openinference.instrumentation.langchain import LangChainInstrumentor

        LangChainInstrumentor().instrument(tracer_provider=provider,
                                           config=TraceConfig(enable_genai_semconv=True))
    elif name == "otel_genai" or name in EVENT_CLIENTS:
        # message content on the spans (as conversation.py), or as log events, in the current
        # GenAI conventions
        os.environ["OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"] = EVENT_CLIENTS.get(
            name, "SPAN_ONLY")
        os.environ["OTEL_SEMCONV_STABILITY_OPT_IN"] = "gen_ai_latest_experimental"
        from opentelemetry.instrumentation.genai.langchain import (
            LangChainInstrumentor as GenAiInstrumentor,
        )

        GenAiInstrumentor().instrument(tracer_provider=provider)
    elif name == "traceloop":
        os.environ["TRACELOOP_TRACE_CONTENT"] = "true"
        from opentelemetry.instrumentation.langchain import LangchainInstrumentor

        LangchainInstrumentor().instrument(tracer_provider=provider)
    else:  # langsmith: LangChainTracer → OTel exporter on the global provider, nothing else
        os.environ.update({"LANGSMITH_TRACING": "true", "LANGSMITH_OTEL_ENABLED": "true",
                           "LANGSMITH_OTEL_ONLY": "true", "LANGSMITH_API_KEY": "lsv2_dummy_offline",
                           "LANGSMITH_PROJECT": "trajhub-capture",
                           # anything not sent over OTel would reach the receiver, not the internet
                           "LANGSMITH_ENDPOINT": endpoint})


def _run(shape: str, stream: bool, callbacks: list[Any] | None = None) -> None:
    graph = agents.build(shape)
    try:
        out = agents.run(graph, shape, stream, callbacks)
        print("final answer:", out["messages"][-1].content)
    except Exception as e:  # the run_error shape
        print("run raised:", type(e).__name__, e)


def record(instr: str, outdir: Path, seed: int, run: Callable[[list[Any] | None], object],
           what: str, cozeloop_tags: dict[str, str] | None = None, via: str = "http") -> None:
    """Empty `outdir`, then call `run` while `instr` sends the spans of what it runs to a
    receiver saving into `outdir` (`via` "http" or, for an OTel client, "grpc"). `run` gets the
    LangChain callbacks to pass: the cozeloop-python callback's handler (with `cozeloop_tags`),
    or None for an OpenTelemetry instrumentation. Raises SystemExit, naming `what`, when nothing
    was sent."""
    from tests.capture.grpc_receiver import GrpcReceiver
    from tests.capture.receiver import Receiver

    shutil.rmtree(outdir, ignore_errors=True)
    with GrpcReceiver(outdir, gzip_bodies=True) if via == "grpc" else Receiver(outdir) as receiver:
        if instr == "cozeloop_python":
            import cozeloop
            from cozeloop.integration.langchain.trace_callback import LoopTracer

            client = cozeloop.new_client(api_base_url=receiver.endpoint,
                                         workspace_id=WORKSPACE_ID, api_token=TOKEN)
            tags = {"tags": cozeloop_tags} if cozeloop_tags else {}
            run([LoopTracer.get_callback_handler(client, **tags)])
            client.flush()
            time.sleep(0.5)
            client.close()
        else:
            provider, logs = _otel_provider(instr, receiver.endpoint, seed, via == "grpc")
            _instrument(instr, provider, receiver.endpoint)
            run(None)
            if instr == "langsmith":  # its tracer hands runs to a background thread
                from langchain_core.tracers.langchain import wait_for_all_tracers

                wait_for_all_tracers()
                time.sleep(1.0)
            provider.force_flush()
            provider.shutdown()
            if logs is not None:
                logs.force_flush()
                logs.shutdown()
        time.sleep(0.3)
    if not any(outdir.glob(f"{via}_*.bin")):
        raise SystemExit(f"{instr} {what}: nothing was sent")


def summary(outdir: Path, root: Path) -> str:
    """What a capture saved: its folder (from `root`), its requests and their bytes."""
    files = sorted([*outdir.glob("http_*.bin"), *outdir.glob("grpc_*.bin")])
    return (f"{outdir.relative_to(root)}: {len(files)} requests, "
            f"{sum(f.stat().st_size for f in files)} bytes")


def capture(instr: str, shape: str, mode: str) -> Path:
    outdir = capture_dir(instr, shape, mode)
    # cozeloop Python records no thread or session of its own: an interrupted thread's runs are
    # tagged with it as conversation.py tags its turns, so the resumed run is the next turn of
    # the interrupted one's session (the other shapes are one run each and stay untagged)
    tags = ({"thread_id": script.THREAD_ID, "user_id": script.USER_ID}
            if shape in script.INTERRUPT_SHAPES else None)
    record(instr, outdir, zlib.crc32(f"{instr}/{outdir.name}".encode()),
           lambda callbacks: _run(shape, mode == "stream", callbacks), f"{shape} {mode}",
           tags, via=transport(instr, shape, mode))
    return outdir


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--instr", required=True, choices=CLIENTS)
    parser.add_argument("--shape", required=True, choices=sorted(script.SHAPES))
    parser.add_argument("--mode", required=True, choices=["stream", "invoke"])
    args = parser.parse_args()
    print(summary(capture(args.instr, args.shape, args.mode), FIXTURES))
    return 0


if __name__ == "__main__":
    sys.exit(main())
