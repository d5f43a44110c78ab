"""What trajhub stores compressed (storage/compression.py) reads back as the bytes it was given,
whichever form a row was written in."""

from __future__ import annotations

import json
import os
import random
import threading
import zlib

import orjson
import pytest
import zstandard
from hypothesis import given
from hypothesis import strategies as st
from opentelemetry.proto.trace.v1.trace_pb2 import Span

from trajhub.storage import compression, compression_dictionaries
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


def _prose_bodies(count: int, seed: int) -> list[bytes]:
    """Span bodies as an agent's model calls make them: the same attribute keys, system prompt
    and parameters in every span, and a question and answer of words from one vocabulary."""
    rng = random.Random(seed)
    vocabulary = ["".join(rng.choice("bcdfgklmnprstvz") + rng.choice("aeiou")
                          for _ in range(rng.randint(1, 4))) for _ in range(2000)]
    prompt = random.Random(0).choices(vocabulary, k=120)
    bodies = []
    for _ in range(count):
        span = Span(trace_id=rng.randbytes(16), span_id=rng.randbytes(8), name="llm.step")
        for key, value in (
                ("openinference.span.kind", "LLM"), ("llm.model_name", "gpt-4o-2024-08-06"),
                ("llm.invocation_parameters", '{"temperature": 0.2, "max_tokens": 1024}'),
                ("llm.input_messages.0.message.role", "system"),
                ("llm.input_messages.0.message.content", " ".join(prompt)),
                ("llm.input_messages.1.message.role", "user"),
                ("llm.input_messages.1.message.content", " ".join(rng.choices(vocabulary, k=40))),
                ("llm.output_messages.0.message.role", "assistant"),
                ("llm.output_messages.0.message.content",
                 " ".join(rng.choices(vocabulary, k=80)))):
            span.attributes.add(key=key).value.string_value = value
        bodies.append(span.SerializeToString())
    return bodies


@pytest.mark.usefixtures("fresh_dictionaries")
def test_a_body_compressed_with_a_dictionary_is_smaller_names_it_and_needs_it_loaded() -> None:
    training, later = _prose_bodies(2000, 1), _prose_bodies(50, 2)
    compression.collect_samples(True)
    plain = [compression.compress_body(b) for b in training]
    assert compression.samples() == (training, sum(map(len, training)))
    assert all(compression.dictionary_id(f) == 0 for f in plain)

    data = compression_dictionaries.train(training)
    dictionary = compression.register(data)
    compression.use(dictionary)
    compression.collect_samples(False)
    framed = [compression.compress_body(b) for b in later]
    assert {compression.dictionary_id(f) for f in framed} == {dictionary.dict_id()}
    without = zstandard.ZstdCompressor(level=compression.LEVEL)  # a store with no dictionary
    assert sum(map(len, framed)) < 0.9 * sum(len(without.compress(b)) for b in later)
    assert [decompress(f) for f in framed] == later
    assert compression.samples() == ([], 0)

    # another process: the frames name a dictionary it has not loaded; its loader fetches it
    # once, and without one (or when it is not stored) the error says which is missing
    compression._dictionaries.clear()
    compression._local = threading.local()
    with pytest.raises(compression.UnknownDictionary) as missing:
        decompress(framed[0])
    assert missing.value.dictionary_id == dictionary.dict_id()
    fetched: list[int] = []
    compression.set_loader(lambda i: fetched.append(i) or (data if i == dictionary.dict_id()
                                                             else None))
    assert [decompress(f) for f in framed] == later
    assert fetched == [dictionary.dict_id()]
    # frames made before the dictionary still read
    assert decompress(plain[0]) == training[0]


#: what a document holds and its spans do not, the same in every document (a real one: the
#: agent's tool definitions, the keys of its steps)
_TOOLS = [{"name": name, "description": f"{name}: " + " ".join(
    random.Random(name).choices(["returns", "the", "current", "value", "for", "a", "given",
                                 "city", "query", "page", "integer", "sum", "text"], k=60)),
           "parameters": {"type": "object", "properties": {"argument": {"type": "string"}}}}
          for name in ("get_weather", "search_docs", "add", "fetch_url")]


