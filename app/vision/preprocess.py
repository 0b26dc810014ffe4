"""Per-family pixel preprocessing driven by an ImageSpec (setup/data/families/*.yaml).

Modes: `stretch` (resize straight to the target), `shortest_side_crop` (shorter side to the target,
then a centre crop, as CLIP processors do) and `letterbox` (fit inside, pad the rest with a colour).
Pixels are rescaled, normalised per channel and laid out channels-first, as the `image_input`
tensor of the TensorRT-LLM multimodal backend expects.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from PIL import Image

from setup.catalog.families import ImageSpec

_RESAMPLE = {
    "bicubic": Image.Resampling.BICUBIC,
    "bilinear": Image.Resampling.BILINEAR,
    "nearest": Image.Resampling.NEAREST,
    "lanczos": Image.Resampling.LANCZOS,
}


def _shortest_side_size(width: int, height: int, short_target: int) -> tuple[int, int]:
    """(width, height) with the shorter side at `short_target`; the longer side truncated like HF does."""
    if width <= height:
        return short_target, int(short_target * height / width)
    return int(short_target * width / height), short_target


def resize_image(image: Image.Image, spec: ImageSpec) -> Image.Image:
    """Resize (and crop or pad) an RGB image to spec.width x spec.height."""
    resample = _RESAMPLE[spec.resample]
    target = (spec.width, spec.height)
    if spec.mode == "stretch":
        return image if image.size == target else image.resize(target, resample=resample)
    if spec.mode == "shortest_side_crop":
        size = _shortest_side_size(*image.size, min(spec.width, spec.height))
        resized = image if image.size == size else image.resize(size, resample=resample)
        left = (size[0] - spec.width) // 2
        top = (size[1] - spec.height) // 2
        return resized.crop((left, top, left + spec.width, top + spec.height))
    # letterbox
    scale = min(spec.width / image.width, spec.height / image.height)
    size = (max(1, min(spec.width, round(image.width * scale))), max(1, min(spec.height, round(image.height * scale))))
    resized = image if image.size == size else image.resize(size, resample=resample)
    canvas = Image.new("RGB", target, tuple(spec.pad_color))
    canvas.paste(resized, ((spec.width - size[0]) // 2, (spec.height - size[1]) // 2))
    return canvas


def normalize(image: Image.Image, spec: ImageSpec) -> np.ndarray:
    """float32 [3, H, W]: pixel * rescale, minus mean, divided by std, per channel."""
    pixels = np.asarray(image, dtype=np.float32) * np.float32(spec.rescale)
    mean = np.asarray(spec.mean, dtype=np.float32)
    std = np.asarray(spec.std, dtype=np.float32)
    return np.ascontiguousarray(((pixels - mean) / std).transpose(2, 0, 1))


def preprocess_image(image: Image.Image, spec: ImageSpec) -> np.ndarray:
    """One RGB image to its tensor: float32 [3, H, W], or uint8 [H, W, 3] for byte-input families."""
    if image.mode != "RGB":
        image = image.convert("RGB")
    resized = resize_image(image, spec)
    if spec.as_bytes:
        return np.asarray(resized, dtype=np.uint8)
    return normalize(resized, spec)


def pixel_batch(images: Sequence[Image.Image], spec: ImageSpec, dtype: type = np.float16) -> np.ndarray:
    """The request tensor for n images: [1, n, 3, H, W] in `dtype` (uint8 [1, n, H, W, 3] for bytes)."""
    if not images:
        raise ValueError("pixel_batch needs at least one image.")
    stacked = np.stack([preprocess_image(image, spec) for image in images])
    return stacked[None].astype(np.uint8 if spec.as_bytes else dtype, copy=False)
