"""Ingest failures, each with the HTTP status and gRPC code the OTLP spec gives it.

They cross the process boundary between the receivers and the ingest workers, so each keeps
its constructor arguments in `args` and pickles as itself.
"""

from __future__ import annotations

import grpc


class IngestError(Exception):
    http_status = 500
    grpc_code = grpc.StatusCode.INTERNAL

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class BadRequest(IngestError):
    """Undecodable or permanently invalid data: the client must not retry."""

    http_status = 400
    grpc_code = grpc.StatusCode.INVALID_ARGUMENT


class UnsupportedMediaType(IngestError):
    http_status = 415
    grpc_code = grpc.StatusCode.INVALID_ARGUMENT


class PayloadTooLarge(IngestError):
    """The (decompressed) request exceeds the configured limit."""

    http_status = 413
    grpc_code = grpc.StatusCode.RESOURCE_EXHAUSTED


class Unavailable(IngestError):
    """A transient fault (database unreachable, ingestion saturated): retry after a while."""

    http_status = 503
    grpc_code = grpc.StatusCode.UNAVAILABLE

    def __init__(self, message: str, retry_after_s: int = 1) -> None:
        super().__init__(message)
        self.args = (message, retry_after_s)
        self.retry_after_s = retry_after_s
