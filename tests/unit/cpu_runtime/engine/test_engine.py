"""The CPU engine's in-flight batching, driven directly with the real SmolLM2 model.

Every request run in a batch must give what it gives alone (runner.step, one request with its own
cache): the same greedy ids, log-probabilities and context logits within float tolerance.
"""

from __future__ import annotations

import pytest
import torch

from tests.cpu_engine_helpers import (
    PROMPTS,
    TOL,
    alone,
    assert_same,
    chat_ids,
    drive,
    load_hf_model,
    make_engine,
    make_gen,
)


def test_forward_matches_hugging_face(runner, prompt_ids):
    """The batched forward pass computes what the Hugging Face model computes (prefill and decode)."""
    from transformers import DynamicCache

    from cpu_runtime.engine.forward import Segment

    ids = prompt_ids[0]
    cache = runner.batched.new_cache(4, 512)
    ours = runner.forward([Segment(slot=2, start=0, ids=ids, logits="all")], cache)[0]
    with torch.inference_mode():
        hf_cache = DynamicCache()
        theirs = load_hf_model()(input_ids=torch.tensor([ids]), past_key_values=hf_cache, use_cache=True).logits[0]
        step = load_hf_model()(input_ids=torch.tensor([[7]]), past_key_values=hf_cache, use_cache=True).logits[0, -1]
    assert (ours - theirs).abs().max() < TOL
    decode = runner.forward([Segment(slot=2, start=len(ids), ids=[7])], cache)[0][0]
    assert (decode - step).abs().max() < TOL


def test_batched_greedy_equals_alone(runner, prompt_ids):
    gens = [make_gen(runner, ids, max_new=12, rid=f"g{i}") for i, ids in enumerate(prompt_ids)]
    trace = drive(make_engine(runner), {0: gens})
    assert max(trace.rows) == len(gens), "all requests ran in the same steps"
    for gen, ids in zip(gens, prompt_ids, strict=True):
        assert_same(gen, alone(runner, ids, max_new=12))


def test_context_logits_batched_and_chunked_equal_alone(runner, prompt_ids):
    gens = [make_gen(runner, ids, max_new=3, return_context_logits=True) for ids in prompt_ids[:2]]
    drive(make_engine(runner, max_num_tokens=16), {0: gens})
    for gen, ids in zip(gens, prompt_ids[:2], strict=True):
        ref = alone(runner, ids, max_new=3, return_context_logits=True)
        assert gen.context_logits.shape == ref.context_logits.shape == (1, len(ids), runner.vocab_size)
        assert abs(gen.context_logits - ref.context_logits).max() < TOL
        assert_same(gen, ref)


def test_mixed_adapters_in_one_batch_each_equal_alone(runner, prompt_ids, adapters):
    ids = prompt_ids[0]
    tasks = (None, adapters["pirate"], adapters["french"])
    gens = [make_gen(runner, ids, max_new=12, task=task) for task in tasks]
    trace = drive(make_engine(runner), {0: gens})
    assert max(trace.rows) == 3 and max(trace.adapters) == 2, "base + two adapters in one forward pass"
    refs = [alone(runner, ids, max_new=12, task=task) for task in tasks]
    for gen, ref in zip(gens, refs, strict=True):
        assert_same(gen, ref)
    assert len({tuple(r.output_ids) for r in refs}) == 3, "each adapter changes the reply"
    assert runner.lora.cache._in_use == {}


def test_lora_update_touches_only_its_rows(runner, prompt_ids, adapters):
    """Base rows around an adapter's rows get exactly the base logits; the adapter rows get the adapter's."""
    from cpu_runtime.engine.forward import Segment

    pirate = runner.lora.cache.acquire(adapters["pirate"])
    try:
        a, b = prompt_ids[0], prompt_ids[1]
        alone_base = runner.forward([Segment(0, 0, a)], runner.batched.new_cache(1, 512))[0]
        alone_pirate = runner.forward([Segment(0, 0, b, adapter=pirate)], runner.batched.new_cache(1, 512))[0]
        mixed = runner.forward([Segment(0, 0, a), Segment(1, 0, b, adapter=pirate), Segment(2, 0, a)],
                               runner.batched.new_cache(3, 512))
    finally:
        runner.lora.cache.release(pirate)
    assert (mixed[0] - alone_base).abs().max() < TOL and (mixed[2] - alone_base).abs().max() < TOL
    assert (mixed[1] - alone_pirate).abs().max() < TOL
    assert (alone_pirate - runner.forward([Segment(0, 0, b)], runner.batched.new_cache(1, 512))[0]).abs().max() > 0.1


SAMPLED = {"temperature": 1.3, "top_k": 40, "top_p": 0.9}


