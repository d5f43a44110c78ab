"""How trajhub compresses what it stores in bytea columns: zstd, in the writing process.

A stored value says by its first bytes how it is stored, so rows written before compression, or
by another version, read back the same: a zstd frame begins with zstd's magic number
(28 B5 2F FD); a zlib stream (trajectory documents of migration 0020) with 0x78; anything else
is stored as it is. No plain value trajhub stores begins with the zstd magic: a serialized OTLP
Span begins with a field tag (0x0A, its trace id), and JSON (Coze Loop spans, trajectory
documents) with `{` or `[`.

Why zstd: on agent spans it keeps about as few of the bytes as zlib, at a fraction of zlib's
CPU (bench/README.md, "Compression"). PostgreSQL's own compression is not used: pglz cost
ingest more than it saved (migration 0001), and lz4 is not in every PostgreSQL build (the
embedded one has none).

Once the store has a trained dictionary (storage/compression_dictionaries.py), values are
compressed with it: a span is a few KiB, too little for zstd to learn its vocabulary (attribute
keys, prompts, the words of the payloads) from the span alone, and a dictionary trained on
earlier spans holds it: a body then keeps far fewer of its bytes, and compressing costs no more
CPU (bench/README.md, "Compression"). Each frame names its dictionary by zstd's own dictionary
id; this module keeps the dictionaries the process has loaded, and loads a missing one through
the loader the process installed (`set_loader`).

Compressors are not thread-safe, so each thread keeps its own: one allocation, reused, where a
new context per value would cost several times the compression itself (bench/README.md,
"Compression").
"""

from __future__ import annotations

import threading
import zlib
from collections.abc import Callable, Iterable, Iterator

import zstandard

#: zstd's frame magic number, little-endian on the wire
ZSTD_MAGIC = b"\x28\xb5\x2f\xfd"
#: a zlib stream's first byte for the default window (trajectory documents of migration 0020)
_ZLIB = 0x78
LEVEL = 1
#: the level of a span body's frame made with a dictionary (large values stay at `LEVEL`). Not 2:
#: level 2 is a little faster but keeps more of each body, and the bodies are most of what a
#: store writes, so the pipeline's WAL rose close to its ceiling of twice the sink's, with no
#: CPU gain the end-to-end runs could show (bench/README.md, "Compression")
DICTIONARY_LEVEL = 3
#: the level of a trajectory document's frame made with a dictionary: at level 2 a document
#: compresses markedly faster than at 3 and keeps hardly more of its bytes, which saves the
#: derivation more than the few bytes cost (bench/README.md, "Compression")
DOCUMENT_LEVEL = 2
#: from this size on a value is large: compressed at `LEVEL`, and `compress` returns a copy of
#: the frame that holds only the frame
COPY_FROM = 64 * 1024

_local = threading.local()

#: every dictionary this process has loaded, by zstd's dictionary id
_dictionaries: dict[int, zstandard.ZstdCompressionDict] = {}
#: the dictionary new values are compressed with (None: frames without one)
_current: zstandard.ZstdCompressionDict | None = None
#: fetches a stored dictionary by id (None: there is no such dictionary)
_loader: Callable[[int], bytes | None] | None = None
#: span bodies kept for training a dictionary while one is wanted (`collect_samples`)
_samples: list[bytes] | None = None
_sample_bytes = 0
#: the most bytes of samples kept: zstd trains on about 100 times the dictionary's size
MAX_SAMPLE_BYTES = 8 << 20
#: pieces of the trajectory documents compressed while samples are kept (`compress_document`)
_document_pieces: list[bytes] | None = None
_document_piece_bytes = 0
#: a document is kept in pieces of about a span body's size: zstd learns a vocabulary from
#: many small samples, not from a few large ones
DOCUMENT_PIECE = 2048
#: the most bytes of document pieces kept, beside the span bodies
MAX_DOCUMENT_SAMPLE_BYTES = 2 << 20


