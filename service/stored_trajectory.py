"""A derived trajectory as it is stored: its document and, for a large one, its chunks
(docs/large-traces.md §2), each compressed (storage/compression.py).

The document is deterministic JSON: trajectory_to_json's bytes, keys sorted at every level. A
large trajectory's document is not serialized whole: its steps are serialized once, a chunk
of CHUNK_STEPS at a time, into the stored chunks, and the document's frame is compressed from
the pieces (the document around the steps, and the steps read back from their chunks), so the
deriving process never holds the whole text (66 MiB at 30,000 steps) nor serializes a step
twice. The bytes are the same as serializing the whole document (tests/test_stored_trajectory.py).
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import orjson

from trajhub.normalizers.pages import CHUNK_STEPS, PAGED_FROM, split
from trajhub.normalizers.trajectory import Trajectory
from trajhub.storage.compression import compress, compress_pieces, decompress


def _json(value: Any) -> bytes:
    return orjson.dumps(value, option=orjson.OPT_SORT_KEYS)  # trajectory_to_json's options


def pack(document: Mapping[str, Any], trajectory: Trajectory) -> tuple[bytes, list[bytes]]:
    """The compressed document (the dict of `trajectory`, `trajectory_to_dict`), and the
    compressed chunks of a large trajectory as storage/step_chunks.py numbers them from −1
    (playback order, head, steps); no chunks below PAGED_FROM steps."""
    agents = document.get("agent_steps") or []
    if sum(len(a.steps) for a in trajectory.agent_steps) < PAGED_FROM:
        return compress(_json(document)), []
    parts = split(document, trajectory)
    chunks = [compress(_json(parts.order)), compress(_json(parts.head))]
    sizes: list[int] = []  # each step's JSON length, in flat order
    chunks.extend(_chunk(steps, sizes) for steps in parts.chunks)
    del parts
    around = _around_steps(document)
    if around is None:  # a value of the document happens to be the marker: serialize it whole
        return compress(_json(document)), chunks
    counts = [len(a.get("steps") or []) for a in agents]
    size = (sum(map(len, around)) + sum(sizes)
            + sum(2 + max(n - 1, 0) for n in counts))  # brackets and commas of each list
    return compress_pieces(_pieces(around, counts, chunks[2:], sizes), size), chunks


def _chunk(steps: Sequence[Any], sizes: list[int]) -> bytes:
    """A chunk of steps as stored: their JSON list (each step's JSON as the document holds
    it), compressed; each step's length is appended to `sizes`."""
    texts = [_json(step) for step in steps]
    sizes.extend(map(len, texts))
    return compress(b"[" + b",".join(texts) + b"]")


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


def _pieces(around: Sequence[bytes], counts: Sequence[int], chunks: Sequence[bytes],
            sizes: Sequence[int]) -> Iterator[bytes | memoryview]:
    """The document's JSON in pieces: `around[k]`, then agent k's steps as a JSON list, read
    back from the compressed step chunks (one decompressed at a time), …, `around[-1]`. A
    chunk holds `[s,s,…]`: an agent's steps within one chunk are one contiguous slice."""
    flat = 0  # the flat offset of the next step
    loaded, data, starts = -1, memoryview(b""), [0]
    for k, count in enumerate(counts):
        yield around[k]
        yield b"["
        end = flat + count
        while flat < end:
            number = flat // CHUNK_STEPS
            first = number * CHUNK_STEPS
            if number != loaded:
                data = memoryview(decompress(chunks[number]))
                starts = [1]  # where each of the chunk's steps begins in its text
                for n in sizes[first:first + CHUNK_STEPS]:
                    starts.append(starts[-1] + n + 1)
                loaded = number
            last = min(end, first + CHUNK_STEPS)  # the agent's last step here, exclusive
            yield data[starts[flat - first]:starts[last - first] - 1]
            flat = last
            if flat < end:
                yield b","
        yield b"]"
    yield around[-1]
