"""setup/lora/cache_size.py against TensorRT-LLM's PEFT cache formula (peftCacheManager.cpp @0cedd9a0,
loraCache.cpp @c85e8726), worked by hand for a recorded engine configuration: the CPU demo's engine
(SmolLM2-135M: hidden 576, intermediate 1536, 9 heads / 3 KV heads of 64, 30 layers; all seven LoRA modules,
max_lora_rank 64, float16) with the Triton backend's cache defaults (1 GiB host, optimal 8, max 64)."""

from __future__ import annotations

import pytest

from setup.lora.audit import engine_target
from setup.lora.cache_size import GIB, CacheModel, CacheSettings, cache_fit
from tests.lora_helpers import TRT_ALL, write_engine_config


@pytest.fixture
def demo_engine(tmp_path) -> CacheModel:
    return CacheModel.of(engine_target(write_engine_config(tmp_path / "engine", max_rank=64, modules=TRT_ALL)))


def test_the_demo_engine_with_the_backends_defaults(demo_engine):
    # in + out per module: q, o 1152; k, v 768; gate, up, down 2112 -> page width 768 (the smallest)
    # slots per page: 8 x (2 + 1 + 1 + 2 + 3 + 3 + 3) x 30 = 3600 (> ceil(64 x 2112 / 768) = 176)
    # host slots: 2^30 // (768 x 2) = 699050 -> ceil(699050 / 3600) = 195 pages
    # max-sized LoRA: 64 x 10176 x 30 values -> 195 x 3600 x 768 // 19537920 = 27 ("can hold 27 max sized LoRAs")
    fit = cache_fit(demo_engine)
    assert (fit.page_width, fit.slots_per_page, fit.host_pages, fit.host_max_sized) == (768, 3600, 195, 27)
    by_rank = {r.rank: r for r in fit.ranks}
    # rank 8: 106 slots a layer, 3180 for 30 layers: one page each -> 195 adapters
    assert (by_rank[8].pages, by_rank[8].host) == (1, 195)
    # rank 64: 96 + 64 + 64 + 96 + 176 x 3 = 848 slots a layer; a page takes 4 layers and the next layer's q, k
    # (3552), so 30 layers need 8 pages -> 195 // 8 = 24 adapters (fewer than the 27 the log line says)
    assert (by_rank[64].pages, by_rank[64].host) == (8, 24)
    assert fit.gpu_pages is None and by_rank[8].gpu is None and not fit.host_too_small


def test_the_gpu_share_and_the_llm_apis_counts(demo_engine):
    fit = cache_fit(demo_engine, CacheSettings(free_gpu_bytes=40 * GIB, gpu_fraction=0.05))
    # int(0.05 x 40 GiB) // 1536 = 1398101 slots -> 389 pages
    assert fit.gpu_pages == 389 and {r.rank: r.gpu for r in fit.ranks}[64] == 389 // 8
    llm_api = cache_fit(demo_engine, CacheSettings(max_loras=2, max_cpu_loras=4))
    # num_host_module_layer = 64 x 30 x 7 x 4 = 53760 -> x ceil(2112 / 768) = 161280 slots -> 45 pages
    assert (llm_api.host_pages, llm_api.gpu_pages) == (45, 23)


def test_a_host_cache_too_small_for_one_max_sized_adapter_is_said(demo_engine):
    assert cache_fit(demo_engine, CacheSettings(host_bytes=1 << 20)).host_too_small


def test_an_engine_without_lora_is_one_sentence(tmp_path):
    model = CacheModel.of(engine_target(write_engine_config(tmp_path / "e", max_rank=0, modules=())))
    with pytest.raises(ValueError, match="no LoRA modules"):
        cache_fit(model)
