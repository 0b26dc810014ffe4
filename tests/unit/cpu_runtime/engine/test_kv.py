"""The CPU engine's KV-cache budget: parameters, guaranteed_no_evict vs max_utilization, prefix reuse."""

from __future__ import annotations

import types

import pytest

from cpu_runtime.engine import kv as kv_module
from tests.cpu_engine_helpers import (
    alone,
    assert_same,
    chat_ids,
    drive,
    load_tokenizer,
    make_engine,
    make_gen,
)


@pytest.fixture(scope="module")
def kv():
    return kv_module


def _gen(prompt, max_new, output=(), adapter=None):
    return types.SimpleNamespace(input_ids=list(prompt), output_ids=list(output), max_new_tokens=max_new,
                                 prompt_table=None, lora_adapter=adapter, kv=None)


# ---- parameters ------------------------------------------------------------------------------------------
def test_budget_from_the_backend_parameters(kv):
    logs = []
    config = kv.kv_config({"max_tokens_in_paged_kv_cache": "4096", "batch_scheduler_policy": "max_utilization",
                           "enable_kv_cache_reuse": "true"}, max_batch=8, max_seq_len=1024, bytes_per_token=100)
    assert (config.total_blocks, config.policy, config.reuse) == (4096 // 64, "max_utilization", True)
    small = kv.kv_config({"max_tokens_in_paged_kv_cache": "100"}, 8, 1024, 100, log=logs.append)
    assert small.total_blocks == 1024 // 64 and "cannot hold one sequence" in logs[0]
    capped = kv.kv_config({"max_tokens_in_paged_kv_cache": "999999"}, 2, 1024, 100)
    assert capped.total_blocks == 2 * 1024 // 64  # what the slot cache can hold
    derived = kv.kv_config({"kv_cache_free_gpu_mem_fraction": "0.000001", "batch_scheduler_policy": "odd"},
                           4, 1024, 1000, log=logs.append)
    assert derived.policy == "guaranteed_no_evict" and not derived.reuse and any("odd" in line for line in logs)
    assert 1024 // 64 <= derived.total_blocks <= 4 * 1024 // 64


# ---- accounting ------------------------------------------------------------------------------------------
def test_guaranteed_no_evict_reserves_the_whole_length(kv):
    manager = kv.KvManager(kv.KvConfig(total_blocks=4, tokens_per_block=16))
    first = _gen(range(20), max_new=20)  # 40 tokens: 3 blocks reserved
    assert manager.can_admit(first, [], 0)
    manager.admit(first, [])
    assert not manager.can_admit(_gen(range(10), max_new=10), [first], 0)  # 2 more would make 5
    assert manager.can_admit(_gen(range(10), max_new=6), [first], 0)
    assert manager.grow(first, 40) and manager.used == 3
    manager.release(first)
    assert manager.used == 0 and manager.stats()["free"] == 4


def test_max_utilization_admits_what_fits_now(kv):
    manager = kv.KvManager(kv.KvConfig(total_blocks=4, tokens_per_block=16, policy="max_utilization"))
    first = _gen(range(20), max_new=200)
    manager.admit(first, [])
    assert manager.grow(first, 21)  # 2 blocks
    assert manager.can_admit(_gen(range(20), max_new=200), [first], 0)
    assert manager.grow(first, 64) and not manager.grow(first, 65)


def test_reusable_blocks_are_evicted_oldest_first_and_never_while_pinned(kv):
    manager = kv.KvManager(kv.KvConfig(total_blocks=3, tokens_per_block=4, reuse=True))
    done = []
    for start in (0, 100):
        gen = _gen(range(start, start + 4), max_new=1, output=[7])
        manager.admit(gen, [])
        manager.grow(gen, 5)
        manager.keep(gen, 4, lambda a, b: ("kv", a, b))
        manager.release(gen)
        done.append(gen)
    assert manager.stats()["reusable"] == 2 and manager.used == 0
    again = _gen(range(0, 4), max_new=2, output=[7])
    keys = manager.lookup(again)
    assert len(keys) == 1 and manager.block_data(keys[0]) == ("kv", 0, 4)
    manager.admit(again, keys)
    assert manager.grow(again, 6)  # shares the stored block, allocates one of its own
    other = _gen(range(50, 54), 1)
    manager.admit(other, [])
    assert manager.grow(other, 4)  # the room comes from the other stored block
    assert list(manager.store) == keys and manager.stats()["used"] == 3


# ---- through the engine ---------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def prompts():
    tokenizer = load_tokenizer()
    return [chat_ids(tokenizer, text) for text in ("Why is the sky blue?", "Name three colours.")]


def test_guaranteed_no_evict_waits_for_room(runner, prompts):
    blocks = -(-(len(prompts[0]) + 8) // 16)
    engine = make_engine(runner, total_blocks=blocks, tokens_per_block=16)
    gens = [make_gen(runner, p, max_new=8) for p in prompts]
    trace = drive(engine, {0: gens})
    assert max(trace.rows) == 1 and engine.paused_total == 0, "the second waited until the first finished"
    for gen, prompt in zip(gens, prompts, strict=True):
        assert_same(gen, alone(runner, prompt, max_new=8))


def test_max_utilization_pauses_and_resumes(runner, prompts):
    def blocks(tokens):
        return -(-tokens // 16)

    total = sum(blocks(len(p) + 1) for p in prompts) + 1  # both start; both cannot finish together
    assert sum(blocks(len(p) + 24) for p in prompts) > total
    engine = make_engine(runner, total_blocks=total, tokens_per_block=16, policy="max_utilization")
    gens = [make_gen(runner, p, max_new=24) for p in prompts]
    trace = drive(engine, {0: gens})
    assert max(trace.rows) == 2 and engine.paused_total >= 1 and gens[1].paused >= 1
    for gen, prompt in zip(gens, prompts, strict=True):
        assert_same(gen, alone(runner, prompt, max_new=24))
    assert engine.kv.used == 0


def test_kv_cache_reuse_of_a_shared_prefix(runner, prompts):
    engine = make_engine(runner, tokens_per_block=8, reuse=True)
    first = make_gen(runner, prompts[0], max_new=4)
    drive(engine, {0: [first]})
    shared = next(i for i, (a, b) in enumerate(zip(*prompts, strict=False)) if a != b)
    assert shared >= 8, "the chat template's system prompt is a shared prefix"
    second, same = make_gen(runner, prompts[1], max_new=6), make_gen(runner, prompts[0], max_new=4)
    drive(engine, {0: [second], 1: [same]})
    assert second.kv_reused_blocks == shared // 8
    assert same.kv_reused_blocks == (len(prompts[0]) - 1) // 8 and first.kv_reused_blocks == 0
    assert_same(second, alone(runner, prompts[1], max_new=6))
    assert_same(same, alone(runner, prompts[0], max_new=4))
    assert engine.kv.stats()["reusable"] > 0 and engine.kv.stats()["used"] == 0


def test_reuse_after_the_cache_grew_during_a_pass(runner, prompts):
    """A prompt past the first 256 positions grows the KV store inside a forward pass; a later request that
    reuses its blocks writes them back between passes (this failed in CI with 'Inplace update to inference
    tensor outside InferenceMode'). A third request keeps running throughout, so the store is never released."""
    long_prompt = prompts[0] + prompts[1] * (300 // len(prompts[1]) + 1)
    engine = make_engine(runner, tokens_per_block=8, reuse=True)
    capacities, reserve = [], engine.cache.reserve
    engine.cache.reserve = lambda *args: (reserve(*args), capacities.append(engine.cache.capacity))[0]
    holder = make_gen(runner, prompts[1], max_new=16)
    first, again = make_gen(runner, long_prompt, max_new=2), make_gen(runner, long_prompt, max_new=2)
    trace = drive(engine, {0: [holder, first], 6: [again]})
    assert [e.error for step in trace.events for e in step if e.error] == []
    assert max(capacities) > 256 and holder.first_token_ns and trace.joined[again] == 6
    assert again.kv_reused_blocks == (len(long_prompt) - 1) // 8
    assert_same(again, first)


def test_an_idle_engine_holds_no_kv_memory(runner, prompts):
    engine = make_engine(runner, max_batch=32)
    gens = [make_gen(runner, prompts[i % len(prompts)], max_new=3) for i in range(10)]
    drive(engine, {0: gens})
    assert all(len(g.output_ids) == 3 for g in gens) and engine.cache.nbytes == 0
