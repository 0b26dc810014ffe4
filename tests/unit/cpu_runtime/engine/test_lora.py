"""The CPU engine's LoRA: the backend's checks and texts, the host cache, per-request adapters."""

from __future__ import annotations

import sys
import types

import numpy as np
import pytest

from cpu_runtime.engine import lora
from setup.lora.convert import convert_peft
from tests.lora_helpers import DEMO_ADAPTERS, TINY, tiny_llama, write_peft


def _engine(max_rank=8, modules=("attn_q", "attn_k", "attn_v", "attn_dense", "mlp_h_to_4h", "mlp_4h_to_h",
                                 "mlp_gate")):
    return lora.EngineLora.from_engine(
        {"pretrained_config": {"dtype": "float16"},
         "build_config": {"lora_config": {"lora_target_modules": list(modules), "max_lora_rank": max_rank}}},
        tiny_llama())


def _tensors(tmp_path, seed=0, rank=4, modules=("q_proj", "v_proj")):
    converted = convert_peft(write_peft(tmp_path / f"a{seed}-{rank}", rank=rank, modules=modules, shape=TINY,
                                        seed=seed), "float16")
    return converted.weights, converted.config


# ---- decoding: the executor's checks, in its order, with its texts ---------------------------------------
def test_decode_splits_rows_into_a_and_b(tmp_path):
    weights, config = _tensors(tmp_path)
    adapter = lora.decode_adapter(3, weights, config, _engine())
    a, b = adapter.weights[(0, 1)]
    assert tuple(a.shape) == (4, 48) and tuple(b.shape) == (64, 4)
    np.testing.assert_array_equal(a.numpy().reshape(-1), weights[0, 0, :192].astype(np.float32))
    assert adapter.nbytes == weights.nbytes and set(adapter.weights) == {(0, 1), (0, 3), (1, 1), (1, 3)}


@pytest.mark.parametrize("mutate, message", [
    (lambda w, c: (w[0], c), "Invalid shape for lora_weights tensor"),
    (lambda w, c: (w, c[0]), "Invalid shape for lora_keys tensor"),
    (lambda w, c: (np.concatenate([w, w]), c), "Expected batch dimension to be 1 for each lora request"),
    (lambda w, c: (w, c.astype(np.int64)), "Expected  lora keys to have TYPE_INT32 but was int64"),
    (lambda w, c: (w[:, :2], c), "Expected dim1 lora_weights and lora_keys to have the same size"),
    (lambda w, c: (w.astype(np.float32), c), "Expected lora weights to be the same data type as base model"),
    (lambda w, c: (w, _set(c, 1, 2)), "Expected layerId to be in the range [0, numModelLayers)"),
    (lambda w, c: (w, _set(c, 2, 0)), "Expected adapterSize to be > 0"),
    (lambda w, c: (w, _set(c, 0, 0)), "lora module attn_qkv not enabled for this model"),
    (lambda w, c: (w[:, :, :100], c), "lora_weights has to few values for attn_q"),
])
def test_decode_refuses_like_the_backend(tmp_path, mutate, message):
    weights, config = mutate(*_tensors(tmp_path))
    with pytest.raises(lora.LoraError) as err:
        lora.decode_adapter(3, weights, config, _engine())
    assert str(err.value) == message


def _set(config, column, value):
    config = config.copy()
    config[0, 0, column] = value
    return config


def test_rank_and_target_module_limits(tmp_path):
    weights, config = _tensors(tmp_path, rank=8)
    with pytest.raises(lora.LoraError, match=r"^Invalid low_rank \(8\). low_rank must be smaller than mMaxLowRank \(4\)$"):
        lora.decode_adapter(1, weights, config, _engine(max_rank=4))
    with pytest.raises(lora.LoraError, match="^lora module attn_v not enabled for this model$"):
        lora.decode_adapter(1, weights, config, _engine(modules=("attn_q",)))


# ---- the host cache ---------------------------------------------------------------------------------
def _adapter(task_id, nbytes):
    return lora.LoraAdapter(task_id=task_id, weights={}, nbytes=nbytes)


def test_cache_evicts_least_recently_used_done_task():
    cache = lora.LoraCache(300)
    cache.put(_adapter(1, 100))
    cache.put(_adapter(2, 100))
    cache.put(_adapter(3, 100))
    cache.release(cache.acquire(1))  # 1 is now the most recently used
    cache.put(_adapter(4, 100))
    assert cache.task_ids() == [3, 1, 4]
    with pytest.raises(lora.LoraError) as err:
        cache.acquire(2)
    assert str(err.value) == "LoRA task 2 not found in cache. Please send LoRA weights with request"


def test_cache_never_evicts_a_task_in_use():
    cache = lora.LoraCache(250)
    held = cache.put(_adapter(1, 100), acquire=True)
    cache.put(_adapter(2, 100), acquire=True)
    with pytest.raises(lora.LoraError) as err:
        cache.put(_adapter(3, 100))
    assert str(err.value) == "Error storing task=3 in PEFT cache -- Cache is full. There are no done tasks to evict"
    cache.release(held)
    cache.put(_adapter(3, 100))
    assert cache.task_ids() == [2, 3]


