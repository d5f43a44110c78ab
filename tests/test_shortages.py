"""What the database lacks, told apart from a bug: each PostgreSQL resource error is a 503 /
UNAVAILABLE that says so in words (never PostgreSQL's own text), and the main process's record
of it (/readyz, /metrics, the log)."""

from __future__ import annotations

import errno
import pickle

import asyncpg
import grpc
import pytest

from trajhub.service import shortages
from trajhub.service.errors import DatabaseUnavailable, ingest_error
from trajhub.storage.database import is_transient, shortage, unavailable_reason

pytestmark = pytest.mark.unit

DISK_TEXT = 'could not extend file "base/5/16684": No space left on device'


@pytest.mark.parametrize(("error", "words"), [
    (asyncpg.DiskFullError(DISK_TEXT), "disk full"),                    # 53100
    (asyncpg.OutOfMemoryError("out of memory"), "out of memory"),        # 53200
    (asyncpg.TooManyConnectionsError("sorry, too many clients"), "too many connections"),
    (asyncpg.ConfigurationLimitExceededError("limit"), "configuration limit exceeded"),
    (asyncpg.InsufficientResourcesError("no"), "insufficient resources"),  # 53000
    # after a crash restart on a full disk, every new connection
    (asyncpg.InternalServerError("could not write init file"), "disk full"),
    # a WAL write that found no room, as the connection it broke reports it
    (asyncpg.ConnectionDoesNotExistError(
        "connection was closed in the middle of operation: could not write to log file "
        "000000010000000000000003: No space left on device"), "disk full"),
    (OSError(errno.ENOSPC, "No space left on device"), "disk full"),
])
def test_each_resource_error_is_a_transient_shortage_named_in_words(
        error: BaseException, words: str) -> None:
    assert shortage(error) == words
    assert is_transient(error)



SECRET = "value 'alice@example.com' in row"


@pytest.mark.parametrize(("error", "words"), [
    (asyncpg.CannotConnectNowError(SECRET), "the database is starting up or shutting down"),
    (asyncpg.AdminShutdownError(SECRET), "the database is shutting down"),
    (asyncpg.SerializationError(SECRET), "a concurrent write conflicted"),
    (asyncpg.QueryCanceledError(SECRET), "the database did not answer in time"),
    (TimeoutError(SECRET), "the database did not answer in time"),
    (asyncpg.ConnectionDoesNotExistError(SECRET), "the connection to the database failed"),
    (asyncpg.InterfaceError(SECRET), "the connection to the database was lost"),
    (ConnectionRefusedError(errno.ECONNREFUSED, SECRET), "the database cannot be reached"),
])
def test_a_transient_fault_answers_in_words_and_logs_postgresql_text(
        error: BaseException, words: str) -> None:
    assert unavailable_reason(error) == words
    answered = ingest_error(error)
    assert isinstance(answered, DatabaseUnavailable)
    assert answered.message == f"database unavailable: {words}"
    assert SECRET not in answered.message
    assert SECRET in answered.cause  # for the log


def test_other_internal_errors_stay_bugs() -> None:
    error = asyncpg.InternalServerError("cache lookup failed for relation 1234")
    assert shortage(error) is None
    assert not is_transient(error)
    answered = ingest_error(error)
    assert answered.http_status == 500 and answered.grpc_code == grpc.StatusCode.INTERNAL


def test_a_full_disk_answers_503_unavailable_without_postgresql_text() -> None:
    answered = ingest_error(asyncpg.DiskFullError(DISK_TEXT))
    assert isinstance(answered, DatabaseUnavailable)
    assert (answered.http_status, answered.grpc_code) == (503, grpc.StatusCode.UNAVAILABLE)
    assert answered.message == "database unavailable: disk full"
    assert answered.retry_after_s > 0
    assert DISK_TEXT in answered.cause  # for the main process's log
    # it crosses from the ingest worker to the main process whole
    back = pickle.loads(pickle.dumps(answered))
    assert (back.message, back.shortage, back.cause) == (answered.message, "disk full",
                                                         answered.cause)


def test_readyz_reports_a_shortage_until_a_write_succeeds_or_it_is_old(
        monkeypatch: pytest.MonkeyPatch) -> None:
    now = [1000.0]
    monkeypatch.setattr(shortages.time, "monotonic", lambda: now[0])
    seen = shortages.Shortages()
    assert seen.current() is None
    seen.seen("disk full", "ingest", DISK_TEXT)
    now[0] += 2
    assert seen.current() == "database disk full: writes failed 2 s ago"
    seen.wrote()
    assert seen.current() is None
    seen.seen("disk full", "api", DISK_TEXT)
    now[0] += shortages.SEEN_FOR_SECONDS
    assert seen.current() is None