class UnknownDictionary(LookupError):
    """A frame names a dictionary that neither this process nor its loader has."""

    def __init__(self, dictionary_id: int) -> None:
        super().__init__(f"zstd dictionary {dictionary_id} is not stored")
        self.dictionary_id = dictionary_id


def register(data: bytes) -> zstandard.ZstdCompressionDict:
    """Load a stored dictionary into this process (once per id); returns it."""
    dictionary = zstandard.ZstdCompressionDict(data)
    return _dictionaries.setdefault(dictionary.dict_id(), dictionary)


def set_loader(loader: Callable[[int], bytes | None] | None) -> None:
    """How this process fetches a dictionary a frame names and it has not loaded."""
    global _loader
    _loader = loader


def use(dictionary: zstandard.ZstdCompressionDict | None) -> None:
    """Compress new values with `dictionary` (registered) from now on."""
    global _current
    _current = dictionary


def current() -> zstandard.ZstdCompressionDict | None:
    return _current


def _dictionary(dictionary_id: int) -> zstandard.ZstdCompressionDict:
    found = _dictionaries.get(dictionary_id)
    if found is None:
        data = _loader(dictionary_id) if _loader is not None else None
        if data is None:
            raise UnknownDictionary(dictionary_id)
        found = register(data)
    return found


def _compressor(large: bool, level: int = DICTIONARY_LEVEL) -> zstandard.ZstdCompressor:
    """`level`: the level of a frame with a dictionary that is not large."""
    dictionary = _current
    if dictionary is None or large:
        level = LEVEL  # what `_new_compressor` uses then: one compressor, whatever was asked
    key = (dictionary.dict_id() if dictionary is not None else 0, large, level)
    cache: dict[tuple[int, bool, int], zstandard.ZstdCompressor] | None = getattr(
        _local, "compressors", None)
    if cache is None:
        cache = _local.compressors = {}
    c = cache.get(key)
    if c is None:
        c = cache[key] = _new_compressor(dictionary, large, level)
    return c


def _new_compressor(dictionary: zstandard.ZstdCompressionDict | None, large: bool,
                    level: int = DICTIONARY_LEVEL) -> zstandard.ZstdCompressor:
    if dictionary is None:
        return zstandard.ZstdCompressor(level=LEVEL)
    if large:
        return zstandard.ZstdCompressor(level=LEVEL, dict_data=dictionary)
    # zstd's tables for the dictionary built once for this compressor, not for every value:
    # every value then compresses faster, to the same bytes (bench/README.md, "Compression").
    # A copy: the tables fix the level, and large values use the dictionary at `LEVEL`.
    precomputed = zstandard.ZstdCompressionDict(dictionary.as_bytes())
    precomputed.precompute_compress(level=level)
    return zstandard.ZstdCompressor(level=level, dict_data=precomputed)


def _decompressor(dictionary_id: int) -> zstandard.ZstdDecompressor:
    cache: dict[int, zstandard.ZstdDecompressor] | None = getattr(_local, "decompressors", None)
    if cache is None:
        cache = _local.decompressors = {}
    d = cache.get(dictionary_id)
    if d is None:
        d = cache[dictionary_id] = _new_decompressor(dictionary_id)
    return d


def _new_decompressor(dictionary_id: int) -> zstandard.ZstdDecompressor:
    if not dictionary_id:
        return zstandard.ZstdDecompressor()
    return zstandard.ZstdDecompressor(dict_data=_dictionary(dictionary_id))


def dictionary_id(stored: bytes) -> int:
    """The id of the dictionary a stored value's frame was made with (0: none)."""
    if stored[:4] != ZSTD_MAGIC:
        return 0
    try:
        return int(zstandard.get_frame_parameters(stored).dict_id)
    except zstandard.ZstdError:
        return 0


def collect_samples(wanted: bool) -> None:
    """Start (or stop) keeping the span bodies `compress_body` is given, and pieces of the
    documents `compress_document` is given, for training."""
    global _samples, _sample_bytes, _document_pieces, _document_piece_bytes
    _samples, _sample_bytes = ([] if wanted else None), 0
    _document_pieces, _document_piece_bytes = ([] if wanted else None), 0


