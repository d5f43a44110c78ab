"""An OpenAI-compatible chat server on its own port, standing in for an LLM judge.

trajhub's judges (evaluators/judge_protocol.py) POST a chat completion request to
`<endpoint>/chat/completions`; this answers from a function of the request body, so each test
scripts its own verdicts, failures and delays. Every request is recorded with its headers
(lower-cased) and the time it came.
"""

from __future__ import annotations

import contextlib
import json
import threading
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

#: (headers, body) of one request
Request = tuple[dict[str, str], dict[str, Any]]
#: the request body → (status, content): 200 answers a chat completion whose message is
#: `content` (a text, or JSON-encoded); any other status sends `{"error": content}`
Answer = Callable[[dict[str, Any]], tuple[int, Any]]


def completion(model: str, content: str) -> dict[str, Any]:
    return {"id": "chatcmpl-1", "object": "chat.completion", "model": model,
            "choices": [{"index": 0, "finish_reason": "stop",
                         "message": {"role": "assistant", "content": content}}]}


class FakeJudge:
    """Answers POST /v1/chat/completions with `answer`, after `delay` seconds; other paths 404."""

    def __init__(self, answer: Answer, delay: float = 0.0) -> None:
        self.requests: list[Request] = []
        self.times: list[float] = []
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["content-length"])))
                outer.requests.append(({k.lower(): v for k, v in self.headers.items()}, body))
                outer.times.append(time.monotonic())
                if self.path != "/v1/chat/completions":
                    self._send(404, {})
                    return
                status, content = answer(body)
                time.sleep(delay)
                if status != 200:
                    self._send(status, {"error": content})
                    return
                text = content if isinstance(content, str) else json.dumps(content)
                self._send(200, completion(body["model"], text))

            def _send(self, status: int, document: dict[str, Any]) -> None:
                payload = json.dumps(document).encode()
                self.send_response(status)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(payload)))
                self.end_headers()
                # the server asking may have been killed meanwhile
                with contextlib.suppress(BrokenPipeError, ConnectionResetError):
                    self.wfile.write(payload)

            def log_message(self, *args: Any) -> None:
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"

    def close(self) -> None:
        self.httpd.shutdown()
