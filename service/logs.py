"""One log format for trajhub, its worker processes and uvicorn: `text` (one human-readable
line per record) or `json` (one JSON object per line, for log collectors).

Every process calls `configure()` once; uvicorn is started with `log_config=None`, so its
loggers have no handlers of their own and their records reach the same root handler. Fields
passed with `extra={"fields": {...}}` (the access log's method, path, status, …) become keys of
the JSON object, or `key=value` pairs after the text message.

A record is one line in either format, whatever its fields hold: a request path, a header or
an exception message comes from the client and may carry a newline that would otherwise forge a
second record, or a terminal escape sequence. The text format writes control characters (C0,
DEL, C1) and the Unicode line and paragraph separators U+2028/U+2029 as escapes (`\\n`,
`\\x1b`, `\\u2028`) and a backslash as `\\\\`, so that the escaped form reads back
unambiguously; an exception's traceback stays on its record's line the same way. JSON encoding
already escapes C0; DEL, C1 and U+2028/2029 are valid raw in a JSON string, but line-oriented
readers (Python's `str.splitlines`, older JavaScript) break lines at some of them, so the JSON
format writes them as `\\u` escapes too.
"""

from __future__ import annotations

import logging
import sys
from datetime import UTC, datetime
from typing import Any

import orjson

FORMATS = ("text", "json")

_configured: dict[str, int | str] = {"level": logging.INFO, "format": "text"}
TEXT_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"


def _control_escapes() -> dict[int, str]:
    table = {code: f"\\x{code:02x}" for code in [*range(0x20), 0x7F, *range(0x80, 0xA0)]}
    table.update({ord("\n"): "\\n", ord("\r"): "\\r", ord("\t"): "\\t",
                  0x2028: "\\u2028", 0x2029: "\\u2029", ord("\\"): "\\\\"})
    return table


#: `str.translate` table of the text format: control characters and line separators as escapes
TEXT_ESCAPES = _control_escapes()
#: `str.translate` table of the JSON format: what JSON encoding leaves raw, as `\\u` escapes
#: (only valid inside a JSON string, where these characters can only occur)
JSON_ESCAPES = {code: f"\\u{code:04x}" for code in [0x7F, *range(0x80, 0xA0), 0x2028, 0x2029]}


def escape_text(value: str) -> str:
    """`value` on one line, control characters escaped (the text format)."""
    return value.translate(TEXT_ESCAPES)


def _fields(record: logging.LogRecord) -> dict[str, Any]:
    fields = getattr(record, "fields", None)
    return fields if isinstance(fields, dict) else {}


class TextFormatter(logging.Formatter):
    def __init__(self) -> None:
        super().__init__(TEXT_FORMAT)

    def format(self, record: logging.LogRecord) -> str:
        # the whole record, escaped: message, fields, and the traceback `super()` appends
        line = super().format(record)
        extra = " ".join(f"{key}={value}" for key, value in _fields(record).items()
                         if value is not None)
        return escape_text(f"{line} {extra}" if extra else line)


class JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        entry: dict[str, Any] = {
            "time": datetime.fromtimestamp(record.created, UTC).isoformat(
                timespec="milliseconds").replace("+00:00", "Z"),
            "level": record.levelname.lower(),
            "logger": record.name,
            "message": record.getMessage(),
        }
        entry.update(_fields(record))
        if record.exc_info:
            entry["exception"] = self.formatException(record.exc_info)
        return orjson.dumps(entry, default=str).decode().translate(JSON_ESCAPES)


def configure(level: str | int, log_format: str = "text") -> None:
    """Route every record of this process (uvicorn's included) to stderr in `log_format`."""
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(JsonFormatter() if log_format == "json" else TextFormatter())
    root = logging.getLogger()
    for old in list(root.handlers):
        root.removeHandler(old)
    root.addHandler(handler)
    root.setLevel(level.upper() if isinstance(level, str) else level)
    _configured.update(level=root.level, format=log_format)
    for name in ("uvicorn", "uvicorn.error", "uvicorn.access"):
        uvicorn_logger = logging.getLogger(name)
        uvicorn_logger.handlers.clear()
        uvicorn_logger.propagate = True


def settings() -> tuple[int, str]:
    """(level, format) this process was configured with: what a spawned worker process passes
    to its own `configure()`."""
    return int(_configured["level"]), str(_configured["format"])


__all__ = ["FORMATS", "JsonFormatter", "TextFormatter", "configure", "escape_text", "settings"]