def test_resending_a_task_in_use_keeps_the_running_weights():
    cache = lora.LoraCache(1000)
    first = cache.put(_adapter(1, 100), acquire=True)
    again = cache.put(_adapter(1, 100), acquire=True)
    assert again is first
    cache.release(first)
    cache.release(again)
    assert cache.put(_adapter(1, 100)) is not first


def test_manager_paths(tmp_path):
    logs = []
    manager = lora.LoraManager(tiny_llama(), _engine_config(), {"lora_cache_host_memory_bytes": "100000"},
                               log=logs.append)
    weights, config = _tensors(tmp_path)
    assert manager.acquire(None, None, None) is None
    with pytest.raises(lora.LoraError, match="^lora_task_id must be set for LoRA inference$"):
        manager.acquire(None, weights, config)
    with pytest.raises(lora.LoraError, match="^Request for LoRA inference must have both lora_weights and lora_keys$"):
        manager.acquire(5, weights, None)
    with pytest.raises(lora.LoraError, match="^LoRA task 5 not found in cache"):
        manager.acquire(5, None, None)
    first = manager.acquire(5, weights, config)
    manager.release(first)
    assert manager.acquire(5, None, None) is first
    assert manager.cache.capacity == 100000


def _engine_config(max_rank=8):
    return {"pretrained_config": {"dtype": "float16"},
            "build_config": {"lora_config": {"lora_target_modules": ["attn_q", "attn_v"], "max_lora_rank": max_rank}}}


def test_prefetch_dir(tmp_path):
    from setup.lora.convert import save_converted

    converted = convert_peft(write_peft(tmp_path / "peft", shape=TINY), "float16")
    save_converted(converted, tmp_path / "prefetch" / "12")
    save_converted(converted, tmp_path / "prefetch" / "pirate")
    (tmp_path / "prefetch" / "13").mkdir()  # no files: skipped with a warning
    logs = []
    manager = lora.LoraManager(tiny_llama(), _engine_config(), {"lora_prefetch_dir": str(tmp_path / "prefetch")},
                               log=logs.append)
    assert manager.cache.task_ids() == [12]
    assert any("'pirate'" in line and "digits only" in line for line in logs)
    assert any("task 13" in line for line in logs)
    missing = lora.LoraManager(tiny_llama(), _engine_config(), {"lora_prefetch_dir": str(tmp_path / "none")},
                               log=logs.append)
    assert missing.cache.task_ids() == []


# ---- per-request adapters in the real runner -----------------------------------------------------------
@pytest.fixture(scope="module")
def runner():
    sys.modules.setdefault("triton_python_backend_utils", types.ModuleType("triton_python_backend_utils"))
    from cpu_runtime.engine.runner import EngineRunner
    from setup.cpu.engine import build_cpu_engine

    return EngineRunner(build_cpu_engine(log=lambda *_: None), {"lora_cache_host_memory_bytes": str(64 << 20)})


@pytest.fixture(scope="module")
def prompt_ids():
    from transformers import AutoTokenizer

    from setup.cpu.model import prepare_cpu_model

    tokenizer = AutoTokenizer.from_pretrained(prepare_cpu_model(log=lambda *_: None))
    return tokenizer.apply_chat_template([{"role": "user", "content": "What is the capital of France?"}],
                                         tokenize=True, add_generation_prompt=True, return_dict=False)


def _request(runner, prompt, task_id=None, tensors=None):
    from cpu_runtime.engine.requests import GenerationRequest

    gen = GenerationRequest(request_id=f"r{task_id}", input_ids=list(prompt), max_new_tokens=10, end_id=2)
    gen.lora_task_id = task_id
    if tensors is not None:
        gen.lora_weights, gen.lora_config = tensors
    runner.attach_lora(gen)
    return gen


def _run_alone(runner, gen):
    while not gen.finished:
        token, _ = runner.step(gen)
        if token is not None:
            gen.output_ids.append(token)
    runner.release(gen)
    return gen.output_ids


def test_concurrent_requests_each_get_their_own_adapter(runner, prompt_ids):
    pirate = convert_peft(DEMO_ADAPTERS / "pirate", "float16")
    french = convert_peft(DEMO_ADAPTERS / "french", "float16")
    tensors = {1: (pirate.weights, pirate.config), 2: (french.weights, french.config)}
    alone = {tid: _run_alone(runner, _request(runner, prompt_ids, tid, tensors[tid])) for tid in tensors}
    base = _run_alone(runner, _request(runner, prompt_ids))
    assert len({tuple(alone[1]), tuple(alone[2]), tuple(base)}) == 3, "each adapter changes the reply"
    gens = {tid: _request(runner, prompt_ids, tid) for tid in (1, 2)}  # cached by now: the id alone
    gens[0] = _request(runner, prompt_ids)
    while not all(g.finished for g in gens.values()):
        for gen in gens.values():  # round robin, one token each, like the scheduler
            if not gen.finished:
                token, _ = runner.step(gen)
                if token is not None:
                    gen.output_ids.append(token)
    assert gens[1].output_ids == alone[1] and gens[2].output_ids == alone[2] and gens[0].output_ids == base
    for gen in gens.values():
        runner.release(gen)
    assert runner.lora.cache._in_use == {}
