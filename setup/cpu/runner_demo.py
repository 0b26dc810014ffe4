"""CPU twins of the runner topology (python -m app --demo --twin <family>, for the families only
TensorRT-LLM's run.py served): the multimodal_runner repository on a real tritonserver with cpu_runtime's runner
stand-in in place of MultimodalModelRunner, the CPU engine as its LLM and the CPU image encoder as its vision step.

Each family's visual folder is the CPU encoder's (perception and OCR settings of cpu-ocr) with the family's visual
model type and its `runner_format` (prompt, image size, token count) from the family file, so the twin applies
the family's own format and says so in its replies' figures. Several families can share one repository (one model
per family, named runner-<family>).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from setup.catalog.builds import families as build_families
from setup.catalog.families import get_family
from setup.catalog.family_data import family_files
from setup.cpu.encoder import build_cpu_encoder
from setup.cpu.engine import build_cpu_engine
from setup.cpu.messages import MSG_NOT_RUNNER
from setup.cpu.model import model_dir
from setup.cpu.pacing import PacingSpec, add_pacing_model
from setup.repo.runner_checks import recorded_model_types
from setup.repo.writer import DeploymentConfig, RepoError, family_parameters, write_repository

ENCODER_FAMILY = "cpu-ocr"  # perception and OCR settings of the encoder
STANDIN_CLASS = "cpu_runner:MultimodalModelRunner"  # model_repo_templates/cpu_engine/multimodal_runner/1/cpu_runner.py
MODEL = "multimodal_runner"


def runner_families() -> tuple[str, ...]:
    """The families served by the runner topology (their Triton section says topology: runner)."""
    return tuple(f.id for f in build_families().values() if f.triton.get("topology") == "runner")


def model_name(family: str, several: bool) -> str:
    return f"runner-{family}" if several else MODEL


def build_twin_vision(family: str, hidden_size: int) -> Path:
    """The family's visual folder: config.json with the family's visual model type and runner_format, and the CPU
    encoder the twin's vision step runs in encoder/."""
    raw = family_files()[family]
    encoder = build_cpu_encoder(get_family(ENCODER_FAMILY), 1, hidden_size, folder=f"cpu-runner-{family}/encoder")
    folder = encoder.parent
    builder = {"model_type": sorted(recorded_model_types(family))[0], "precision": "float16"}
    if raw["runner_format"].get("frames"):  # video-neva's runner reads builder_config.num_frames (-1: all)
        builder["num_frames"] = int(raw["runner_format"]["frames"])
    config = {"version": "cpu-runner-1", "builder_config": builder,
              "encoder": encoder.name, "runner_format": {"family": family, **raw["runner_format"]}}
    tmp = folder / "config.json.tmp"
    tmp.write_text(json.dumps(config, indent=2) + "\n")
    tmp.replace(folder / "config.json")
    return folder


def runner_demo_config(family: str, engine: Path, vision: Path) -> DeploymentConfig:
    parameters = {"runner_class": STANDIN_CLASS, "visual_engine_dir": str(vision), "llm_engine_dir": str(engine),
                  "hf_model_dir": str(model_dir()), "multimodal_family": family, "max_num_images": 1,
                  "decoupled_mode": True, **family_parameters(build_families()[family])}
    return DeploymentConfig(template="multimodal_runner", engine="cpu", streaming=False, parameters=parameters)


def write_runner_demo_repository(out: Path, families: tuple[str, ...] | str, log=print,
                                 pacing_rate: float | None = None) -> Path:
    """(Re)write at `out` the runner twin of one family (model multimodal_runner) or of several (runner-<family>)."""
    chosen = (families,) if isinstance(families, str) else tuple(families)
    known = runner_families()
    for family in chosen:
        if family not in known:
            raise RepoError(MSG_NOT_RUNNER.format(family=family, known=", ".join(known)))
    engine = build_cpu_engine(log=log)
    hidden = json.loads((engine / "config.json").read_text())["pretrained_config"]["hidden_size"]
    out = Path(out)
    staging = out.with_name(out.name + ".parts")
    shutil.rmtree(staging, ignore_errors=True)
    try:
        for family in chosen:
            config = runner_demo_config(family, engine, build_twin_vision(family, hidden))
            write_repository(config, staging / family, force=True)
        shutil.rmtree(out, ignore_errors=True)
        out.mkdir(parents=True)
        several = len(chosen) > 1
        for family in chosen:
            name = model_name(family, several)
            shutil.move(str(staging / family / MODEL), str(out / name))
            if several:
                config = out / name / "config.pbtxt"
                config.write_text(config.read_text().replace(f'name: "{MODEL}"', f'name: "{name}"', 1))
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    if pacing_rate is not None:
        add_pacing_model(out, PacingSpec(tokens_per_second=pacing_rate))
    return out
