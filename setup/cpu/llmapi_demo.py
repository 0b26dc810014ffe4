"""The CPU demo of the Triton `llmapi` topology: a real llmapi repository (config.pbtxt of the latest recorded
release, 1/model.yaml) whose Python model is the CPU stand-in, on SmolLM2 with LoRA by path and images.

The model's limits are the engine-path demo's (setup/cpu/engine.py CpuEngineSpec), so both demo kinds take
the same prompts.
"""

from __future__ import annotations

import json
from pathlib import Path

from setup.catalog.families import get_family
from setup.cpu.encoder import build_cpu_encoder
from setup.cpu.engine import ALL_LORA_MODULES, CpuEngineSpec, build_cpu_engine
from setup.cpu.model import model_dir
from setup.cpu.pacing import PacingSpec, add_pacing_model
from setup.repo.llmapi import LlmApiRepoConfig, write_llmapi_repository
from setup.repo.writer import RepoError

DEMO_FAMILY = "cpu-ocr"
DEMO_MAX_IMAGES = 2
DEMO_LORA = {"lora_target_modules": list(ALL_LORA_MODULES), "max_lora_rank": CpuEngineSpec.max_lora_rank,
             "max_loras": 4, "max_cpu_loras": 4}


def llmapi_demo_config(encoder: Path, overrides: dict | None = None) -> LlmApiRepoConfig:
    spec = CpuEngineSpec()
    config = LlmApiRepoConfig(model=str(model_dir()), engine="cpu", max_batch_size=spec.max_batch_size,
                              max_num_tokens=spec.max_num_tokens, max_input_len=spec.max_input_len,
                              max_seq_len=spec.max_seq_len, lora=dict(DEMO_LORA), multimodal=True,
                              parameters={"cpu_ocr_encoder_dir": str(encoder)})
    for key, value in (overrides or {}).items():
        if not hasattr(config, key):
            raise RepoError(f"'{key}' is not a field of an llmapi repository config (setup/repo/llmapi.py).")
        setattr(config, key, value)
    return config


def write_llmapi_demo_repository(out: Path, overrides: dict | None = None, log=print,
                                 pacing_rate: float | None = None) -> Path:
    """Prepare the model and the OCR encoder, (re)write the llmapi demo repository at `out`; its path."""
    engine = build_cpu_engine(log=log)  # the converted weights, and the hidden size the encoder needs
    hidden = json.loads((engine / "config.json").read_text())["pretrained_config"]["hidden_size"]
    encoder = build_cpu_encoder(get_family(DEMO_FAMILY), DEMO_MAX_IMAGES, hidden)
    repo = write_llmapi_repository(llmapi_demo_config(encoder, overrides), Path(out), force=True)
    if pacing_rate is not None:
        add_pacing_model(repo, PacingSpec(tokens_per_second=pacing_rate))
    return repo
