"""An OpenAI-compatible chat server on a port of its own, for clients that need one: POST
`/v1/chat/completions` is answered by a function of the request body; any other path is 404.
`url` is the client's `base_url`. tests/fake_judge.py (an LLM judge's verdicts) and
tests/fake_openai.py (a tool-calling conversation) script the answers."""

from __future__ import annotations

import contextlib
import json
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

#: (status, body, content type) of one answer
Reply = tuple[int, bytes, str]


def json_reply(status: int, document: Any) -> Reply:
    return status, json.dumps(document).encode(), "application/json"


class ChatServer:
    """Serves `respond(body)` on 127.0.0.1 until `close()`; `received(headers, body)` sees each
    request first (headers lower-cased)."""

    def __init__(self, respond: Callable[[dict[str, Any]], Reply]) -> None:
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["content-length"])))
                outer.received({k.lower(): v for k, v in self.headers.items()}, body)
                status, payload, content_type = (
                    respond(body) if self.path == "/v1/chat/completions" else json_reply(404, {}))
                self.send_response(status)
                self.send_header("content-type", content_type)
                self.send_header("content-length", str(len(payload)))
                self.end_headers()
                # the client asking may have been killed meanwhile
                with contextlib.suppress(BrokenPipeError, ConnectionResetError):
                    self.wfile.write(payload)

            def log_message(self, *args: Any) -> None:
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"

    def received(self, headers: dict[str, str], body: dict[str, Any]) -> None:
        """Called with each request before it is answered."""

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
