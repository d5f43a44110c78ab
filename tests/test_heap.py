"""service/heap.py: the cyclic collector paused through a block and restored as it was, and
giving freed memory back never failing."""

from __future__ import annotations

import gc

import pytest

from trajhub.service.heap import collector_paused, release_free_memory


def test_the_collector_is_paused_in_the_block_and_runs_again_after() -> None:
    assert gc.isenabled()
    with collector_paused():
        assert not gc.isenabled()
    assert gc.isenabled()
    with pytest.raises(KeyError), collector_paused():
        raise KeyError("a failed derivation")
    assert gc.isenabled()


def test_a_collector_paused_before_stays_paused() -> None:
    gc.disable()
    try:
        with collector_paused():
            assert not gc.isenabled()
        assert not gc.isenabled()
    finally:
        gc.enable()


def test_giving_memory_back_works_anywhere() -> None:
    kept = [bytes(1000) for _ in range(10_000)]
    del kept
    release_free_memory()  # glibc: malloc_trim; elsewhere nothing
