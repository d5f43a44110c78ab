"""Memory around a large piece of work: the cyclic garbage collector paused through it, and
freed memory given back to the system after it.

Python's cyclic collector runs a full collection each time the objects allocated since the last
one reach a quarter of those that survived it: deriving a trace of tens of thousands of spans
builds millions of objects, and its full collections walked them all, again and again, freeing
almost nothing (the derivation's objects are freed by their reference counts as they go).
Paused, the derivation takes less time and less memory at its peak (bench/README.md, "Large
traces").

glibc's malloc keeps what Python frees in its heap for reuse; after a large trace's derivation
(hundreds of MiB of span models, documents and buffers, docs/large-traces.md) the process would
stay that size, and whatever it allocates next (the statement's buffers while the results are
stored, say) partly lands beside the freed memory rather than in it. `malloc_trim(0)` returns
every free page in the heap; it takes a few milliseconds on such a heap. Elsewhere than glibc
(musl, macOS) there is no such call and this does nothing.
"""

from __future__ import annotations

import ctypes
import functools
import gc
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager


@functools.cache
def _malloc_trim() -> Callable[[int], int] | None:
    if not sys.platform.startswith("linux"):
        return None
    try:
        # the symbols the process has loaded (libc's among them), without looking for the
        # library (ctypes.util.find_library runs ldconfig)
        trim: Callable[[int], int] = ctypes.CDLL(None).malloc_trim
    except (OSError, AttributeError):  # not glibc
        return None
    return trim


def release_free_memory() -> None:
    """Give the heap's free pages back to the system (glibc's malloc_trim)."""
    trim = _malloc_trim()
    if trim is not None:
        trim(0)


@contextmanager
def collector_paused() -> Iterator[None]:
    """The cyclic garbage collector off through the block (as it was after it); what the
    block leaves in cycles is collected when it next runs."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()
