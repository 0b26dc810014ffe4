"""model.yaml -> what the CPU engine core needs: an engine config, KV parameters and LoRA limits.

The keys are the LLM API's (`tensorrt_llm.LLM(...)`); the stand-in reads the ones it can honour on the CPU
and says in the log which it ignores. No Triton import, so tests use it directly.
"""

from __future__ import annotations

import json
from pathlib import Path

import yaml

HONOURED = ("model", "backend", "tensor_parallel_size", "pipeline_parallel_size", "max_batch_size", "max_num_tokens",
            "max_input_len", "max_seq_len", "kv_cache_config", "lora_config", "triton_config")
DEFAULTS = {"max_batch_size": 8, "max_num_tokens": 256, "max_seq_len": 2048}
DEFAULT_MAX_CPU_LORAS = 4  # the LLM API's LoraConfig default for max_cpu_loras
ALL_MODULES = ["attn_q", "attn_k", "attn_v", "attn_dense", "mlp_h_to_4h", "mlp_4h_to_h", "mlp_gate"]


class ConfigError(ValueError):
    """model.yaml cannot drive the stand-in; the text names the key."""


def read_model_yaml(path: Path) -> dict:
    try:
        data = yaml.safe_load(Path(path).read_text())
    except (OSError, yaml.YAMLError) as exc:
        raise ConfigError(f"Failed to parse YAML engine config: {exc}") from None
    if not isinstance(data, dict) or not isinstance(data.get("triton_config"), dict):
        raise ConfigError(f"{path} must be a mapping with a triton_config mapping.")
    return data


def ignored_keys(args: dict) -> list[str]:
    return sorted(k for k in args if k not in HONOURED)


def engine_config(args: dict) -> dict:
    """A CPU engine config (the shape cpu_runtime/engine/runner.py reads) from the LLM arguments."""
    model = Path(str(args.get("model", "")))
    if not (model / "config.json").is_file():
        raise ConfigError(f"model: '{model}' is not a Hugging Face checkpoint folder (no config.json there).")
    hf = json.loads((model / "config.json").read_text())
    values = {k: int(args.get(k) or v) for k, v in DEFAULTS.items()}
    max_input = int(args.get("max_input_len") or values["max_seq_len"] - 1)
    if max_input >= values["max_seq_len"]:
        raise ConfigError(f"max_input_len ({max_input}) must be below max_seq_len ({values['max_seq_len']}).")
    lora = args.get("lora_config") or {}
    return {
        "hf_model_dir": str(model.resolve()),
        "pretrained_config": {"dtype": "float32", "vocab_size": hf.get("vocab_size")},
        "build_config": {
            "max_batch_size": values["max_batch_size"], "max_input_len": max_input,
            "max_seq_len": values["max_seq_len"], "max_num_tokens": values["max_num_tokens"], "max_beam_width": 1,
            "lora_config": {"lora_target_modules": list(lora.get("lora_target_modules") or ALL_MODULES),
                            "max_lora_rank": int(lora.get("max_lora_rank") or 64)} if lora else {},
        },
    }


def kv_params(args: dict) -> dict:
    """The CPU engine's KV parameters (cpu_runtime/engine/kv.py names) from kv_cache_config."""
    kv = args.get("kv_cache_config") or {}
    params = {"enable_kv_cache_reuse": str(bool(kv.get("enable_block_reuse", True))).lower()}
    if kv.get("free_gpu_memory_fraction") is not None:
        params["kv_cache_free_gpu_mem_fraction"] = str(kv["free_gpu_memory_fraction"])
    if kv.get("max_tokens") is not None:
        params["max_tokens_in_paged_kv_cache"] = str(kv["max_tokens"])
    return params


def max_cpu_loras(args: dict) -> int | None:
    lora = args.get("lora_config")
    if not lora:
        return None
    return int(lora.get("max_cpu_loras") or DEFAULT_MAX_CPU_LORAS)
