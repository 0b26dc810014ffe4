"""Turn uploaded image files into the extra request tensors and the marked-up user text.

The deployed model says what it takes: the image input it declares (`image_input`,
`image_bytes_input` or `image_url_input`) and, in its config parameters, `multimodal_family` and
`max_num_images`. The family entry (setup/data/families/) says how to make the pixels and where the
image markers go. No Gradio here; the UI calls `prepare_images` and `image_support`.
"""

from __future__ import annotations

import base64
import io
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np
from PIL import Image

from app.core.errors import InvalidRequest, TextOnlyDeployment, TooManyImages
from app.core.messages import MSG_TEXT_ONLY
from app.triton.client import ModelInfo
from app.vision.images import ImageLimits, load_image
from app.vision.messages import MSG_IMAGE_INPUT_UNSUPPORTED, MSG_TOO_MANY_IMAGES, MSG_UNKNOWN_FAMILY
from app.vision.preprocess import pixel_batch, preprocess_image
from setup.catalog.families import IMAGE_INPUT_KINDS, Family, FamilyError, get_family

FAMILY_PARAMETER = "multimodal_family"
MAX_IMAGES_PARAMETER = "max_num_images"


@dataclass(frozen=True)
class ImageSupport:
    """What a deployment accepts: the input to fill, the family and the image limit per message."""

    input_name: str
    data_type: str
    family: Family
    max_num_images: int
    dims: tuple[int, ...] = ()  # the input's declared dims per request (without the batch dim)

    @property
    def one_image_per_request(self) -> bool:
        """True when the input takes one image per request ([3, H, W]), not a list of them ([n, 3, H, W])."""
        return self.input_name == "image_input" and len(self.dims) == 3


@dataclass(frozen=True)
class ImagePrompt:
    """The user text with image markers, and the tensors to pass as `extra` to TritonChatClient.stream."""

    text: str
    extra: dict[str, object] = field(default_factory=dict)
    count: int = 0


def image_support(info: ModelInfo) -> ImageSupport | None:
    """None for a text-only deployment; InvalidRequest when the deployment's family is unknown."""
    declared = [name for name in IMAGE_INPUT_KINDS if name in info.inputs]
    if not declared:
        return None
    family_name = info.parameters.get(FAMILY_PARAMETER, "")
    try:
        family = get_family(family_name)
    except FamilyError:
        raise InvalidRequest(MSG_UNKNOWN_FAMILY.format(family=family_name or "(none)")) from None
    if family.image_input not in declared:
        raise InvalidRequest(MSG_IMAGE_INPUT_UNSUPPORTED.format(kind=", ".join(declared)))
    try:
        limit = int(info.parameters.get(MAX_IMAGES_PARAMETER) or family.max_num_images)
    except ValueError:
        limit = family.max_num_images
    data_type, dims = info.inputs[family.image_input]
    support = ImageSupport(input_name=family.image_input, data_type=data_type, family=family,
                           max_num_images=max(1, limit), dims=tuple(dims))
    return replace(support, max_num_images=1) if support.one_image_per_request else support


def strip_image_markers(text: str, info: ModelInfo) -> str:
    """`text` without the deployment's image markers (for earlier turns whose images are not resent)."""
    support = image_support(info)
    return text.replace(support.family.prompt.image_marker, "").strip() if support else text


def accepts_images(info: ModelInfo) -> bool:
    """True when the deployment declares an image input."""
    return any(name in info.inputs for name in IMAGE_INPUT_KINDS)


def _tensor_for(images: list[Image.Image], support: ImageSupport) -> object:
    spec = support.family.preprocess
    if support.input_name == "image_input":
        batch = pixel_batch(images, spec, dtype=np.float16)  # [1, n, 3, H, W]
        return batch[:, 0] if support.one_image_per_request else batch  # [1, 3, H, W] for [3, H, W] inputs
    if support.input_name == "image_bytes_input":
        arrays = [preprocess_image(im, spec) if spec else np.asarray(im, dtype=np.uint8) for im in images]
        if len({a.shape for a in arrays}) > 1:  # one tensor: sizes must agree, so one image per message
            raise TooManyImages(MSG_TOO_MANY_IMAGES.format(limit=1, count=len(images)), limit=1)
        return np.stack(arrays)[None]
    # image_url_input: one data URL per request
    if len(images) > 1:
        raise TooManyImages(MSG_TOO_MANY_IMAGES.format(limit=1, count=len(images)), limit=1)
    buffer = io.BytesIO()
    images[0].save(buffer, format="PNG")
    return [f"data:image/png;base64,{base64.b64encode(buffer.getvalue()).decode('ascii')}"]


def prepare_images(paths: Sequence[str | Path | bytes], info: ModelInfo, text: str,
                   limits: ImageLimits | None = None) -> ImagePrompt:
    """Validate, decode and preprocess the uploads for the deployed model.

    Returns the user text with one image marker per image (per the family's prompt layout) and the
    `extra` tensors for `TritonChatClient.stream`. Raises TextOnlyDeployment, TooManyImages,
    InvalidImage (a bad file) or InvalidRequest (the deployment's family is unknown).
    """
    if not paths:
        return ImagePrompt(text=text)
    support = image_support(info)
    if support is None:
        raise TextOnlyDeployment(MSG_TEXT_ONLY)
    if len(paths) > support.max_num_images:
        raise TooManyImages(MSG_TOO_MANY_IMAGES.format(limit=support.max_num_images, count=len(paths)),
                            limit=support.max_num_images)
    spec = support.family.preprocess
    draft = max(spec.width, spec.height) if spec is not None and spec.draft_decode else None
    images = [load_image(path, limits=limits or ImageLimits(), draft_side=draft) for path in paths]
    return ImagePrompt(
        text=support.family.prompt.user_text(text, len(images)),
        extra={support.input_name: _tensor_for(images, support)},
        count=len(images),
    )
