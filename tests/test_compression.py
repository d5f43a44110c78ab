"""What trajhub stores compressed (storage/compression.py) reads back as the bytes it was given,
whichever form a row was written in."""

from __future__ import annotations

import os
import zlib

import orjson
from hypothesis import given
from hypothesis import strategies as st
from opentelemetry.proto.trace.v1.trace_pb2 import Span

from trajhub.storage.compression import (
    ZSTD_MAGIC,
    compress,
    compress_pieces,
    decompress,
    decompress_pieces,
    decompressed_size,
)
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


def test_a_large_value_is_compressed_into_a_frame_of_its_own_size() -> None:
    """python-zstandard allocates a frame at zstd's bound for its input; a large frame is copied
    to its size, so that keeping it does not keep the bound (checked with tracemalloc: the
    frame of a ~1 MiB document must not hold more than a few times its length)."""
    import tracemalloc

    data = b"step " * 300_000
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        stored = compress(data)
        held = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    assert decompress(stored) == data
    assert held < 4 * len(stored) + 4096, (held, len(stored))


@given(st.lists(st.binary(max_size=3000), max_size=8))
def test_pieces_compressed_as_they_come_are_the_whole_value(pieces: list[bytes]) -> None:
    whole = b"".join(pieces)
    stored = compress_pieces(iter(pieces), len(whole))
    assert decompress(stored) == whole
    assert decompressed_size(stored) == len(whole)


def test_a_value_decompressed_in_pieces_is_the_whole_value() -> None:
    data = os.urandom(1000) * 700  # 700,000 bytes: several pieces of 65,536
    pieces = list(decompress_pieces(compress(data), piece=65_536))
    assert len(pieces) > 1 and max(map(len, pieces)) <= 65_536
    assert b"".join(pieces) == data
    # the other stored forms come whole
    document = b'{"id": "t"}'
    assert list(decompress_pieces(document)) == [document]
    assert list(decompress_pieces(zlib.compress(document))) == [document]
    assert decompressed_size(zlib.compress(document)) is None
