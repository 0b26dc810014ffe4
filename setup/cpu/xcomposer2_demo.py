"""The InternLM-XComposer2 CPU twin: the community topology (preprocessing runs the visual step itself, one
<ImageHere>, Partial LoRA on every request) served on the CPU by a real tritonserver.

The tensorrt_llm slot is the CPU engine with Partial LoRA on (adapters apply only at prompt-table rows); the
visual step in preprocessing is the CPU perception encoder, reading the family's 490 x 490 CLIP-normalised pixels.
The model's own adapter (adapters/xcomposer2/xc2-partial) is sent by the app: weights once, then its task id.
Settings: setup/data/xcomposer2_demo.yaml.
"""

from __future__ import annotations

import json
import shutil
from dataclasses import dataclass, replace
from pathlib import Path

from setup.catalog.families import get_family
from setup.cpu.encoder import build_cpu_encoder
from setup.cpu.engine import CpuEngineSpec, build_cpu_engine
from setup.cpu.model import model_dir
from setup.cpu.pacing import PacingSpec, add_pacing_model
from setup.paths import DATA_DIR, PROJECT_ROOT, TEMPLATES_DIR
from setup.repo.writer import DeploymentConfig, write_repository
from setup.shipped import shipped_yaml

TWIN_CONFIG = DATA_DIR / "xcomposer2_demo.yaml"
LAYOUT_PREPROCESSING = TEMPLATES_DIR / "internlm_xcomposer2" / "preprocessing" / "1" / "model.py"
COPIED_AS = "xcomposer2_preprocessing.py"  # the layout's preprocessing, imported by the twin's model.py


@dataclass(frozen=True)
class TwinSettings:
    """The twin section of setup/data/xcomposer2_demo.yaml."""

    pixels_family: str
    encoder_family: str
    engine_folder: str
    encoder_folder: str
    model_adapter: str
    adapters_dir: str

    @property
    def adapters_path(self) -> Path:
        return PROJECT_ROOT / self.adapters_dir


def _raw() -> dict:
    return shipped_yaml(TWIN_CONFIG.name)


def twin_settings() -> TwinSettings:
    """What the twin is made of (engine and encoder folders, its adapter and adapters folder)."""
    return TwinSettings(**_raw()["twin"])


def twin_encoder_family():
    """The encoder's family: the CPU demo's perception and row count, with XComposer2's pixels."""
    settings = twin_settings()
    return replace(get_family(settings.encoder_family), preprocess=get_family(settings.pixels_family).preprocess)


def xcomposer2_demo_config(engine: Path, encoder: Path, tokens: int, overrides: dict | None = None) -> DeploymentConfig:
    raw = _raw()
    config = DeploymentConfig(**{k: v for k, v in raw.items() if k != "twin"})
    config.parameters.update(engine_dir=str(engine), tokenizer_dir=str(model_dir()),
                             vit_plan_dir=str(encoder / "config.json"), tokens_per_image=tokens)
    config.parameters.update(overrides or {})
    return config


def write_xcomposer2_demo_repository(out: Path, overrides: dict | None = None, log=print,
                                     pacing_rate: float | None = None) -> Path:
    """Prepare the engine (Partial LoRA on) and the encoder, (re)write the twin's repository at `out`; its path."""
    settings, family = twin_settings(), twin_encoder_family()
    tokens = int(family.visual_tokens_per_image)
    spec = CpuEngineSpec()
    spec = replace(spec, max_prompt_embedding_table_size=spec.max_batch_size * tokens, has_partial_lora_mask=True,
                   folder=settings.engine_folder)
    engine = build_cpu_engine(spec, log=log)
    hidden = json.loads((engine / "config.json").read_text())["pretrained_config"]["hidden_size"]
    encoder = build_cpu_encoder(family, 1, hidden, folder=settings.encoder_folder)
    repo = write_repository(xcomposer2_demo_config(engine, encoder, tokens, overrides), Path(out), force=True)
    code = repo / "preprocessing" / "1"
    shutil.copyfile(LAYOUT_PREPROCESSING, code / COPIED_AS)  # the encoder's code came with the template's runtime
    if pacing_rate is not None:
        add_pacing_model(repo, PacingSpec(tokens_per_second=pacing_rate))
    return repo
