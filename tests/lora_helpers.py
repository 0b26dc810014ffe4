"""Helpers for the LoRA tests: synthetic PEFT folders, engine configs, a tiny Llama."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from setup.paths import PROJECT_ROOT

DEMO_ADAPTERS = PROJECT_ROOT / "adapters"
ALL_MODULES = ("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj")
TRT_ALL = ("attn_q", "attn_k", "attn_v", "attn_dense", "mlp_h_to_4h", "mlp_4h_to_h", "mlp_gate")
# SmolLM2-135M shapes (what the CPU engine's config.json says)
SMOL = {"hidden": 576, "inter": 1536, "heads": 9, "kv": 3, "head": 64, "layers": 30}


def module_dims(module: str, shape: dict = SMOL) -> tuple[int, int]:
    q, kv = shape["heads"] * shape["head"], shape["kv"] * shape["head"]
    return {"q_proj": (shape["hidden"], q), "k_proj": (shape["hidden"], kv), "v_proj": (shape["hidden"], kv),
            "o_proj": (q, shape["hidden"]), "gate_proj": (shape["hidden"], shape["inter"]),
            "up_proj": (shape["hidden"], shape["inter"]), "down_proj": (shape["inter"], shape["hidden"])}[module]


def write_engine_config(folder: Path, shape: dict = SMOL, max_rank: int = 64, modules=TRT_ALL,
                        dtype: str = "float16") -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    config = {
        "pretrained_config": {"dtype": dtype, "hidden_size": shape["hidden"], "intermediate_size": shape["inter"],
                              "num_hidden_layers": shape["layers"], "num_attention_heads": shape["heads"],
                              "num_key_value_heads": shape["kv"], "head_size": shape["head"]},
        "build_config": {"lora_config": {"lora_target_modules": list(modules), "max_lora_rank": max_rank}},
    }
    (folder / "config.json").write_text(json.dumps(config))
    return folder


def write_model_config(folder: Path, shape: dict = SMOL, nested: str | None = None, vocab: int = 49152) -> Path:
    """A Hugging Face config.json of the given shape (`nested`: under that key, as a VLM keeps its language model's)."""
    text = {"hidden_size": shape["hidden"], "intermediate_size": shape["inter"], "num_hidden_layers": shape["layers"],
            "num_attention_heads": shape["heads"], "num_key_value_heads": shape["kv"], "vocab_size": vocab}
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "config.json").write_text(json.dumps({nested: text, "model_type": "vlm"} if nested else text))
    return folder


def write_peft(folder: Path, rank: int = 4, alpha: float = 8, modules=("q_proj", "v_proj"), layers=(0, 1),
               shape: dict = SMOL, seed: int = 0, config_extra: dict | None = None, fmt: str = "safetensors",
               dims: dict | None = None) -> Path:
    """A synthetic PEFT LoRA folder with random A and B."""
    rng = np.random.default_rng(seed)
    tensors = {}
    for layer in layers:
        for module in modules:
            in_size, out_size = (dims or {}).get(module) or module_dims(module, shape)
            part = "mlp" if module in ("gate_proj", "up_proj", "down_proj", "gate_up_proj") else "self_attn"
            prefix = f"base_model.model.model.layers.{layer}.{part}.{module}"
            tensors[f"{prefix}.lora_A.weight"] = rng.normal(0, 0.05, (rank, in_size)).astype(np.float32)
            tensors[f"{prefix}.lora_B.weight"] = rng.normal(0, 0.05, (out_size, rank)).astype(np.float32)
    folder.mkdir(parents=True, exist_ok=True)
    config = {"peft_type": "LORA", "r": rank, "lora_alpha": alpha, "target_modules": list(modules),
              "task_type": "CAUSAL_LM", **(config_extra or {})}
    (folder / "adapter_config.json").write_text(json.dumps(config))
    if fmt == "safetensors":
        from safetensors.numpy import save_file

        save_file(tensors, str(folder / "adapter_model.safetensors"))
    else:
        import torch

        torch.save({k: torch.from_numpy(v) for k, v in tensors.items()}, folder / "adapter_model.bin")
    return folder


def tiny_llama(seed: int = 0):
    """A random 2-layer Llama (fast) whose q/k/v/o/gate/up/down all have distinct shapes."""
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(seed)
    config = LlamaConfig(vocab_size=128, hidden_size=48, intermediate_size=80, num_hidden_layers=2,
                         num_attention_heads=4, num_key_value_heads=2, head_dim=16, max_position_embeddings=64)
    return LlamaForCausalLM(config).eval()


TINY = {"hidden": 48, "inter": 80, "heads": 4, "kv": 2, "head": 16, "layers": 2}
