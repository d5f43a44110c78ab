"""How trajhub compresses what it stores in bytea columns: zstd level 1, in the writing process.

A stored value says by its first bytes how it is stored, so rows written before compression, or
by another version, read back the same: a zstd frame begins with zstd's magic number
(28 B5 2F FD); a zlib stream (trajectory documents of migration 0020) with 0x78; anything else
is stored as it is. No plain value trajhub stores begins with the zstd magic: a serialized OTLP
Span begins with a field tag (0x0A, its trace id), and JSON (Coze Loop spans, trajectory
documents) with `{` or `[`.

Why zstd level 1: on loadgen's spans it keeps 55 % of the bytes (zlib level 1: 53 %) at about a
third of zlib's CPU (bench/README.md, "Bytes"). PostgreSQL's own compression is not used: pglz
cost ingest more than it saved (migration 0001), and lz4 is not in every PostgreSQL build
(the embedded one has none).

Compressors are not thread-safe, so each thread keeps its own (one allocation, then ~2 µs
for a 2.5 KB span instead of ~25 µs with a new context per value).
"""

from __future__ import annotations

import threading
import zlib
from collections.abc import Iterable, Iterator

import zstandard

#: zstd's frame magic number, little-endian on the wire
ZSTD_MAGIC = b"\x28\xb5\x2f\xfd"
#: a zlib stream's first byte for the default window (trajectory documents of migration 0020)
_ZLIB = 0x78
LEVEL = 1

_local = threading.local()


def _compressor() -> zstandard.ZstdCompressor:
    c: zstandard.ZstdCompressor | None = getattr(_local, "compressor", None)
    if c is None:
        c = _local.compressor = zstandard.ZstdCompressor(level=LEVEL)
    return c


def _decompressor() -> zstandard.ZstdDecompressor:
    d: zstandard.ZstdDecompressor | None = getattr(_local, "decompressor", None)
    if d is None:
        d = _local.decompressor = zstandard.ZstdDecompressor()
    return d


#: from this size on, `compress` returns a copy of the frame that holds only the frame
COPY_FROM = 64 * 1024


def compress(data: bytes) -> bytes:
    """`data` as a zstd frame that records its size (so `decompress` allocates once)."""
    frame = _compressor().compress(data)
    # python-zstandard allocates the frame at zstd's bound for `data` (more than `data`) and
    # shortens it in place: a large value's frame keeps the whole allocation as long as it lives
    # (a 66 MiB document's 14 MiB frame held 66 MiB). A span's few KiB are not worth the copy.
    return frame if len(data) < COPY_FROM else bytes(memoryview(frame))


def compress_pieces(pieces: Iterable[bytes | memoryview], size: int) -> bytes:
    """The concatenation of `pieces` as one zstd frame that records its size, as `compress`
    gives it, without the concatenation ever being held: a piece is compressed as it comes.
    `size`, their total length, must be exact (zstd checks it)."""
    # a compressor of its own: the pieces may come from code that compresses too
    stream = zstandard.ZstdCompressor(level=LEVEL).compressobj(size=size)
    out = [stream.compress(piece) for piece in pieces]
    out.append(stream.flush())
    return b"".join(out)


def decompress(stored: bytes) -> bytes:
    """The bytes `compress` was given, from a value in any of the stored forms."""
    if stored[:4] == ZSTD_MAGIC:
        return _decompressor().decompress(stored)
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
    decompressed a piece at a time, so that a large value (a 66 MiB document) is never held
    whole; the other forms come whole."""
    if stored[:4] == ZSTD_MAGIC:
        yield from zstandard.ZstdDecompressor().read_to_iter(stored, write_size=piece)
    else:
        yield decompress(stored)
