"""CPU twins of the families the backend's own templates serve (`python -m app --demo --twin <family>` for
blip2-opt, llava-1.5, vila, gpt, llama): the family's own repository (its template, defaults and Triton parameters,
as `repo --family` writes it) on a real tritonserver, with the CPU engine in the tensorrt_llm slot and, for image
families, the CPU image encoder in multimodal_encoders.

The engine is built with the family's build defaults (batch size, input and sequence lengths) and, for an image
family, a prompt table of exactly max_batch_size x the family's visual tokens per image x its images, as a
TensorRT-LLM build of that family must be. The encoder folder records the family's visual model type, pixels
(size, mean, std) and token count, and describes pictures with the cpu-ocr perception settings; its reports name
the family format (`twin.format`), which the app shows in "What the model saw". Text families get no encoder: the
app refuses their images.
"""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

from setup.catalog.builds import families as build_families
from setup.catalog.families import Family, get_family
from setup.cpu.encoder import build_cpu_encoder
from setup.cpu.engine import ENGINE_FOLDER, CpuEngineSpec, build_cpu_engine
from setup.cpu.messages import MSG_NOT_TEMPLATE_TWIN
from setup.cpu.model import model_dir
from setup.cpu.pacing import PacingSpec, add_pacing_model
from setup.paths import DATA_DIR
from setup.repo.writer import DeploymentConfig, RepoError, family_deployment, write_repository

DEMO_CONFIG = DATA_DIR / "demo_deployment.yaml"  # the demo's serving settings (batch size, streaming, LoRA cache)
TWIN_TEMPLATES = ("multimodal", "inflight_batcher_llm")  # the backend's own templates (the runner twins are apart)
ENCODER_FAMILY = "cpu-ocr"  # perception and OCR settings of the twins' encoder
IMAGE_PARAMETERS = ("multimodal_family", "max_num_images")  # of the demo's settings: only image twins keep them
# each image's rows: zero rows, then the description (cpu_runtime/encoder/ocr.py); with newline rows after it, as
# the cpu-ocr demo's 64 rows have, SmolLM2-135M answers nothing once a block has hundreds of rows (LLaVA's 576)
TWIN_PADDING = "zero_rows_first"


def template_twins() -> tuple[str, ...]:
    """The families with a twin here: served by a backend template in TWIN_TEMPLATES (not refused), and, for image
    families, with client-made pixels (`image_input`; families needing the server's HF processor are not these)."""
    out = []
    for family in build_families().values():
        triton = family.triton
        if triton.get("template") not in TWIN_TEMPLATES or triton.get("refused") or not triton.get("since"):
            continue
        if family.is_multimodal and get_family(family.id).image_input != "image_input":
            continue
        out.append(family.id)
    return tuple(out)


def image_family(family_id: str) -> Family | None:
    """The family's image entry (None for a text family)."""
    return get_family(family_id) if build_families()[family_id].is_multimodal else None


def format_text(family: Family) -> str:
    """What the twin takes from the family file, in one line (shown in "What the model saw")."""
    spec = family.preprocess
    pixels = f"{spec.width}x{spec.height} px {spec.mode}" if spec else "no pixels"
    return (f"{family.name}: {pixels}, {family.visual_tokens_per_image} rows per image, "
            f"user text {family.prompt.user!r}")


def twin_engine_spec(family_id: str) -> CpuEngineSpec:
    """The CPU engine built as the family's defaults say (its own folder beside the demo's)."""
    defaults = build_families()[family_id].defaults
    batch = int(defaults["max_batch_size"])
    image = image_family(family_id)
    table = batch * int(image.visual_tokens_per_image) * int(defaults.get("max_num_images") or image.max_num_images) \
        if image is not None else 0
    return CpuEngineSpec(max_batch_size=batch, max_input_len=int(defaults["max_input_len"]),
                         max_seq_len=int(defaults["max_seq_len"]), max_prompt_embedding_table_size=table,
                         folder=f"{ENGINE_FOLDER}-{family_id}")


def encoder_family(family: Family) -> Family:
    """The encoder's family: cpu-ocr's perception and OCR settings with the family's model type, pixels and rows."""
    return replace(get_family(ENCODER_FAMILY), model_type=family.model_type, preprocess=family.preprocess,
                   visual_tokens_per_image=family.visual_tokens_per_image)


def twin_config(family_id: str, engine: Path, encoder: Path | None, images: int) -> DeploymentConfig:
    """The family's repository settings (template, its defaults and Triton parameters) with the demo's serving
    settings and the CPU parts' folders."""
    template, parameters = family_deployment(family_id)
    demo = DeploymentConfig.from_yaml(DEMO_CONFIG)
    parameters = {**{k: v for k, v in demo.parameters.items() if k not in IMAGE_PARAMETERS}, **parameters,
                  "engine_dir": str(engine), "tokenizer_dir": str(model_dir())}
    if encoder is not None:
        parameters.update(multimodal_model_path=str(encoder), hf_model_path=str(model_dir()), max_num_images=images)
    return DeploymentConfig(template=template, engine="cpu", streaming=demo.streaming, parameters=parameters)


def write_family_twin_repository(out: Path, family_id: str, log=print, pacing_rate: float | None = None) -> Path:
    """Prepare the family's CPU engine (and encoder), (re)write its twin's repository at `out`; return its path."""
    known = template_twins()
    if family_id not in known:
        raise RepoError(MSG_NOT_TEMPLATE_TWIN.format(family=family_id, known=", ".join(known)))
    spec = twin_engine_spec(family_id)
    engine = build_cpu_engine(spec, log=log)
    image, encoder, images = image_family(family_id), None, 0
    if image is not None:
        images = spec.max_prompt_embedding_table_size // (spec.max_batch_size * int(image.visual_tokens_per_image))
        hidden = json.loads((engine / "config.json").read_text())["pretrained_config"]["hidden_size"]
        encoder = build_cpu_encoder(encoder_family(image), images, hidden, folder=f"cpu-twin-{family_id}-encoder",
                                    twin={"family": family_id, "format": format_text(image),
                                          "padding": TWIN_PADDING})
    repo = write_repository(twin_config(family_id, engine, encoder, images), Path(out), force=True)
    if pacing_rate is not None:
        add_pacing_model(repo, PacingSpec(tokens_per_second=pacing_rate))
    return repo
