"""The instrumentation scope a span or a log record came with, as the REST API serves it."""

from __future__ import annotations

from pydantic import BaseModel


class SpanScope(BaseModel):
    name: str
    version: str
