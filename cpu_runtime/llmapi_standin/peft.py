"""LoRA by path, as the llmapi model takes it: a Hugging Face PEFT folder on the server's filesystem, cached by
`lora_id` in the engine core's LRU cache (cpu_runtime/engine/lora.py) and read again from the path after eviction.

No Triton import, so tests use it directly.
"""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

import numpy as np
import torch

from cpu_runtime.llmapi_standin.messages import (
    MSG_MODULE,
    MSG_NEMO,
    MSG_NO_PATH,
    MSG_NOT_ENABLED,
    MSG_NOT_PEFT,
    MSG_PARTIAL,
    MSG_RANK,
    MSG_SHAPE,
    MSG_SOURCE,
)

KEY = re.compile(r"(?:^|\.)layers\.(\d+)\.(self_attn|mlp)\.(\w+)\.lora_([AB])\.weight$")


def lora_request(values: dict) -> tuple[int, str, str, str] | None:
    """(id, name, path, source) from the request's lora_* values, None without LoRA; ValueError as upstream."""
    given = [values.get(k) for k in ("lora_id", "lora_name", "lora_path")]
    if all(v is None for v in given):
        return None
    if any(v is None for v in given):
        raise ValueError(MSG_PARTIAL)
    source = values.get("lora_ckpt_source") or "hf"
    if source not in ("hf", "nemo"):
        raise ValueError(MSG_SOURCE.format(source=source))
    path = str(given[2])
    if not Path(path).exists():
        raise ValueError(MSG_NO_PATH.format(path=path))
    return int(given[0]), str(given[1]), path, source


def _module_ids(modules: dict) -> dict[str, int]:
    """PEFT projection name (q_proj, ...) -> module id, from the engine core's MODULES table."""
    return {path.split(".")[-1]: module_id for module_id, (_, path) in modules.items()}


def load_peft(lora_id: int, name: str, path: str, engine, modules: dict, adapter_type):
    """Read a PEFT folder into the engine core's adapter type (B scaled by alpha / r, as PEFT applies it)."""
    from safetensors.numpy import load_file

    folder = Path(path)
    config_file, weights_file = folder / "adapter_config.json", folder / "adapter_model.safetensors"
    if not (config_file.is_file() and weights_file.is_file()):
        raise ValueError(MSG_NOT_PEFT.format(path=path))
    config = json.loads(config_file.read_text())
    rank, alpha = int(config["r"]), float(config.get("lora_alpha") or config["r"])
    if rank > engine.max_rank:
        raise ValueError(MSG_RANK.format(name=name, rank=rank, max_rank=engine.max_rank))
    scale = alpha / math.sqrt(rank) if config.get("use_rslora") else alpha / rank
    ids, pairs = _module_ids(modules), {}
    for key, value in load_file(str(weights_file)).items():
        match = KEY.search(key)
        if not match or match.group(3) not in ids:
            continue
        module_id = ids[match.group(3)]
        if modules[module_id][0] not in engine.target_modules:
            raise ValueError(MSG_MODULE.format(name=name, module=modules[module_id][0]))
        pairs.setdefault((int(match.group(1)), module_id), {})[match.group(4)] = value.astype(np.float32)
    weights, nbytes = {}, 0
    for (layer, module_id), ab in pairs.items():
        a, b = ab["A"], ab["B"] * np.float32(scale)
        in_size, out_size = engine.shapes[module_id]
        if a.shape != (rank, in_size) or b.shape != (out_size, rank):
            raise ValueError(MSG_SHAPE.format(name=name, key=f"layer {layer} {modules[module_id][0]}",
                                              shape=f"{a.shape}/{b.shape}", want=f"{(rank, in_size)}/{(out_size, rank)}"))
        weights[(layer, module_id)] = (torch.from_numpy(np.ascontiguousarray(a)), torch.from_numpy(np.ascontiguousarray(b)))
        nbytes += a.nbytes + b.nbytes
    return adapter_type(task_id=int(lora_id), weights=weights, nbytes=nbytes)


class PathAdapters:
    """Adapters by lora_id: the cache hit, or a fresh read of lora_path (first use, or after eviction)."""

    def __init__(self, lora_manager, modules: dict, adapter_type, enabled: bool):
        self.manager, self.modules, self.adapter_type, self.enabled = lora_manager, modules, adapter_type, enabled
        self.loads = 0  # reads from disk, for the log

    def acquire(self, request: tuple[int, str, str, str] | None):
        if request is None:
            return None
        if not self.enabled:
            raise ValueError(MSG_NOT_ENABLED)
        lora_id, name, path, source = request
        if source != "hf":
            raise ValueError(MSG_NEMO)
        cache = self.manager.cache
        if cache.has(lora_id):
            try:
                return cache.acquire(lora_id)
            except ValueError:
                pass  # evicted meanwhile: read it again
        adapter = load_peft(lora_id, name, path, self.manager.engine, self.modules, self.adapter_type)
        self.loads += 1
        return cache.put(adapter, acquire=True)
