"""How many LoRA adapters of each rank fit in TensorRT-LLM's PEFT cache, on the GPU and in host memory.

The formula is TensorRT-LLM's own, read in NVIDIA/TensorRT-LLM (main branch, 2026):
- cpp/tensorrt_llm/batch_manager/peftCacheManager.cpp @0cedd9a0, `PeftCacheManager::getPageManagerConfig` and
  `getMaxNumSlots`: a slot is `page_width` values wide, page_width = the smallest (in + out) of the engine's LoRA
  modules; a page holds max(optimal_adapter_size x sum over modules of ceil((in + out) / page_width) x layers,
  ceil(max_adapter_size x largest (in + out) / page_width)) slots; the host cache has host_bytes // (page_width x
  dtype bytes) slots (or num_host_module_layer x ceil(largest (in + out) / page_width) when that is set), the GPU
  cache fraction x free GPU memory // (page_width x dtype bytes) (or num_device_module_layer x ...); both are
  rounded up to whole pages. optimal/max adapter size are capped at the engine's max_lora_rank (the constructor).
- cpp/tensorrt_llm/runtime/loraCache.cpp @c85e8726, `LoraCache::determineNumPages`: an adapter's rows (one per
  layer and module) take ceil(rank x (in + out) / page_width) slots each, packed in order into pages (a row
  never straddles two pages); an adapter holds its pages alone.
- The LLM API (tensorrt_llm/executor/worker.py and _torch/pyexecutor/_util.py, commit not pinned): max_loras /
  max_cpu_loras set num_device_module_layer / num_host_module_layer = max_lora_rank x layers x modules x count.
The Triton backend's defaults (tensorrtllm_backend config.pbtxt, see /work/shared reference, backend spec §5):
lora_cache_gpu_memory_fraction 0.05, lora_cache_host_memory_bytes 1 GiB, optimal 8, max 64. Tensor parallelism
is taken as 1 (tp > 1 splits each module's sizes).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from setup.lora.audit import LoraTarget
from setup.lora.convert import TRT_MODULE_IDS

GIB = 1 << 30
DTYPE_BYTES = {"float16": 2, "bfloat16": 2, "float32": 4}


@dataclass(frozen=True)
class CacheSettings:
    """The engine's runtime LoRA cache settings (Triton tensorrt_llm parameters, or the LLM API's)."""

    host_bytes: int = GIB  # lora_cache_host_memory_bytes
    gpu_fraction: float = 0.05  # lora_cache_gpu_memory_fraction
    free_gpu_bytes: int | None = None  # GPU memory left after the engine and KV cache (unknown: no GPU figure)
    optimal_adapter_size: int = 8  # lora_cache_optimal_adapter_size
    max_adapter_size: int = 64  # lora_cache_max_adapter_size
    max_loras: int | None = None  # LLM API: adapters on the GPU (sets num_device_module_layer)
    max_cpu_loras: int | None = None  # LLM API: adapters in host memory (sets num_host_module_layer)


@dataclass(frozen=True)
class CacheModel:
    """The engine's LoRA modules (TensorRT-LLM name -> (in, out)), layers, max_lora_rank and dtype."""

    modules: tuple[tuple[str, tuple[int, int]], ...]
    layers: int
    max_lora_rank: int
    dtype: str = "float16"

    @classmethod
    def of(cls, target: LoraTarget) -> CacheModel:
        """From an audit target read from an engine's config.json (its lora_target_modules, in module-id order)."""
        names = sorted(target.trt_modules or (), key=lambda m: TRT_MODULE_IDS.get(m, 99))
        return cls(modules=tuple((m, target.shapes[m]) for m in names if m in target.shapes),
                   layers=int(target.num_layers or 0), max_lora_rank=int(target.max_rank or 0),
                   dtype=target.dtype or "float16")


@dataclass(frozen=True)
class RankFit:
    rank: int
    pages: int  # pages one adapter of this rank on every module takes
    host: int
    gpu: int | None


