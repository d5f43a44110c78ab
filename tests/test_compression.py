"""What trajhub stores compressed (storage/compression.py) reads back as the bytes it was given,
whichever form a row was written in."""

from __future__ import annotations

import os
import zlib

import orjson
from hypothesis import given
from hypothesis import strategies as st
from opentelemetry.proto.trace.v1.trace_pb2 import Span

from trajhub.storage.compression import ZSTD_MAGIC, compress, decompress
from trajhub.storage.stored_documents import pack, unpack


@given(st.binary(max_size=5000))
def test_compressed_bytes_come_back_unchanged(data: bytes) -> None:
    stored = compress(data)
    assert stored[:4] == ZSTD_MAGIC
    assert decompress(stored) == data


def test_a_span_of_prose_is_stored_in_about_half_its_bytes() -> None:
    words = [os.urandom(3).hex() for _ in range(400)]
    text = " ".join(words[i % 400] for i in range(0, 4000, 7))[:1000]
    span = Span(trace_id=os.urandom(16), span_id=os.urandom(8), name="llm.step")
    span.attributes.add(key="input.value").value.string_value = text
    span.attributes.add(key="output.value").value.string_value = text[::-1]
    body = span.SerializeToString()
    assert len(compress(body)) < 0.7 * len(body)


def test_rows_stored_uncompressed_read_back_as_they_are() -> None:
    otlp = Span(trace_id=b"\x01" * 16, span_id=b"\x02" * 8, name="x").SerializeToString()
    native = orjson.dumps({"span_id": "1", "trace_id": "2"})
    for plain in (otlp, native, b""):
        assert decompress(plain) == plain
    # what a plain stored value can begin with is never zstd's magic number
    assert otlp[0] == 0x0A and native[:1] == b"{"


def test_documents_of_migration_0020_zlib_and_text_read_back() -> None:
    document = '{"steps": [{"kind": "model", "name": "gpt-4o"}]}'
    assert unpack(zlib.compress(document.encode(), 1)) == document
    assert unpack(document.encode()) == document
    assert unpack(document) == document
    assert unpack(pack(document)) == document
    assert pack(None) is None and unpack(None) is None