def test_per_row_sampling_is_independent_and_seeded(runner, prompt_ids):
    ids = prompt_ids[2]
    settings = [dict(SAMPLED, seed=11), dict(SAMPLED, seed=11), dict(SAMPLED, seed=12),
                {"repetition_penalty": 1.5, "seed": 3}, {"top_k": 1, "top_p": 0.5, "seed": 4}]
    gens = [make_gen(runner, ids, max_new=10, **s) for s in settings]
    drive(make_engine(runner), {0: gens})
    for gen, s in zip(gens, settings, strict=True):
        assert_same(gen, alone(runner, ids, max_new=10, **s))
    assert gens[0].output_ids == gens[1].output_ids, "same seed, same tokens, whatever the neighbours"
    assert gens[0].output_ids != gens[2].output_ids
    assert gens[4].output_ids == alone(runner, ids, max_new=10).output_ids, "top_k 1 is greedy"


def test_per_row_word_lists_and_min_length(runner, prompt_ids, tokenizer):
    ids = prompt_ids[0]
    greedy = alone(runner, ids, max_new=16)
    stop = greedy.output_ids[3:5]
    bad = [[greedy.output_ids[0]]]
    rows = [{"stop_words": [stop]}, {"bad_words": bad}, {"min_length": 16, "max_new": 16}, {}]
    gens = [make_gen(runner, ids, **{"max_new": 16, **r}) for r in rows]
    drive(make_engine(runner), {0: gens})
    for gen, r in zip(gens, rows, strict=True):
        assert_same(gen, alone(runner, ids, **{"max_new": 16, **r}))
    assert gens[0].output_ids == greedy.output_ids[:5]
    assert gens[1].output_ids[0] != greedy.output_ids[0]
    assert gens[3].output_ids == greedy.output_ids


def test_new_requests_join_between_steps(runner, prompt_ids):
    first = make_gen(runner, prompt_ids[0], max_new=12)
    late = make_gen(runner, prompt_ids[1], max_new=6)
    trace = drive(make_engine(runner), {0: [first], 4: [late]})
    assert trace.rows[:4] == [1, 1, 1, 1] and trace.rows[4] == 2, trace.rows
    assert trace.tokens_at(first, 4) and trace.tokens_at(late, 4), "both got a token in the step it joined"
    assert_same(first, alone(runner, prompt_ids[0], max_new=12))
    assert_same(late, alone(runner, prompt_ids[1], max_new=6))


def test_cancel_mid_batch_frees_the_row_for_a_waiting_request(runner, prompt_ids):
    engine = make_engine(runner, max_batch=2)
    a, b, c = (make_gen(runner, prompt_ids[i], max_new=10, rid=n) for i, n in enumerate("abc"))
    trace = drive(engine, {0: [a, b, c]}, stop={3: [a]})
    assert trace.cancelled == [a] and len(a.output_ids) == 3, "stopped at the next step"
    assert max(trace.rows) <= 2 and trace.joined[c] == 3, "c took a's slot in the step after the stop"
    assert_same(b, alone(runner, prompt_ids[1], max_new=10))
    assert_same(c, alone(runner, prompt_ids[2], max_new=10))
    assert engine.kv.used == 0 and sorted(engine._free) == [0, 1]


def test_chunked_prefill_keeps_running_streams_going(runner, prompt_ids, tokenizer):
    engine = make_engine(runner, max_num_tokens=16)
    short = make_gen(runner, prompt_ids[0][:12], max_new=14)
    long_ids = chat_ids(tokenizer, " ".join(PROMPTS) * 2)
    long = make_gen(runner, long_ids, max_new=4)
    trace = drive(engine, {0: [short], 1: [long]})
    steps = -(-len(long_ids) // 15)  # 15 tokens of each step are left after the decoding row
    assert all(t <= 16 for t in trace.tokens), trace.tokens
    assert all(trace.tokens_at(short, s) for s in range(1, 1 + steps)), "one token per step during the prefill"
    assert not trace.tokens_at(long, steps - 1) and trace.tokens_at(long, steps)
    assert_same(short, alone(runner, prompt_ids[0][:12], max_new=14))
    assert_same(long, alone(runner, long_ids, max_new=4))


def test_max_batch_size_is_honoured(runner, prompt_ids):
    gens = [make_gen(runner, prompt_ids[i % len(prompt_ids)], max_new=4 + i) for i in range(5)]
    trace = drive(make_engine(runner, max_batch=2), {0: gens})
    assert max(trace.rows) == 2 and all(g.finished for g in gens)
    for i, gen in enumerate(gens):
        assert_same(gen, alone(runner, prompt_ids[i % len(prompt_ids)], max_new=4 + i))


@pytest.mark.parametrize("embed_rows", [3])
def test_prompt_table_rows_chunked_equal_alone(runner, prompt_ids, embed_rows):
    ids = list(prompt_ids[0])
    table = torch.randn(embed_rows, runner.model.config.hidden_size, generator=torch.Generator().manual_seed(0))
    with_table = ids[:5] + [runner.vocab_size + r for r in range(embed_rows)] + ids[5:]
    gen = make_gen(runner, with_table, max_new=6, prompt_table=table.numpy() * 0.05)
    drive(make_engine(runner, max_num_tokens=16), {0: [gen]})
    assert_same(gen, alone(runner, with_table, max_new=6, prompt_table=table.numpy() * 0.05))