@dataclass(frozen=True)
class CacheFit:
    """The pages of both caches and how many adapters fit, by rank and as TensorRT-LLM logs it."""

    page_width: int
    slots_per_page: int
    host_pages: int
    gpu_pages: int | None
    host_max_sized: int  # "LoRA host Cache can hold N max sized LoRAs" (max_adapter_size on every module)
    gpu_max_sized: int | None
    host_too_small: bool  # TensorRT-LLM refuses to start: not one max-sized adapter fits
    ranks: tuple[RankFit, ...]


def _adapter_pages(model: CacheModel, rank: int, page_width: int, slots_per_page: int) -> int:
    """LoraCache::determineNumPages for an adapter of `rank` on every module of every layer."""
    page, slot = 0, 0
    for _ in range(model.layers):
        for _, (in_size, out_size) in model.modules:
            need = math.ceil(rank * (in_size + out_size) / page_width)
            if slot + need > slots_per_page:
                page, slot = page + 1, 0
            slot += need
    return page + 1


def cache_fit(model: CacheModel, settings: CacheSettings = CacheSettings(),
              ranks: tuple[int, ...] = (4, 8, 16, 32, 64)) -> CacheFit:
    """How many adapters of each rank (up to max_lora_rank) fit, by TensorRT-LLM's formula (module docstring)."""
    if not model.modules or model.layers <= 0 or model.max_lora_rank <= 0:
        raise ValueError("The engine has no LoRA modules (lora_target_modules, max_lora_rank) to size a cache for.")
    optimal = min(settings.optimal_adapter_size, model.max_lora_rank)
    largest = min(settings.max_adapter_size, model.max_lora_rank)
    sizes = [i + o for _, (i, o) in model.modules]
    page_width, max_1d = min(sizes), max(sizes)
    total_slots = sum(optimal * math.ceil(s / page_width) for s in sizes) * model.layers
    slots_per_page = max(total_slots, math.ceil(largest * max_1d / page_width))
    slot_bytes = page_width * DTYPE_BYTES.get(model.dtype, 2)
    per_adapter_layer = model.max_lora_rank * model.layers * len(sizes)  # num_*_module_layer per LLM-API adapter
    if settings.max_cpu_loras:
        host_slots = per_adapter_layer * settings.max_cpu_loras * math.ceil(max_1d / page_width)
    else:
        host_slots = settings.host_bytes // slot_bytes
    if settings.max_loras:
        gpu_slots = per_adapter_layer * settings.max_loras * math.ceil(max_1d / page_width)
    elif settings.free_gpu_bytes is not None:
        gpu_slots = int(settings.gpu_fraction * settings.free_gpu_bytes) // slot_bytes
    else:
        gpu_slots = None
    host_pages = math.ceil(host_slots / slots_per_page)
    gpu_pages = None if gpu_slots is None else math.ceil(gpu_slots / slots_per_page)
    max_lora_size = largest * sum(sizes) * model.layers
    min_total_slots = math.ceil(largest * sum(sizes) * model.layers / page_width)
    fits = []
    for rank in sorted({r for r in ranks if r <= model.max_lora_rank} | {model.max_lora_rank}):
        pages = _adapter_pages(model, rank, page_width, slots_per_page)
        fits.append(RankFit(rank=rank, pages=pages, host=host_pages // pages,
                            gpu=None if gpu_pages is None else gpu_pages // pages))
    return CacheFit(page_width=page_width, slots_per_page=slots_per_page, host_pages=host_pages, gpu_pages=gpu_pages,
                    host_max_sized=host_pages * slots_per_page * page_width // max_lora_size,
                    gpu_max_sized=None if gpu_pages is None else gpu_pages * slots_per_page * page_width // max_lora_size,
                    host_too_small=host_slots < min_total_slots, ranks=tuple(fits))
