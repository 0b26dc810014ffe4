"""Consistency checks of a multimodal repository, run by the writer before anything is written.

The backend's preprocessing derives tokens per image from the LLM engine as
max_prompt_embedding_table_size // max_batch_size // max_num_images, so the engine must have been
built with exactly max_batch_size x visual tokens per image x max_num_images; anything else
silently shifts every prompt. These checks turn such mismatches into one clear message.

The visual engine's rows per image must be the family's T too (#47 item 14: another VILA size makes other rows
and silently misaligns the table). Its config.json says so where the builder records it: our CPU encoder's
builder_config.num_visual_features, or builder_config.output_shape [batch, rows, hidden] of the 0.19+ builder
(multimodal_builder.py). The 0.12-0.18 builders record only model_type and precision; then the GPU
multimodal_encoders checks the engine's own output shape when it starts.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from setup.catalog.families import Family, FamilyError, family_for_model_type, get_family
from setup.repo.messages import (
    MSG_CONFIG_UNREADABLE,
    MSG_FAMILY_MISMATCH,
    MSG_MARKER,
    MSG_MAX_IMAGES,
    MSG_NEEDS,
    MSG_NO_TOKENS,
    MSG_SERVER_PROCESSOR,
    MSG_TABLE_SIZE,
    MSG_VISUAL_ROWS,
)


@dataclass(frozen=True)
class MultimodalLayout:
    family: Family
    max_num_images: int
    tokens_per_image: int
    table_size: int
    max_batch_size: int


def read_json(path: Path) -> dict:
    try:
        return json.loads(Path(path).read_text())
    except (OSError, ValueError) as exc:
        raise ValueError(MSG_CONFIG_UNREADABLE.format(path=path, detail=exc)) from None


def _required(values: dict, name: str, why: str) -> str:
    value = values.get(name)
    if value is None or str(value) == "":
        raise ValueError(MSG_NEEDS.format(name=name, why=why))
    return str(value)


def visual_model_type(multimodal_model_path: str | Path) -> str:
    """builder_config.model_type of a visual engine folder's config.json."""
    path = Path(multimodal_model_path) / "config.json"
    config = read_json(path)
    model_type = config.get("builder_config", {}).get("model_type")
    if not model_type:
        raise ValueError(MSG_CONFIG_UNREADABLE.format(path=path, detail="no builder_config.model_type"))
    return str(model_type)


def visual_rows(multimodal_model_path: str | Path) -> tuple[int, str] | None:
    """(rows per image, where it was read) from a visual engine folder's config.json; None when it records none."""
    builder = read_json(Path(multimodal_model_path) / "config.json").get("builder_config", {})
    if builder.get("num_visual_features"):
        return int(builder["num_visual_features"]), "builder_config.num_visual_features"
    shape = builder.get("output_shape")
    if isinstance(shape, list) and len(shape) == 3 and int(shape[1]) > 0:
        return int(shape[1]), f"builder_config.output_shape {shape}"
    return None


def check_multimodal(values: dict) -> MultimodalLayout:
    """Check the filled parameters of a multimodal repository; ValueError with the fix on failure."""
    engine = Path(_required(values, "engine_dir", "the LLM engine folder with config.json"))
    visual = Path(_required(values, "multimodal_model_path", "the visual engine folder with config.json"))
    try:
        images = int(_required(values, "max_num_images", "images per request"))
    except ValueError as exc:
        if "needs" in str(exc):
            raise
        raise ValueError("max_num_images must be a whole number.") from None
    if images < 1:
        raise ValueError("max_num_images must be at least 1.")
    model_type = visual_model_type(visual)
    try:
        found = family_for_model_type(model_type)
        family = get_family(str(values["multimodal_family"])) if values.get("multimodal_family") else found
    except FamilyError as exc:
        raise ValueError(str(exc)) from None
    if family.model_type != model_type:
        raise ValueError(MSG_FAMILY_MISMATCH.format(given=family.name, path=visual, model_type=model_type,
                                                    found=found.name))
    if family.image_input != "image_input":
        raise ValueError(MSG_SERVER_PROCESSOR.format(family=family.display_name, kind=family.image_input))
    marker = values.get("image_marker") or family.prompt.image_marker
    if marker != family.prompt.image_marker:
        raise ValueError(MSG_MARKER.format(given=marker, family=family.display_name, marker=family.prompt.image_marker))
    if family.needs_hf_model_path:
        _required(values, "hf_model_path", f"{family.display_name} reads the Hugging Face checkpoint")
    if images > family.max_num_images:
        raise ValueError(MSG_MAX_IMAGES.format(images=images, family=family.display_name, limit=family.max_num_images))
    if not family.visual_tokens_per_image:
        raise ValueError(MSG_NO_TOKENS.format(family=family.display_name))
    build = read_json(engine / "config.json").get("build_config", {})
    batch = int(build.get("max_batch_size", 0))
    table = int(build.get("max_prompt_embedding_table_size", 0) or 0)
    tokens = family.visual_tokens_per_image
    rows = visual_rows(visual)
    if rows is not None and rows[0] != tokens:
        raise ValueError(MSG_VISUAL_ROWS.format(path=visual, rows=rows[0], source=rows[1], family=family.display_name,
                                                tokens=tokens))
    expected = batch * tokens * images
    if table != expected:
        fits = table // (batch * tokens) if batch and tokens else 0
        alternative = (f", or set max_num_images to {fits}" if fits >= 1 and fits * batch * tokens == table else "")
        raise ValueError(MSG_TABLE_SIZE.format(engine=engine, table=table, batch=batch, tokens=tokens,
                                               family=family.display_name, images=images, expected=expected,
                                               alternative=alternative))
    return MultimodalLayout(family=family, max_num_images=images, tokens_per_image=tokens, table_size=table,
                            max_batch_size=batch)
