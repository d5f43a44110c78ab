"""Ingest failures, and the one mapping from a failure to its HTTP status and gRPC code.

Each error class carries the HTTP status and gRPC code the OTLP spec gives it; `ingest_error`
turns any other exception (a database fault, a bug) into one of them, so both transports answer
the same thing for the same failure. The errors cross the process boundary between the
receivers and the ingest workers, so each keeps its constructor arguments in `args` and pickles
as itself.
"""

from __future__ import annotations

import logging

import grpc
from google.protobuf import any_pb2, duration_pb2
from google.rpc import error_details_pb2, status_pb2
from grpc_status import rpc_status

from trajhub.storage.database import is_transient, shortage, unavailable_reason

log = logging.getLogger("trajhub.errors")


class IngestError(Exception):
    """A failure on our side that a retry will not fix (a bug): logged, 500 / INTERNAL. Each
    subclass sets its answer in both transports, the HTTP status and the gRPC code, together."""

    http_status, grpc_code = 500, grpc.StatusCode.INTERNAL

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class BadRequest(IngestError):
    """Undecodable or permanently invalid data: the client must not retry."""

    http_status, grpc_code = 400, grpc.StatusCode.INVALID_ARGUMENT


class UnsupportedMediaType(IngestError):
    http_status, grpc_code = 415, grpc.StatusCode.INVALID_ARGUMENT


class Unauthenticated(IngestError):
    """No API key, or one that is not valid (never issued, or revoked)."""

    http_status, grpc_code = 401, grpc.StatusCode.UNAUTHENTICATED


class Forbidden(IngestError):
    """A request its API key does not allow (another project, too small a scope), or a browser
    request from an origin that is not allowed (TRAJHUB_CORS_ORIGINS)."""

    http_status, grpc_code = 403, grpc.StatusCode.PERMISSION_DENIED


class PayloadTooLarge(IngestError):
    """The (decompressed) request exceeds the configured limit."""

    http_status, grpc_code = 413, grpc.StatusCode.RESOURCE_EXHAUSTED


class Unavailable(IngestError):
    """A transient fault (database unreachable, ingestion saturated): retry after a while."""

    http_status, grpc_code = 503, grpc.StatusCode.UNAVAILABLE

    def __init__(self, message: str, retry_after_s: int = 1) -> None:
        super().__init__(message)
        self.args = (message, retry_after_s)
        self.retry_after_s = retry_after_s


class DatabaseUnavailable(Unavailable):
    """Unavailable because the database is (counted apart in the metrics); `shortage` says
    what it lacks when it lacks something ("disk full", storage/database.py's `shortage`), and
    `cause` the database's own words, for the log."""

    def __init__(self, message: str, retry_after_s: int = 1, shortage: str | None = None,
                 cause: str = "") -> None:
        super().__init__(message, retry_after_s)
        self.args = (message, retry_after_s, shortage, cause)
        self.shortage = shortage
        self.cause = cause


def ingest_error(error: BaseException) -> IngestError:
    """Any exception as the IngestError both transports answer with: a transient database
    fault is Unavailable; anything unforeseen is logged and becomes a 500 / INTERNAL."""
    if isinstance(error, IngestError):
        return error
    if is_transient(error):
        # the answer says what kind of fault it was; PostgreSQL's own text, which can quote
        # stored values, goes to the log only (service/shortages.py, the ingest worker)
        lack = shortage(error)
        return DatabaseUnavailable(f"database unavailable: {unavailable_reason(error)}",
                                   retry_after_s=2 if lack is None else 5, shortage=lack,
                                   cause=str(error))
    log.error("internal error: %r", error, exc_info=error)
    return IngestError(f"internal error: {type(error).__name__}")


def retry_headers(error: IngestError) -> dict[str, str]:
    """HTTP headers for the answer: Retry-After on 503, WWW-Authenticate on 401."""
    if isinstance(error, Unavailable):
        return {"Retry-After": str(error.retry_after_s)}
    if isinstance(error, Unauthenticated):
        return {"WWW-Authenticate": "Bearer"}
    return {}


def rpc_status_proto(error: IngestError) -> status_pb2.Status:
    """The google.rpc.Status both transports carry (OTLP/HTTP in its body, gRPC in trailers)."""
    status = status_pb2.Status(code=error.grpc_code.value[0], message=error.message)
    if isinstance(error, Unavailable):
        # RetryInfo tells OTLP exporters how long to back off (docs/otlp.md A6 #39, #43)
        detail = any_pb2.Any()
        detail.Pack(error_details_pb2.RetryInfo(
            retry_delay=duration_pb2.Duration(seconds=error.retry_after_s)))
        status.details.append(detail)
    return status


def grpc_status(error: IngestError) -> grpc.Status:
    return rpc_status.to_status(rpc_status_proto(error))
