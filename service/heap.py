"""Giving freed memory back to the system after a large piece of work.

glibc's malloc keeps what Python frees in its heap for reuse; after a large trace's derivation
(hundreds of MiB of span models, documents and buffers, docs/large-traces.md) the process would
stay that size, and whatever it allocates next (the statement's buffers while the results are
stored, say) partly lands beside the freed memory rather than in it. `malloc_trim(0)` returns
every free page in the heap; it takes a few milliseconds on such a heap. Elsewhere than glibc
(musl, macOS) there is no such call and this does nothing.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import functools
import sys
from collections.abc import Callable


@functools.cache
def _malloc_trim() -> Callable[[int], int] | None:
    if not sys.platform.startswith("linux"):
        return None
    try:
        trim: Callable[[int], int] = ctypes.CDLL(
            ctypes.util.find_library("c") or "libc.so.6").malloc_trim
    except (OSError, AttributeError):  # not glibc
        return None
    return trim


def release_free_memory() -> None:
    """Give the heap's free pages back to the system (glibc's malloc_trim)."""
    trim = _malloc_trim()
    if trim is not None:
        trim(0)
