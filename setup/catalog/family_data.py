"""Model families as data: one YAML file per family, setup/data/families/<id>.yaml, read once.

A file has three parts:

- top level, shared: `id` (the file name, hyphenated), `display_name`, `example_checkpoint`;
- top level, images (setup/catalog/families.py, for the app and the repository writer): `model_type` (what the
  visual engine records as builder_config.model_type), `image_input`, `preprocess`, `visual_tokens_per_image`,
  `max_num_images`, `prompt`, `needs_hf_model_path`, ...; present when the app can send images to the family;
- `build:` (setup/catalog/builds.py, for the planner and the build page): convert scripts per TensorRT-LLM
  era, build defaults and engines, the visual builder, dtypes, LoRA, Triton support notes; present when the
  family is built with TensorRT-LLM.

A fact both parts need is written once, at the top level; the build view fills it in (`SHARED_FACTS`).
The build section names it only where the top level leaves it open (null), for example the token budget
of a family whose image tokens the server's processor counts.
"""

from __future__ import annotations

import copy
from functools import cache
from pathlib import Path

import yaml

from setup.paths import DATA_DIR

FAMILIES_DIR = DATA_DIR / "families"
IMAGE_KEY = "image_input"  # a file with this key is an image family
BUILD_KEY = "build"  # a file with this key is in the build catalogue

# (top-level key, the build-section path it fills): written once, at the top level.
SHARED_FACTS = (
    ("visual_tokens_per_image", ("visual", "tokens_per_image")),
    ("max_num_images", ("visual", "max_images")),
    ("preprocess.size", ("visual", "image_size")),
    ("needs_hf_model_path", ("triton", "hf_model_path")),
    ("encoder_input_features_data_type", ("triton", "parameters", "encoder_input_features_data_type")),
)


class FamilyError(ValueError):
    """A family file is missing or malformed."""


def top_value(raw: dict, dotted: str):
    """The top-level value at `dotted` ("preprocess.size"), or None."""
    value = raw
    for part in dotted.split("."):
        value = value.get(part) if isinstance(value, dict) else None
    return value


def _build_value(build: dict, path: tuple[str, ...]):
    value = build
    for part in path:
        value = value.get(part) if isinstance(value, dict) else None
    return value


def _check(raw: object, path: Path) -> dict:
    if not isinstance(raw, dict):
        raise FamilyError(f"{path}: expected a mapping of family fields.")
    if raw.get("id") != path.stem:
        raise FamilyError(f"{path}: id '{raw.get('id')}' differs from the file name.")
    if IMAGE_KEY not in raw and BUILD_KEY not in raw:
        raise FamilyError(f"{path}: needs image fields ({IMAGE_KEY}, ...) or a {BUILD_KEY} section, or both.")
    build = raw.get(BUILD_KEY)
    if build is not None and not isinstance(build, dict):
        raise FamilyError(f"{path}: {BUILD_KEY} must be a mapping.")
    for top, inner in SHARED_FACTS:
        if build and top_value(raw, top) is not None and _build_value(build, inner) is not None:
            raise FamilyError(f"{path}: {top} is given at the top level; remove "
                              f"{BUILD_KEY}.{'.'.join(inner)} (the build catalogue takes it from there).")
    return raw


@cache
def _read(folder: Path) -> dict[str, dict]:
    return {path.stem: _check(yaml.safe_load(path.read_text()), path)
            for path in sorted(folder.glob("*.yaml"))}


def family_files(folder: Path = FAMILIES_DIR) -> dict[str, dict]:
    """Every family file of `folder` by id, in file-name order (each file is parsed once; this is a copy)."""
    return copy.deepcopy(_read(Path(folder)))
