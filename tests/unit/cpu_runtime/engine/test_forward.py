"""The slot KV cache of the batched forward pass: it holds what the running chats need, no more."""

from __future__ import annotations

import pytest
import torch

from cpu_runtime.engine.forward import SlotCache

LAYERS, HEADS, DIM = 2, 3, 4


def _cache(slots=32, max_len=3072):
    return SlotCache(LAYERS, slots, HEADS, DIM, max_len, grain=256, slot_grain=8)


def _bytes(slots, length):
    return 2 * LAYERS * slots * HEADS * length * DIM * 4


def test_an_empty_cache_holds_nothing():
    cache = _cache()
    assert (cache.slots, cache.capacity, cache.nbytes) == (0, 0, 0)


def test_one_long_chat_takes_one_slot_grain_not_every_slot():
    cache = _cache()
    cache.reserve(3000, 1)
    assert (cache.slots, cache.capacity) == (8, 3072)
    assert cache.nbytes == _bytes(8, 3072)  # a quarter of 32 slots at the longest length


def test_growing_keeps_what_every_slot_holds():
    cache = _cache()
    cache.reserve(10, 2)
    with torch.inference_mode():
        cache.k[1][1, :, 5] = 7.0
        cache.v[0][0, :, 0] = 3.0
    cache.reserve(600, 17)
    assert (cache.slots, cache.capacity) == (24, 768)
    assert cache.k[1][1, :, 5].eq(7.0).all() and cache.v[0][0, :, 0].eq(3.0).all()
    assert cache.k[1][16:].eq(0).all() and cache.k[0][:, :, 256:].eq(0).all()


def test_growth_stops_at_the_limits():
    cache = _cache(slots=12, max_len=1000)
    cache.reserve(999, 12)
    assert (cache.slots, cache.capacity) == (12, 1000)
    with pytest.raises(ValueError, match="slot 12 is past the cache's 12 slots"):
        cache.reserve(10, 13)


def test_release_gives_the_memory_back():
    cache = _cache()
    cache.reserve(300, 9)
    cache.release()
    assert cache.nbytes == 0
    cache.reserve(10, 1)
    assert (cache.slots, cache.capacity) == (8, 256)
