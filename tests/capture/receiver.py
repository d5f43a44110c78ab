"""A local HTTP receiver that saves every request exactly as sent, in the real-clients layout.

Each POST becomes `http_NNN_<path>.bin` (the body, byte for byte, still compressed if it was)
and `http_NNN_<path>.json` (method, path, headers, body length), the layout tests/captures.py
replays. It answers like the services the clients expect: an empty OTLP response for OTLP paths
(`/v1/traces`, `/v1/logs`; `{}` for OTLP/JSON), `{"code": 0, "msg": "success", "data": {}}` for
anything else (Coze Loop).
"""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any


class CaptureFiles:
    """Where a receiver saves each request: `<transport>_NNN_<name>.bin` (the body, byte for byte)
    and `<transport>_NNN_<name>.json` (what else identifies the request, and the body's length),
    NNN counting the requests of every thread in the order they were saved."""

    def __init__(self, outdir: Path) -> None:
        outdir.mkdir(parents=True, exist_ok=True)
        self.outdir = outdir
        self.count = 0
        self._lock = threading.Lock()

    def save(self, transport: str, name: str, meta: dict[str, Any], body: bytes) -> None:
        with self._lock:
            self.count += 1
            base = self.outdir / f"{transport}_{self.count:03d}_{name}"
            base.with_suffix(".bin").write_bytes(body)
            meta = {**meta, "body_len": len(body)}
            base.with_suffix(".json").write_text(json.dumps(meta, indent=2) + "\n")


class _Handler(BaseHTTPRequestHandler):
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def _body(self) -> bytes:
        length = int(self.headers.get("Content-Length") or 0)
        if length:
            return self.rfile.read(length)
        if (self.headers.get("Transfer-Encoding") or "").lower() != "chunked":
            return b""
        body = b""
        while size := int(self.rfile.readline().strip() or b"0", 16):
            body += self.rfile.read(size)
            self.rfile.readline()
        self.rfile.readline()
        return body

    def do_POST(self) -> None:
        body = self._body()
        self.server.save(self.command, self.path, dict(self.headers.items()), body)
        path = self.path.lower()
        if path.startswith(("/v1/traces", "/v1/logs")) or "opentelemetry" in path:
            json_request = "json" in (self.headers.get("Content-Type") or "").lower()
            out, content_type = ((b"{}", "application/json") if json_request
                                 else (b"", "application/x-protobuf"))
        else:
            out = json.dumps({"code": 0, "msg": "success", "data": {}}).encode()
            content_type = "application/json"
        self.send_response(200)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(out)))
        self.end_headers()
        self.wfile.write(out)

    do_PUT = do_POST


class _Server(ThreadingHTTPServer):
    def __init__(self, outdir: Path) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.files = CaptureFiles(outdir)

    def save(self, method: str, path: str, headers: dict[str, str], body: bytes) -> None:
        name = path.split("?")[0].strip("/").replace("/", "_")
        self.files.save("http", name, {"method": method, "path": path, "headers": headers}, body)


class Receiver:
    """`with Receiver(outdir) as r:` … clients post to `r.endpoint` …"""

    def __init__(self, outdir: Path) -> None:
        self._server = _Server(outdir)
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def __enter__(self) -> Receiver:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()
