"""Partial LoRA in the CPU engine (InternLM-XComposer2's Plora, TensorRT-LLM's has_partial_lora_mask).

A partial adapter's update applies only at rows whose input id is a fake prompt-table id: without an
image it is the base model exactly; with one it changes the reply; batched and chunked it gives what it
gives alone. The switch is set for a whole engine (config.json or the model parameter), per adapter.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
import torch

from cpu_runtime.engine import lora
from setup.lora.convert import convert_peft, save_converted
from tests.cpu_engine_helpers import TOL, alone, assert_same, drive, load_hf_model, make_engine, make_gen
from tests.lora_helpers import DEMO_ADAPTERS, TINY, tiny_llama, write_peft

PARTIAL_TASK = 9201  # the pirate demo adapter decoded by an engine with has_partial_lora_mask
IMAGE_AT, IMAGE_ROWS = 5, 12
HF_TOL = 5e-3  # every row's logits through 30 layers, two ways of rounding; a misplaced update is > 0.1


@pytest.fixture(scope="module")
def partial(runner):
    """Task id of the pirate adapter decoded as a partial one, in the runner's LoRA cache."""
    converted = convert_peft(DEMO_ADAPTERS / "pirate", "float16")
    engine = replace(runner.lora.engine, partial_mask=True)
    adapter = lora.decode_adapter(PARTIAL_TASK, converted.weights, converted.config, engine)
    assert adapter.partial
    runner.lora.cache.put(adapter)
    return PARTIAL_TASK


@pytest.fixture(scope="module")
def image(runner, prompt_ids):
    """(prompt with IMAGE_ROWS fake ids after IMAGE_AT text tokens, its prompt table)."""
    table = torch.randn(IMAGE_ROWS, runner.model.config.hidden_size, generator=torch.Generator().manual_seed(1))
    ids = list(prompt_ids[0])
    with_image = ids[:IMAGE_AT] + [runner.vocab_size + r for r in range(IMAGE_ROWS)] + ids[IMAGE_AT:]
    return with_image, (table * 0.05).numpy().astype(np.float16)


def test_partial_adapter_without_image_is_the_base_model_exactly(runner, prompt_ids, partial, adapters):
    for ids in prompt_ids[:2]:
        base = alone(runner, ids, max_new=10, return_context_logits=True)
        got = alone(runner, ids, max_new=10, return_context_logits=True, task=partial)
        assert got.output_ids == base.output_ids and got.log_probs == base.log_probs
        assert np.array_equal(got.context_logits, base.context_logits)
    full = alone(runner, prompt_ids[0], max_new=10, task=adapters["pirate"])
    assert full.output_ids != alone(runner, prompt_ids[0], max_new=10).output_ids, "the same adapter, not partial"


def test_partial_adapter_with_image_changes_the_reply_from_the_image_on(runner, partial, adapters, image):
    ids, table = image
    base = alone(runner, ids, max_new=10, prompt_table=table, return_context_logits=True)
    got = alone(runner, ids, max_new=10, prompt_table=table, return_context_logits=True, task=partial)
    full = alone(runner, ids, max_new=10, prompt_table=table, return_context_logits=True, task=adapters["pirate"])
    before = slice(0, IMAGE_AT)
    assert np.array_equal(got.context_logits[0, before], base.context_logits[0, before]), "text before the image"
    assert np.abs(full.context_logits[0, before] - base.context_logits[0, before]).max() > 0.1
    after = slice(IMAGE_AT, None)
    assert np.abs(got.context_logits[0, after] - base.context_logits[0, after]).max() > 0.1
    assert np.abs(got.context_logits[0, after] - full.context_logits[0, after]).max() > 0.1
    assert got.output_ids != base.output_ids or max(abs(a - b) for a, b in zip(got.log_probs, base.log_probs, strict=True)) > 0.05


