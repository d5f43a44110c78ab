"""One log format for trajhub, its worker processes and uvicorn: `text` (one human-readable
line per record) or `json` (one JSON object per line, for log collectors).

Every process calls `configure()` once; uvicorn is started with `log_config=None`, so its
loggers have no handlers of their own and their records reach the same root handler. Fields
passed with `extra={"fields": {...}}` (the access log's method, path, status, …) become keys of
the JSON object, or `key=value` pairs after the text message.
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


def _fields(record: logging.LogRecord) -> dict[str, Any]:
    fields = getattr(record, "fields", None)
    return fields if isinstance(fields, dict) else {}


class TextFormatter(logging.Formatter):
    def __init__(self) -> None:
        super().__init__(TEXT_FORMAT)

    def format(self, record: logging.LogRecord) -> str:
        line = super().format(record)
        extra = " ".join(f"{key}={value}" for key, value in _fields(record).items()
                         if value is not None)
        return f"{line} {extra}" if extra else line


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
        return orjson.dumps(entry, default=str).decode()


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


__all__ = ["FORMATS", "JsonFormatter", "TextFormatter", "configure", "settings"]
