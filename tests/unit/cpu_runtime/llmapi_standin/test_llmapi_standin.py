"""The llmapi CPU stand-in's own parts: PEFT adapters by path (same weights as the engine path's converter),
the LRU by count, upstream's LoRA and request texts, image_url decoding and placement, sampling mapping."""

from __future__ import annotations

import base64
import io
import sys
import types

import numpy as np
import pytest

from setup.lora.convert import convert_peft
from tests.lora_helpers import TINY, tiny_llama, write_peft

# cpu_runtime.engine.requests imports Triton's module for its parser; these tests use only its dataclasses
sys.modules.setdefault("triton_python_backend_utils", types.ModuleType("triton_python_backend_utils"))

from cpu_runtime.engine import lora  # noqa: E402
from cpu_runtime.engine.requests import GenerationRequest, Limits  # noqa: E402
from cpu_runtime.llmapi_standin import images, peft, requests  # noqa: E402

ALL = ("attn_q", "attn_k", "attn_v", "attn_dense", "mlp_h_to_4h", "mlp_4h_to_h", "mlp_gate")


def engine(max_rank=8, modules=ALL):
    return lora.EngineLora.from_engine(
        {"pretrained_config": {"dtype": "float32"},
         "build_config": {"lora_config": {"lora_target_modules": list(modules), "max_lora_rank": max_rank}}},
        tiny_llama())


def test_peft_by_path_gives_the_engine_paths_weights(tmp_path):
    folder = write_peft(tmp_path / "a", rank=4, alpha=8, modules=("q_proj", "v_proj", "down_proj"), shape=TINY)
    by_path = peft.load_peft(7, "a", str(folder), engine(), lora.MODULES, lora.LoraAdapter)
    converted = convert_peft(folder, "float32")  # the engine path: PEFT -> backend rows, B scaled by alpha / r
    decoded = lora.decode_adapter(7, converted.weights, converted.config, engine())
    assert set(by_path.weights) == set(decoded.weights) and by_path.task_id == 7
    for key, (a, b) in decoded.weights.items():
        np.testing.assert_allclose(by_path.weights[key][0].numpy(), a.numpy(), rtol=1e-6)
        np.testing.assert_allclose(by_path.weights[key][1].numpy(), b.numpy(), rtol=1e-6)


def test_adapter_over_the_limits_is_refused_by_name(tmp_path):
    folder = write_peft(tmp_path / "big", rank=16, shape=TINY)
    with pytest.raises(ValueError, match="Adapter 'big' has rank 16; lora_config.max_lora_rank is 8"):
        peft.load_peft(1, "big", str(folder), engine(), lora.MODULES, lora.LoraAdapter)
    with pytest.raises(ValueError, match="changes attn_v, which lora_config.lora_target_modules does not list"):
        peft.load_peft(1, "a", str(write_peft(tmp_path / "a", shape=TINY)), engine(modules=("attn_q",)),
                       lora.MODULES, lora.LoraAdapter)


def test_lora_inputs_follow_upstreams_rules(tmp_path):
    assert peft.lora_request({"lora_id": None, "lora_name": None, "lora_path": None}) is None
    with pytest.raises(ValueError, match="^lora_id, lora_name, and lora_path must all be provided together$"):
        peft.lora_request({"lora_id": 3, "lora_name": "x", "lora_path": None})
    with pytest.raises(ValueError, match="^lora_path does not exist on the Triton server's filesystem: /no/x$"):
        peft.lora_request({"lora_id": 3, "lora_name": "x", "lora_path": "/no/x"})
    assert peft.lora_request({"lora_id": 3, "lora_name": "x", "lora_path": str(tmp_path)}) == \
        (3, "x", str(tmp_path), "hf")


def test_cache_by_count_evicts_the_least_recent_idle_adapter():
    cache = lora.LoraCache(1 << 30, max_entries=2)
    first, second, third = (lora.LoraAdapter(task_id=i, weights={}, nbytes=10) for i in (1, 2, 3))
    cache.put(first)
    cache.put(second, acquire=True)
    cache.put(third)
    assert cache.task_ids() == [2, 3]  # 1 was idle and oldest
    cache.acquire(3)
    with pytest.raises(lora.LoraError, match="Cache is full"):
        cache.put(lora.LoraAdapter(task_id=4, weights={}, nbytes=10))  # both held by running requests


