"""The image view of the model families (setup/catalog/family_data.py): preprocessing, tokens, prompt layout.

Every family file with an `image_input` is an image family; its top-level fields are read here. The build
catalogue (setup/catalog/builds.py) reads the `build:` section of the same files. Nothing here knows a
family by name.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cache
from pathlib import Path

from setup.catalog.family_data import BUILD_KEY, FAMILIES_DIR, IMAGE_KEY, FamilyError, family_files

__all__ = ["FAMILIES_DIR", "IMAGE_INPUT_KINDS", "Family", "FamilyError", "ImageSpec", "PromptLayout",
           "families", "family_for_model_type", "get_family"]

IMAGE_INPUT_KINDS = ("image_input", "image_bytes_input", "image_url_input")
RESIZE_MODES = ("stretch", "shortest_side_crop", "letterbox")
RESAMPLE = ("bicubic", "bilinear", "nearest", "lanczos")


@dataclass(frozen=True)
class ImageSpec:
    """How pixels are made for one family: target size, resize mode, scaling and normalisation."""

    height: int
    width: int
    mode: str = "stretch"
    resample: str = "bicubic"
    rescale: float = 1 / 255
    mean: tuple[float, float, float] = (0.0, 0.0, 0.0)
    std: tuple[float, float, float] = (1.0, 1.0, 1.0)
    pad_color: tuple[int, int, int] = (0, 0, 0)
    as_bytes: bool = False
    draft_decode: bool = False

    @classmethod
    def from_dict(cls, raw: dict, where: str) -> ImageSpec:
        try:
            height, width = (int(v) for v in raw["size"])
            spec = cls(
                height=height, width=width, mode=raw.get("mode", "stretch"), resample=raw.get("resample", "bicubic"),
                rescale=float(raw.get("rescale", 1 / 255)),
                mean=tuple(float(v) for v in raw.get("mean", (0.0, 0.0, 0.0))),
                std=tuple(float(v) for v in raw.get("std", (1.0, 1.0, 1.0))),
                pad_color=tuple(int(v) for v in raw.get("pad_color", (0, 0, 0))),
                as_bytes=bool(raw.get("as_bytes", False)), draft_decode=bool(raw.get("draft_decode", False)),
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise FamilyError(f"{where}: preprocess needs size [height, width] and numeric fields ({exc}).") from None
        if spec.mode not in RESIZE_MODES:
            raise FamilyError(f"{where}: preprocess.mode must be one of {', '.join(RESIZE_MODES)}.")
        if spec.resample not in RESAMPLE:
            raise FamilyError(f"{where}: preprocess.resample must be one of {', '.join(RESAMPLE)}.")
        if len(spec.mean) != 3 or len(spec.std) != 3 or len(spec.pad_color) != 3 or min(spec.std) <= 0:
            raise FamilyError(f"{where}: mean, std and pad_color need 3 values each (std > 0).")
        if spec.height <= 0 or spec.width <= 0:
            raise FamilyError(f"{where}: preprocess.size must be positive.")
        return spec


@dataclass(frozen=True)
class PromptLayout:
    """Where image markers go in the user's text, and which chat template wraps the turn."""

    image_marker: str = "<image>"
    user: str = "{images}\n{text}"
    chat_template: str | None = None

    def user_text(self, text: str, images: int) -> str:
        if images == 0:
            return text
        return self.user.format(images=self.image_marker * images, text=text)


@dataclass(frozen=True)
class Family:
    """One image family; `name` is the family id (the file name)."""

    name: str
    display_name: str
    model_type: str
    image_input: str
    preprocess: ImageSpec | None
    visual_tokens_per_image: int | None
    max_num_images: int
    prompt: PromptLayout
    needs_hf_model_path: bool = False
    encoder_input_features_data_type: str = "TYPE_FP16"
    image_required: bool = False  # every request must carry an image (no text-only turns)
    extra: dict = field(default_factory=dict)


def _parse(raw: dict, where: str) -> Family:
    known = {"id", "display_name", "model_type", "image_input", "preprocess", "visual_tokens_per_image",
             "max_num_images", "prompt", "needs_hf_model_path", "encoder_input_features_data_type", "image_required",
             BUILD_KEY}
    missing = [k for k in ("id", "model_type", "image_input", "max_num_images") if k not in raw]
    if missing:
        raise FamilyError(f"{where}: missing {', '.join(missing)}.")
    if raw["image_input"] not in IMAGE_INPUT_KINDS:
        raise FamilyError(f"{where}: image_input must be one of {', '.join(IMAGE_INPUT_KINDS)}.")
    preprocess = ImageSpec.from_dict(raw["preprocess"], where) if raw.get("preprocess") else None
    if raw["image_input"] == "image_input" and (preprocess is None or preprocess.as_bytes):
        raise FamilyError(f"{where}: image_input families need a preprocess entry that makes float pixels.")
    tokens = raw.get("visual_tokens_per_image")
    prompt = raw.get("prompt") or {}
    return Family(
        name=str(raw["id"]), display_name=str(raw.get("display_name", raw["id"])),
        model_type=str(raw["model_type"]), image_input=raw["image_input"], preprocess=preprocess,
        visual_tokens_per_image=None if tokens is None else int(tokens), max_num_images=int(raw["max_num_images"]),
        prompt=PromptLayout(image_marker=prompt.get("image_marker", "<image>"),
                            user=prompt.get("user", "{images}\n{text}"), chat_template=prompt.get("chat_template")),
        needs_hf_model_path=bool(raw.get("needs_hf_model_path", False)),
        encoder_input_features_data_type=raw.get("encoder_input_features_data_type", "TYPE_FP16"),
        image_required=bool(raw.get("image_required", False)),
        extra={k: v for k, v in raw.items() if k not in known},
    )


@cache
def _load_all(folder: Path) -> dict[str, Family]:
    return {family_id: _parse(raw, str(folder / f"{family_id}.yaml"))
            for family_id, raw in family_files(folder).items() if IMAGE_KEY in raw}


def families(folder: Path = FAMILIES_DIR) -> dict[str, Family]:
    """Every image family by id (families without image fields, such as text models, are left out)."""
    return _load_all(Path(folder))


def get_family(name: str, folder: Path = FAMILIES_DIR) -> Family:
    """One image family by id (FamilyError names the known ones)."""
    known = families(folder)
    if name not in known:
        raise FamilyError(f"Unknown model family '{name}'; known: {', '.join(known)}.")
    return known[name]


def family_for_model_type(model_type: str, folder: Path = FAMILIES_DIR) -> Family:
    """The family whose visual engine reports `model_type` (builder_config.model_type)."""
    for family in families(folder).values():
        if family.model_type == model_type:
            return family
    raise FamilyError(f"No model family has model_type '{model_type}'.")
