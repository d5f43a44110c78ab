"""The OTLP signals trajhub receives, as the receivers tell them apart: their gRPC service, the
ingest worker's job kind for each encoding, and the answer to a request. Both transports
(service/ingest/http.py, service/ingest/grpc.py) handle every signal with one code path.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

from google.protobuf.message import Message
from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceResponse
from opentelemetry.proto.collector.metrics.v1.metrics_service_pb2 import (
    ExportMetricsServiceResponse,
)
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceResponse

from trajhub.service.ingest import log_decode
from trajhub.service.ingest.worker import KIND_OTLP_JSON, KIND_OTLP_PROTOBUF, IngestResult


def _partial_success(response: type[Message], rejected_field: str
                     ) -> Callable[[IngestResult], Message]:
    """The answer of a signal whose rejected records its `partial_success` counts in
    `rejected_field`: set only when some were rejected or there is something to say."""
    def answer(result: IngestResult) -> Message:
        message = response()
        if result.rejected or result.error_message:
            partial = message.partial_success  # type: ignore[attr-defined]
            setattr(partial, rejected_field, result.rejected)
            partial.error_message = result.error_message
        return message
    return answer


_traces_response = _partial_success(ExportTraceServiceResponse, "rejected_spans")
_logs_response = _partial_success(ExportLogsServiceResponse, "rejected_log_records")


def _metrics_response(result: IngestResult) -> Message:
    # the data points are counted and dropped, none rejected: an empty answer is success
    return ExportMetricsServiceResponse()


@dataclass(frozen=True)
class Signal:
    #: the gRPC service, e.g. opentelemetry.proto.collector.trace.v1.TraceService
    service: str
    #: the ingest job kind of a body of each encoding (KIND_OTLP_PROTOBUF, KIND_OTLP_JSON)
    kinds: Mapping[str, str]
    #: the Export…ServiceResponse for a request's result
    response: Callable[[IngestResult], Message]

    @property
    def export_path(self) -> str:
        return f"/{self.service}/Export"


TRACES = Signal("opentelemetry.proto.collector.trace.v1.TraceService",
                {KIND_OTLP_PROTOBUF: KIND_OTLP_PROTOBUF, KIND_OTLP_JSON: KIND_OTLP_JSON},
                _traces_response)
LOGS = Signal("opentelemetry.proto.collector.logs.v1.LogsService",
              {KIND_OTLP_PROTOBUF: log_decode.KIND_LOGS_PROTOBUF,
               KIND_OTLP_JSON: log_decode.KIND_LOGS_JSON},
              _logs_response)
METRICS = Signal("opentelemetry.proto.collector.metrics.v1.MetricsService",
                 {KIND_OTLP_PROTOBUF: log_decode.KIND_METRICS_PROTOBUF,
                  KIND_OTLP_JSON: log_decode.KIND_METRICS_JSON},
                 _metrics_response)
SIGNALS = (TRACES, LOGS, METRICS)
