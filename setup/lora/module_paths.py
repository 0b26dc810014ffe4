"""Where a LoRA weight sits in a model, from its name: the language model's layers, a tower beside it (a VLM's
vision encoder or projector), or elsewhere. Used by the conversion (a tower is no row of the language model) and
the audit (it is dropped)."""

from __future__ import annotations

import re

LANGUAGE, TOWER, EMBEDDING, OTHER = "language", "tower", "embedding", "other"

# Path components that name a part of a multimodal model other than its language model (PEFT key paths of
# LLaVA, Mllama, Qwen2-VL, Idefics, InternVL, Phi-3-vision, BLIP-2 ...).
TOWER_NAMES = frozenset({"vision_model", "vision_tower", "visual", "vision_encoder", "image_encoder", "vpm", "vit",
                         "multi_modal_projector", "mm_projector", "img_projection", "vision_embed_tokens",
                         "qformer", "audio_tower", "audio_encoder", "connector", "mlp1"})
LANGUAGE_PATTERN = re.compile(r"(?:^|\.)(?:layers|h|blocks)\.(\d+)\.(?:.+\.)?(\w+)$")


def classify(path: str) -> tuple[str, str, int | None]:
    """(place, name, layer) of a module path with the PEFT prefix removed."""
    components = path.split(".")
    for i, component in enumerate(components):
        if component in TOWER_NAMES:
            group = ".".join(components[: i + 1]).removeprefix("model.")
            return TOWER, f"{group}.*", None
    match = LANGUAGE_PATTERN.search(path)
    if match:
        return LANGUAGE, match.group(2), int(match.group(1))
    return OTHER, components[-1], None


def is_tower_key(key: str) -> bool:
    """Whether a weight name belongs to a tower beside the language model (a vision encoder, a projector)."""
    return classify(key.removeprefix("base_model.model."))[0] == TOWER