def sampling() -> bool:
    return _samples is not None


def samples() -> tuple[list[bytes], int]:
    """The bodies kept since `collect_samples(True)` (the list itself, not a copy: it is looked
    at after every ingest request), and their total size."""
    return (_samples if _samples is not None else []), _sample_bytes


def document_pieces() -> list[bytes]:
    """The document pieces kept since `collect_samples(True)`."""
    return _document_pieces if _document_pieces is not None else []


def compress(data: bytes, level: int = DICTIONARY_LEVEL) -> bytes:
    """`data` as a zstd frame that records its size (so `decompress` allocates once);
    `level`: its level when the frame has a dictionary and `data` is not large."""
    large = len(data) >= COPY_FROM
    frame = _compressor(large, level).compress(data)
    # python-zstandard allocates the frame at zstd's bound for `data` (more than `data`) and
    # shortens it in place: a large value's frame keeps the whole allocation, about the size of
    # the value, as long as it lives (bench/README.md, "Large traces"). A span's few KiB are not
    # worth the copy.
    return bytes(memoryview(frame)) if large else frame


def compress_body(data: bytes) -> bytes:
    """A span body as `compress` stores it, kept as a training sample while one is wanted."""
    global _sample_bytes
    if _samples is not None and _sample_bytes < MAX_SAMPLE_BYTES:
        _samples.append(data)
        _sample_bytes += len(data)
    return compress(data)


def compress_document(data: bytes) -> bytes:
    """A trajectory document as `compress` stores it, kept in pieces as training samples while
    they are wanted. A document repeats its spans' payloads under keys of its own; with them in
    the dictionary a document keeps fewer of its bytes, and span bodies compress as well as
    before (bench/README.md, "Compression")."""
    global _document_piece_bytes
    if _document_pieces is not None and _document_piece_bytes < MAX_DOCUMENT_SAMPLE_BYTES:
        for start in range(0, len(data), DOCUMENT_PIECE):
            _document_pieces.append(data[start:start + DOCUMENT_PIECE])
        _document_piece_bytes += len(data)
    return compress(data, DOCUMENT_LEVEL)


def compress_pieces(pieces: Iterable[bytes | memoryview], size: int) -> bytes:
    """The concatenation of `pieces` as one zstd frame that records its size, as `compress`
    gives it, without the concatenation ever being held: a piece is compressed as it comes.
    `size`, their total length, must be exact (zstd checks it)."""
    # a compressor of its own: the pieces may come from code that compresses too
    stream = _new_compressor(_current, large=True).compressobj(size=size)
    out = [stream.compress(piece) for piece in pieces]
    out.append(stream.flush())
    return b"".join(out)


def decompress(stored: bytes) -> bytes:
    """The bytes `compress` was given, from a value in any of the stored forms."""
    if stored[:4] == ZSTD_MAGIC:
        return _decompressor(dictionary_id(stored)).decompress(stored)
    if stored[:1] and stored[0] == _ZLIB:
        return zlib.decompress(stored)
    return stored


def decompressed_size(stored: bytes) -> int | None:
    """The size of what `stored` holds, when its frame records it (a zstd frame of
    `compress` does); None for the other forms."""
    if stored[:4] != ZSTD_MAGIC:
        return None
    size = zstandard.frame_content_size(stored)
    return size if size >= 0 else None


def decompress_pieces(stored: bytes, piece: int = 1 << 20) -> Iterator[bytes]:
    """What `decompress` gives, in pieces of at most `piece` bytes: a zstd frame is
    decompressed a piece at a time, so that a large value (the document of a trace of tens of
    thousands of spans) is never held whole; the other forms come whole."""
    if stored[:4] == ZSTD_MAGIC:
        yield from _new_decompressor(dictionary_id(stored)).read_to_iter(stored,
                                                                         write_size=piece)
    else:
        yield decompress(stored)
