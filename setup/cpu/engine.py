"""'Build' the CPU engine: a TensorRT-LLM style engine folder whose config.json points at HF weights.

The CPU engine reads the same `build_config` fields a TensorRT-LLM engine has (max input and
sequence lengths, batch size, LoRA target modules and rank, prompt-table size), so limits and LoRA
checks work the same way against a CPU or a GPU deployment. `max_batch_size` is how many requests
the engine batches in flight and `max_num_tokens` how many tokens one step (forward pass) takes at
most: prompts longer than what is left of it are prefilled in chunks over several steps.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path

from setup.cpu.model import model_dir, prepare_cpu_model
from setup.paths import cache_dir

ENGINE_FOLDER = "smollm2-135m-cpu"
ALL_LORA_MODULES = ("attn_q", "attn_k", "attn_v", "attn_dense", "mlp_h_to_4h", "mlp_4h_to_h", "mlp_gate")


@dataclass(frozen=True)
class CpuEngineSpec:
    """Build options of the CPU engine, named as trtllm-build names them."""

    max_batch_size: int = 32
    max_input_len: int = 2048
    max_seq_len: int = 3072
    max_num_tokens: int = 256  # per step; bounds how long a prompt chunk stalls the running streams
    max_lora_rank: int = 64
    lora_target_modules: tuple[str, ...] = ALL_LORA_MODULES
    max_prompt_embedding_table_size: int = 32 * 64  # the demo sizes it from its image family (setup/cpu/demo.py)
    # Partial LoRA (InternLM-XComposer2): adapters apply only at prompt-table rows, as a converted checkpoint
    # records it (pretrained_config.has_partial_lora_mask); the XComposer2 twin's engine has it on.
    has_partial_lora_mask: bool = False
    folder: str = ENGINE_FOLDER  # engines with other settings live beside the demo's, never over it


def engine_dir(root: Path | None = None, folder: str = ENGINE_FOLDER) -> Path:
    return (root or cache_dir()) / "engines" / folder


def build_cpu_engine(spec: CpuEngineSpec = CpuEngineSpec(), root: Path | None = None, log=print) -> Path:
    """Prepare the weights if needed and write the engine's config.json; return the engine folder."""
    weights = prepare_cpu_model(root, log=log)
    hf_config = json.loads((weights / "config.json").read_text())
    out = engine_dir(root, spec.folder)
    out.mkdir(parents=True, exist_ok=True)
    config = {
        "version": "cpu-engine-1",
        "hf_model_dir": os.path.relpath(model_dir(root), out),
        "pretrained_config": {
            "architecture": hf_config["architectures"][0],
            # The tensor contract carries LoRA weights and prompt tables as FP16; compute is FP32.
            "dtype": "float16",
            "vocab_size": hf_config["vocab_size"],
            "hidden_size": hf_config["hidden_size"],
            "intermediate_size": hf_config["intermediate_size"],
            "num_hidden_layers": hf_config["num_hidden_layers"],
            "num_attention_heads": hf_config["num_attention_heads"],
            "num_key_value_heads": hf_config["num_key_value_heads"],
            "head_size": hf_config.get("head_dim", hf_config["hidden_size"] // hf_config["num_attention_heads"]),
            "mapping": {"world_size": 1, "tp_size": 1, "pp_size": 1},
            **({"has_partial_lora_mask": True} if spec.has_partial_lora_mask else {}),
        },
        "build_config": {
            "max_batch_size": spec.max_batch_size,
            "max_input_len": spec.max_input_len,
            "max_seq_len": spec.max_seq_len,
            "max_num_tokens": spec.max_num_tokens,
            "max_beam_width": 1,
            "max_prompt_embedding_table_size": spec.max_prompt_embedding_table_size,
            "lora_config": {"lora_target_modules": list(spec.lora_target_modules), "max_lora_rank": spec.max_lora_rank},
            "plugin_config": {"lora_plugin": "float16"},
        },
    }
    tmp = out / f"config.json.{os.getpid()}.tmp"  # its own: several processes may write it at once
    tmp.write_text(json.dumps(config, indent=2) + "\n")
    tmp.replace(out / "config.json")
    return out
