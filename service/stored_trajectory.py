"""A derived trajectory as it is stored: its document and, for a large one, its chunks
(docs/large-traces.md §2), each compressed (storage/compression.py).

The document is deterministic JSON: trajectory_to_json's bytes, keys sorted at every level. A
large trajectory's document is not serialized whole. Its steps are serialized once, into the
chunks of CHUNK_STEPS, one *run* at a time (the steps of one agent within one chunk: one orjson
call, where a call per step cost far more); the chunks are compressed on a thread of
their own meanwhile (zstd lets go of the GIL). The document's frame is then compressed from
pieces: the document around the steps, and each agent's runs read back from their chunks. So
the deriving process never holds the whole text (tens of MiB for a large run: bench/README.md,
"Large traces"), and the bytes are those of serializing the whole document
(tests/test_stored_trajectory.py).
"""

from __future__ import annotations

import uuid
from collections import deque
from collections.abc import Iterator, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from functools import cache
from typing import Any

import orjson

from trajhub.normalizers.pages import CHUNK_STEPS, PAGED_FROM, split
from trajhub.normalizers.trajectory import Trajectory
from trajhub.storage.compression import compress, compress_document, compress_pieces, decompress

#: chunks serialized but not yet compressed, at most (each holds CHUNK_STEPS steps' payloads)
PENDING_CHUNKS = 2

#: a run: (agent index, first flat offset, end offset), within one chunk
Run = tuple[int, int, int]


def _json(value: Any) -> bytes:
    return orjson.dumps(value, option=orjson.OPT_SORT_KEYS)  # trajectory_to_json's options


@cache
def _compressor() -> ThreadPoolExecutor:
    return ThreadPoolExecutor(1, thread_name_prefix="trajhub-compress")


def pack(document: Mapping[str, Any], trajectory: Trajectory) -> tuple[bytes, list[bytes]]:
    """The compressed document (the dict of `trajectory`, `trajectory_to_dict`), and the
    compressed chunks of a large trajectory as storage/step_chunks.py numbers them from −1
    (playback order, head, steps); no chunks below PAGED_FROM steps."""
    if sum(len(a.steps) for a in trajectory.agent_steps) < PAGED_FROM:
        return compress_document(_json(document)), []
    counts = [len(a.get("steps") or []) for a in document.get("agent_steps") or []]
    runs = _runs(counts)
    parts = split(document, trajectory)
    pool = _compressor()
    done: list[Future[bytes]] = [pool.submit(compress, _json(parts.order)),
                                 pool.submit(compress, _json(parts.head))]
    pending: deque[Future[bytes]] = deque()
    lengths: list[int] = []  # each run's JSON length (its steps, without the brackets)
    first = 0  # the first run of the next chunk
    texts: list[memoryview] = []
    for number, steps in enumerate(parts.chunks):
        texts = []
        start = number * CHUNK_STEPS
        while first < len(runs) and runs[first][1] < start + len(steps):
            _, a, b = runs[first]
            texts.append(memoryview(_json(steps[a - start:b - start]))[1:-1])
            lengths.append(len(texts[-1]))
            first += 1
        while len(pending) >= PENDING_CHUNKS:  # the compressor is behind: wait for it
            pending.popleft().result()
        future = pool.submit(compress, b"[" + b",".join(texts) + b"]")
        pending.append(future)
        done.append(future)
    del parts, texts, pending
    chunks = [f.result() for f in done]
    around = _around_steps(document)
    if around is None:  # a value of the document happens to be the marker: serialize it whole
        return compress(_json(document)), chunks
    per_agent = [0] * len(counts)  # how many runs each agent has
    for agent, _, _ in runs:
        per_agent[agent] += 1
    size = (sum(map(len, around)) + sum(lengths)
            + sum(2 + max(n - 1, 0) for n in per_agent))  # brackets and commas of each list
    return compress_pieces(_pieces(around, runs, lengths, chunks[2:]), size), chunks


def _runs(counts: Sequence[int]) -> list[Run]:
    """Each agent's steps (`counts`, in document order) cut where a chunk ends."""
    runs: list[Run] = []
    start = 0
    for agent, count in enumerate(counts):
        end = start + count
        while start < end:
            stop = min(end, (start // CHUNK_STEPS + 1) * CHUNK_STEPS)
            runs.append((agent, start, stop))
            start = stop
    return runs


def _around_steps(document: Mapping[str, Any]) -> list[bytes] | None:
    """The document's JSON cut where each agent's `steps` list goes (one more piece than
    agents), or None if the cut is ambiguous."""
    agents = document.get("agent_steps") or []
    # a value no derivation produces: each agent's steps are replaced by it, and the text cut
    # at its JSON; a document that holds it anyway is found by the count
    marker = f"trajhub-steps-{uuid.uuid4().hex}"
    skeleton = {**document, "agent_steps": [{**a, "steps": marker} for a in agents]}
    around = _json(skeleton).split(_json(marker))
    return around if len(around) == len(agents) + 1 else None


def _pieces(around: Sequence[bytes], runs: Sequence[Run], lengths: Sequence[int],
            chunks: Sequence[bytes]) -> Iterator[bytes | memoryview]:
    """The document's JSON in pieces: `around[0]`, agent 0's steps as a JSON list, `around[1]`,
    …, `around[-1]`. A chunk is `[run,run,…]`, so a run is a slice of its chunk, read back
    from the compressed chunk (one decompressed at a time)."""
    loaded, data, at = -1, memoryview(b""), 0
    upcoming = iter(zip(runs, lengths, strict=True))
    pending = next(upcoming, None)
    for agent in range(len(around) - 1):
        yield around[agent]
        yield b"["
        separator = b""
        while pending is not None and pending[0][0] == agent:
            (_, start, _), length = pending
            number = start // CHUNK_STEPS
            if number != loaded:
                data, loaded, at = memoryview(decompress(chunks[number])), number, 1
            yield separator
            yield data[at:at + length]
            at += length + 1  # and the comma after it
            separator = b","
            pending = next(upcoming, None)
        yield b"]"
    yield around[-1]