def _prose_documents(count: int, seed: int) -> list[bytes]:
    """Trajectory documents of the bodies' prose: the payloads again, under the document's own
    keys (the shape of normalizers/document.py's output)."""
    rng = random.Random(seed)
    bodies = _prose_bodies(count * 3, seed)
    documents = []
    for n in range(count):
        steps = []
        for body in bodies[3 * n:3 * n + 3]:
            span = Span.FromString(body)
            text = {kv.key: kv.value.string_value for kv in span.attributes}
            steps.append({
                "step_id": rng.randint(1, 10**6), "source": "agent", "kind": "model_call",
                "model_name": text["llm.model_name"], "span_id": span.span_id.hex(),
                "message": {"role": "assistant",
                            "content": text["llm.output_messages.0.message.content"]},
                "input_messages": [{"role": "user", "content":
                                    text["llm.input_messages.1.message.content"]}],
                "metrics": {"prompt_tokens": rng.randint(10, 900),
                            "completion_tokens": rng.randint(10, 300), "cost_usd": None},
                "status": {"code": "ok", "message": None}})
        documents.append(json.dumps({
            "schema_version": "ATIF-v1.4", "session_id": f"s-{rng.getrandbits(64):x}",
            "agent": {"name": "langgraph", "version": "0.2", "tool_definitions": _TOOLS},
            "agent_steps": [{"agent_name": "agent", "steps": steps}],
            "final_metrics": {"total_steps": 3, "total_prompt_tokens": rng.randint(100, 999)},
        }).encode())
    return documents


@pytest.mark.usefixtures("fresh_dictionaries")
def test_documents_compressed_while_sampling_are_kept_in_pieces_that_fit_the_dictionary_to_them(
        ) -> None:
    bodies, documents = _prose_bodies(1000, 3), _prose_documents(150, 4)
    later_bodies, later_documents = _prose_bodies(50, 5), _prose_documents(30, 6)
    compression.collect_samples(True)
    for body in bodies:
        compression.compress_body(body)
    framed = [compression.compress_document(d) for d in documents]
    assert [decompress(f) for f in framed] == documents
    pieces = compression.document_pieces()
    assert b"".join(pieces) == b"".join(documents)
    assert max(map(len, pieces)) == compression.DOCUMENT_PIECE
    compression.collect_samples(False)
    assert compression.document_pieces() == []

    def kept(dictionary: bytes, values: list[bytes]) -> int:
        compressor = zstandard.ZstdCompressor(level=compression.DICTIONARY_LEVEL,
                                              dict_data=zstandard.ZstdCompressionDict(dictionary))
        return sum(len(compressor.compress(v)) for v in values)

    spans_only = compression_dictionaries.train(bodies)
    both = compression_dictionaries.train(bodies + pieces)
    assert kept(both, later_documents) < 0.95 * kept(spans_only, later_documents)
    assert kept(both, later_bodies) < 1.03 * kept(spans_only, later_bodies)


@pytest.mark.usefixtures("fresh_dictionaries")
def test_with_a_dictionary_a_document_is_framed_at_the_document_level_and_a_body_at_its_own(
        ) -> None:
    bodies, documents = _prose_bodies(1000, 7), _prose_documents(20, 8)
    dictionary = compression.register(compression_dictionaries.train(bodies))
    compression.use(dictionary)

    def framed_at(level: int, value: bytes) -> bytes:
        tables = zstandard.ZstdCompressionDict(dictionary.as_bytes())
        tables.precompute_compress(level=level)
        return zstandard.ZstdCompressor(level=level, dict_data=tables).compress(value)

    assert compression.DOCUMENT_LEVEL != compression.DICTIONARY_LEVEL
    for document in documents:
        assert compression.compress_document(document) == framed_at(
            compression.DOCUMENT_LEVEL, document)
        assert decompress(compression.compress_document(document)) == document
    for body in bodies[:20]:
        assert compression.compress_body(body) == framed_at(compression.DICTIONARY_LEVEL, body)