def test_partial_adapter_batched_and_chunked_equals_alone(runner, prompt_ids, partial, adapters, image):
    ids, table = image
    rows = [
        {"ids": ids, "task": partial, "prompt_table": table, "return_context_logits": True},
        {"ids": prompt_ids[1], "task": partial},
        {"ids": prompt_ids[0], "task": adapters["pirate"]},
        {"ids": prompt_ids[2]},
        {"ids": ids, "prompt_table": table},
    ]
    gens = [make_gen(runner, r["ids"], max_new=8, rid=f"p{i}", **{k: v for k, v in r.items() if k != "ids"})
            for i, r in enumerate(rows)]
    trace = drive(make_engine(runner, max_num_tokens=16), {0: gens})
    assert len(ids) > 16 and max(trace.tokens) <= 16, "the image prompt is prefilled in chunks"
    assert max(trace.adapters) == 2, "the partial and the pirate adapter ran in the same forward pass"
    for gen, r in zip(gens, rows, strict=True):
        ref = alone(runner, r["ids"], max_new=8, **{k: v for k, v in r.items() if k != "ids"})
        assert_same(gen, ref)
        if r.get("return_context_logits"):
            assert np.abs(gen.context_logits - ref.context_logits).max() < TOL
    assert runner.lora.cache._in_use == {}


def test_forward_matches_hugging_face_hooks_partial_and_normal(runner, partial, adapters, image):
    """The batched pass and LoraHooks on the Hugging Face model agree: the partial adapter at the image
    rows only, the normal adapter at every row as before."""
    from cpu_runtime.engine.forward import Segment

    ids, table = image
    gen = make_gen(runner, ids, prompt_table=table)
    runner.prepare(gen)
    embeds = gen.prompt_embeds
    runner.release(gen)
    model = load_hf_model()
    hooks = lora.LoraHooks(model)
    held = [runner.lora.cache.acquire(t) for t in (partial, adapters["pirate"])]
    try:
        for adapter in held:
            ours = runner.forward([Segment(0, 0, ids, adapter=adapter, embeds=embeds, logits="all")],
                                  runner.batched.new_cache(1, 512))[0]
            with torch.inference_mode(), hooks.use(adapter, torch.tensor([ids])):
                theirs = model(inputs_embeds=embeds[None]).logits[0]
            assert (ours - theirs).abs().max() < HF_TOL, adapter.partial
        with torch.inference_mode():
            base = model(inputs_embeds=embeds[None]).logits[0]
            with hooks.use(held[0]):  # no ids: no fake ids, so no update
                assert torch.equal(model(inputs_embeds=embeds[None]).logits[0], base)
            with hooks.use(held[0], torch.tensor([ids[:-1]])), pytest.raises(ValueError, match="do not match"):
                model(inputs_embeds=embeds[None])
    finally:
        hooks.remove()
        for adapter in held:
            runner.lora.cache.release(adapter)


# ---- the switch: engine config.json or the tensorrt_llm model parameter, for every adapter -------------
def _config(partial=None):
    pretrained = {"dtype": "float16"} if partial is None else {"dtype": "float16", "has_partial_lora_mask": partial}
    return {"pretrained_config": pretrained,
            "build_config": {"lora_config": {"lora_target_modules": ["attn_q", "attn_v"], "max_lora_rank": 8}}}


@pytest.mark.parametrize("partial, params, expected", [
    (None, {}, False),
    (True, {}, True),
    (False, {}, False),
    (None, {"has_partial_lora_mask": "true"}, True),
    (True, {"has_partial_lora_mask": "False"}, False),
    (True, {"has_partial_lora_mask": ""}, True),  # an unfilled parameter leaves the config.json's
])
def test_switch_makes_every_adapter_of_the_engine_partial(tmp_path, partial, params, expected):
    converted = convert_peft(write_peft(tmp_path / "peft", shape=TINY), "float16")
    save_converted(converted, tmp_path / "prefetch" / "12")
    manager = lora.LoraManager(tiny_llama(), _config(partial), {**params, "lora_prefetch_dir": str(tmp_path / "prefetch")},
                               log=lambda *_: None)
    assert manager.engine.partial_mask is expected
    sent = manager.acquire(5, converted.weights, converted.config)
    prefetched = manager.acquire(12, None, None)
    assert sent.partial is expected and prefetched.partial is expected