def test_path_adapters_read_again_after_eviction(tmp_path):
    manager = type("Manager", (), {})()
    manager.engine, manager.cache = engine(), lora.LoraCache(1 << 30, max_entries=1)
    adapters = peft.PathAdapters(manager, lora.MODULES, lora.LoraAdapter, enabled=True)
    a, b = (str(write_peft(tmp_path / n, shape=TINY, seed=i)) for i, n in enumerate("ab"))
    for lora_id, path in ((1, a), (2, b), (1, a)):
        manager.cache.release(adapters.acquire((lora_id, "n", path, "hf")))
    assert adapters.loads == 3  # a, b, then a again after b evicted it
    manager.cache.release(adapters.acquire((1, "n", a, "hf")))
    assert adapters.loads == 3  # a cache hit
    with pytest.raises(ValueError, match="without lora_config"):
        peft.PathAdapters(manager, lora.MODULES, lora.LoraAdapter, enabled=False).acquire((1, "n", a, "hf"))


def png_url() -> str:
    from PIL import Image

    buffer = io.BytesIO()
    Image.new("RGB", (40, 20), "white").save(buffer, format="PNG")
    return "data:image/png;base64," + base64.b64encode(buffer.getvalue()).decode()


def test_image_urls_data_only_and_local_files_refused():
    assert images.decode_image_url(png_url(), 0).size == (40, 20)
    with pytest.raises(ValueError, match="local paths and file:// URLs are refused"):
        images.decode_image_url("file:///etc/passwd", 0)
    with pytest.raises(ValueError, match="local paths and file:// URLs are refused"):
        images.decode_image_url("/etc/passwd", 0)
    with pytest.raises(ValueError, match="fetches no remote images"):
        images.decode_image_url("https://example.com/a.png", 0)
    with pytest.raises(ValueError, match="image_url 1 is not a base64 data: URI of an image"):
        images.decode_image_url("data:image/png;base64,bm90IGFuIGltYWdl", 1)


class Letters:
    """A tokenizer whose ids are character codes (enough to see where blocks go)."""

    def encode(self, text, add_special_tokens=False):
        return [ord(c) for c in text]


def test_image_blocks_go_to_markers_or_the_last_user_turn():
    tok, header = Letters(), "<|im_start|>user\n"
    prompt = "<|im_start|>user\nhi<|im_end|>\n<|im_start|>user\nread it<|im_end|>\n"
    ids = images.prompt_ids(tok, prompt, [[-1, -2]], header)
    text_before = prompt[: prompt.rfind(header) + len(header)]
    assert ids[: len(text_before)] == [ord(c) for c in text_before]
    assert ids[len(text_before): len(text_before) + 3] == [-1, -2, ord("\n")]
    marked = images.prompt_ids(tok, "a<image>b<image>c", [[-1], [-2]], header)
    assert marked == [ord("a"), -1, ord("b"), -2, ord("c")]
    with pytest.raises(ValueError, match="The prompt has 1 <image> markers for 2 images"):
        images.prompt_ids(tok, "a<image>b", [[-1], [-2]], header)


def test_image_ids_pass_the_image_number_to_the_encoder():
    """The stand-in numbers the blocks of several images as the engine path's encoder does ("[Image 2: ...]")."""
    from PIL import Image

    class Encoder:
        def image_block(self, bgr, number=None):
            return [number or 0, int(bgr[0, 0, 0])], "seen"

    red = Image.new("RGB", (4, 4), (200, 0, 9))
    assert images.image_ids(Encoder(), red) == ([0, 9], "seen")  # BGR order: blue first
    assert images.image_ids(Encoder(), red, 2) == ([2, 9], "seen")


def arrays(**values):
    def get(name):
        value = values.get(name)
        if value is None:
            return None
        return np.array(value if isinstance(value, list) else [value], dtype=np.object_ if isinstance(
            value, str | bytes | list) else None)
    return get


def test_requests_use_upstreams_texts_and_map_sampling():
    with pytest.raises(ValueError, match="^text_input is missing from the request$"):
        requests.read_request(arrays())
    asked = requests.read_request(arrays(text_input=b"hi", streaming=True, sampling_param_temperature=0.0,
                                         sampling_param_stop=[b"END", b"STOP"], return_finish_reason=True))
    assert asked.prompt == "hi" and asked.streaming and asked.stop == ["END", "STOP"]
    gen = requests.generation_request(GenerationRequest, asked, [1, 2, 3], Limits(10, 100, 100), 2, "r1")
    assert (gen.top_k, gen.temperature, gen.max_new_tokens) == (1, 1.0, requests.DEFAULT_MAX_TOKENS)  # greedy
    short = requests.generation_request(GenerationRequest, asked, [1, 2, 3], Limits(10, 20, 100), 2, "r2")
    assert short.max_new_tokens == 17  # what is left under max_seq_len
    with pytest.raises(ValueError, match="The prompt has 11 tokens; this model takes at most 10"):
        requests.generation_request(GenerationRequest, asked, list(range(11)), Limits(10, 20, 100), 2, "r")
    beams = requests.read_request(arrays(text_input=b"hi", sampling_param_best_of=2))
    with pytest.raises(ValueError, match="one sequence"):
        requests.generation_request(GenerationRequest, beams, [1], Limits(10, 20, 100), 2, "r")
