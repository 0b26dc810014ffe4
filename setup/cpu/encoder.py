"""'Build' the CPU demo's visual encoder: a folder whose config.json describes the encoder.

It mirrors a TensorRT-LLM visual engine folder (config.json with builder_config.model_type and
precision), so the writer's checks and the multimodal_encoders model read it the same way; the
"engine" itself is the models inside wheels (EfficientNet-Lite0, OpenCV's cascades, the OCR models of
rapidocr-onnxruntime) plus the LLM's embeddings. The family's `perception` section turns on the
picture description (cpu_runtime/encoder/perception.py); without it the encoder reads text only.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from setup.catalog.families import Family
from setup.cpu.model import model_dir
from setup.paths import cache_dir

ENCODER_FOLDER = "cpu-ocr-encoder"


def encoder_dir(root: Path | None = None, folder: str = ENCODER_FOLDER) -> Path:
    return (root or cache_dir()) / "engines" / folder


def build_cpu_encoder(family: Family, max_num_images: int, hidden_size: int, root: Path | None = None,
                      folder: str = ENCODER_FOLDER, twin: dict | None = None) -> Path:
    """Write the encoder folder's config.json for `family` (the cpu-ocr entry, or one with its pixels replaced by
    another family's); return the folder. `twin` ({family, format}): the encoder is a family twin's, recorded
    under that family's model type, and its reports name the format."""
    spec = family.preprocess
    if spec is None or not family.visual_tokens_per_image:
        raise ValueError(f"{family.name} has no pixel preprocessing or token count; it cannot drive the CPU encoder.")
    out = encoder_dir(root, folder)
    out.mkdir(parents=True, exist_ok=True)
    config = {
        "version": "cpu-ocr-1",
        "hf_model_dir": os.path.relpath(model_dir(root), out),
        "builder_config": {
            "model_type": family.model_type,
            "precision": "float16",
            "max_batch_size": max_num_images,
            "num_visual_features": family.visual_tokens_per_image,
            "hidden_size": hidden_size,
            "image_size": [spec.height, spec.width],
            "rescale": spec.rescale,
            "mean": list(spec.mean),
            "std": list(spec.std),
        },
        "ocr": family.extra.get("ocr", {}),
        "perception": family.extra.get("perception", {}),
        **({"twin": dict(twin)} if twin else {}),
    }
    tmp = out / f"config.json.{os.getpid()}.tmp"  # its own: several processes may write it at once
    tmp.write_text(json.dumps(config, indent=2) + "\n")
    tmp.replace(out / "config.json")
    return out
