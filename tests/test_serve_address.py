"""`trajhub serve` says where the web UI is once it is ready: a person starting it
reads the address to open, right after the machine-readable ready line."""

from __future__ import annotations

import re
from pathlib import Path

import httpx

from tests.harness import ServerProcess, TestDatabase


def test_serve_prints_the_web_ui_address_when_ready(database: TestDatabase,
                                                    tmp_path: Path) -> None:
    server = ServerProcess.start(database.url, tmp_path)
    try:
        assert server.process.stdout is not None
        line = server.process.stdout.readline().strip()
        # the harness asks for port 0 on the default host: the address names the real port
        assert line == f"trajhub: web UI at http://127.0.0.1:{server.http_port}/"
        address = re.sub(r"^trajhub: web UI at ", "", line)
        page = httpx.get(address)
        assert page.status_code == 200 and "<title>trajhub</title>" in page.text
    finally:
        server.stop()
