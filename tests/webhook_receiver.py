"""A local webhook receiver for the alert tests: a small threaded HTTP server that records each
POST (its headers and body) and answers with the status its script says, optionally holding an
answer back until the test lets it go (to kill a server mid-delivery)."""

from __future__ import annotations

import hashlib
import hmac
import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass(frozen=True)
class Received:
    path: str
    headers: dict[str, str]
    body: bytes

    @property
    def json(self) -> Any:
        return json.loads(self.body)

    def signed_by(self, secret: str) -> bool:
        """The body's signature header is the HMAC-SHA256 of the body with `secret`."""
        expected = "sha256=" + hmac.new(secret.encode(), self.body, hashlib.sha256).hexdigest()
        return hmac.compare_digest(expected, self.headers.get("x-trajhub-signature-256", ""))


@dataclass
class Receiver:
    port: int = 0
    received: list[Received] = field(default_factory=list)
    #: the statuses of the next answers, in order (then 200)
    statuses: list[int] = field(default_factory=list)
    #: while set, answers wait until `release` is set (or 60 s)
    hold: threading.Event = field(default_factory=threading.Event)
    release: threading.Event = field(default_factory=threading.Event)
    lock: threading.Lock = field(default_factory=threading.Lock)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/hook"

    def snapshot(self) -> list[Received]:
        with self.lock:
            return list(self.received)


def _handler(receiver: Receiver) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers.get("content-length") or 0))
            with receiver.lock:
                receiver.received.append(Received(
                    self.path, {k.lower(): v for k, v in self.headers.items()}, body))
                status = receiver.statuses.pop(0) if receiver.statuses else 200
            if receiver.hold.is_set():
                receiver.release.wait(60)
            self.send_response(status)
            self.send_header("content-length", "0")
            self.end_headers()

        def log_message(self, format: str, *args: Any) -> None:
            pass

    return Handler


@contextmanager
def webhook_receiver() -> Iterator[Receiver]:
    receiver = Receiver()
    server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(receiver))
    server.daemon_threads = True
    receiver.port = server.server_address[1]
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield receiver
    finally:
        receiver.release.set()
        server.shutdown()
        server.server_close()
        thread.join(5)
