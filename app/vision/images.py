"""Image intake: check an uploaded file and turn it into an 8-bit RGB PIL image.

Accepted: PNG, JPEG, WebP, BMP and GIF (first frame). The byte size is checked before the file is
read, the pixel count from the header before any pixel is decoded (decompression bombs never reach
the decoder), then EXIF orientation is applied and palette, grey, CMYK, 16-bit and alpha images are
converted to RGB (transparent areas composited onto a white background). Every refusal is an
`InvalidImage` whose message names the file and says what to do.
"""

from __future__ import annotations

import io
import os
import warnings
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from PIL import Image, ImageOps, UnidentifiedImageError

from app.core.constants import IMAGE_BACKGROUND, IMAGE_FORMATS, MAX_IMAGE_BYTES, MAX_IMAGE_PIXELS
from app.core.errors import InvalidImage
from app.core.messages import MSG_IMAGE_TOO_LARGE_BYTES
from app.vision.messages import (
    MSG_IMAGE_BOMB,
    MSG_IMAGE_EMPTY,
    MSG_IMAGE_NOT_AN_IMAGE,
    MSG_IMAGE_TOO_MANY_PIXELS,
    MSG_IMAGE_TRUNCATED,
    MSG_IMAGE_UNREADABLE,
    MSG_IMAGE_UNSUPPORTED_FORMAT,
)

_MB = 1024 * 1024
_SIXTEEN_BIT = ("I;16", "I;16B", "I;16L", "I;16N", "I")


@dataclass(frozen=True)
class ImageLimits:
    """Upload limits; the defaults come from app/core/constants.py."""

    max_bytes: int = MAX_IMAGE_BYTES
    max_pixels: int = MAX_IMAGE_PIXELS


def _read_bytes(source: str | os.PathLike | bytes, name: str, limits: ImageLimits) -> bytes:
    if isinstance(source, bytes | bytearray):
        data = bytes(source)
        size = len(data)
    else:
        path = Path(source)
        size = path.stat().st_size
        if size > limits.max_bytes:
            raise InvalidImage(MSG_IMAGE_TOO_LARGE_BYTES.format(name=name, size_mb=size / _MB,
                                                                limit_mb=limits.max_bytes / _MB))
        data = path.read_bytes()
        size = len(data)
    if size == 0:
        raise InvalidImage(MSG_IMAGE_EMPTY.format(name=name))
    if size > limits.max_bytes:
        raise InvalidImage(MSG_IMAGE_TOO_LARGE_BYTES.format(name=name, size_mb=size / _MB,
                                                            limit_mb=limits.max_bytes / _MB))
    return data


def _too_many_pixels(name: str, width: int, height: int, limits: ImageLimits) -> InvalidImage:
    return InvalidImage(MSG_IMAGE_TOO_MANY_PIXELS.format(
        name=name, width=width, height=height, megapixels=width * height / 1e6, limit_mp=limits.max_pixels / 1e6))


def _open_header(data: bytes, name: str, limits: ImageLimits) -> Image.Image:
    """Open lazily (header only) and refuse unknown formats and oversized images before decoding."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", Image.DecompressionBombWarning)  # our own limit follows
            image = Image.open(io.BytesIO(data))
    except Image.DecompressionBombError:
        raise InvalidImage(MSG_IMAGE_BOMB.format(name=name, limit_mp=limits.max_pixels / 1e6)) from None
    except UnidentifiedImageError:
        raise InvalidImage(MSG_IMAGE_NOT_AN_IMAGE.format(name=name)) from None
    except (OSError, SyntaxError, ValueError) as exc:
        # the header itself is cut off or malformed
        raise InvalidImage(MSG_IMAGE_TRUNCATED.format(name=name) if "truncat" in str(exc).lower()
                           else MSG_IMAGE_UNREADABLE.format(name=name, detail=exc)) from None
    if image.format not in IMAGE_FORMATS:
        raise InvalidImage(MSG_IMAGE_UNSUPPORTED_FORMAT.format(name=name, format=image.format or "unknown"))
    width, height = image.size
    if width <= 0 or height <= 0:
        raise InvalidImage(MSG_IMAGE_NOT_AN_IMAGE.format(name=name))
    if width * height > limits.max_pixels:
        raise _too_many_pixels(name, width, height, limits)
    return image


def _sixteen_bit_to_l(image: Image.Image) -> Image.Image:
    """16-bit (or 32-bit integer) grey to 8-bit grey by scaling, not clipping."""
    values = np.asarray(image, dtype=np.float64)
    top = 65535.0 if image.mode.startswith("I;16") or values.max(initial=0) > 255 else 255.0
    return Image.fromarray(np.clip(np.rint(values * (255.0 / top)), 0, 255).astype(np.uint8), mode="L")


def to_rgb(image: Image.Image, background: tuple[int, int, int] = IMAGE_BACKGROUND) -> Image.Image:
    """Any Pillow mode to 8-bit RGB; transparency is composited onto `background`."""
    if image.mode in _SIXTEEN_BIT:
        image = _sixteen_bit_to_l(image)
    elif image.mode == "F":
        values = np.asarray(image, dtype=np.float64)
        scale = 255.0 if values.max(initial=0) <= 1.0 else 1.0
        image = Image.fromarray(np.clip(np.rint(values * scale), 0, 255).astype(np.uint8), mode="L")
    if image.mode == "P":
        image = image.convert("RGBA" if "transparency" in image.info else "RGB")
    elif image.mode in ("LA", "La", "PA", "RGBa"):
        image = image.convert("RGBA")
    elif image.mode == "L" and "transparency" in image.info:
        image = image.convert("RGBA")
    if image.mode == "RGBA":
        canvas = Image.new("RGB", image.size, background)
        canvas.paste(image, mask=image.getchannel("A"))
        return canvas
    return image if image.mode == "RGB" else image.convert("RGB")


def load_image(source: str | os.PathLike | bytes, name: str | None = None, limits: ImageLimits = ImageLimits(),
               draft_side: int | None = None) -> Image.Image:
    """Validate and decode one upload (path or bytes) into an upright 8-bit RGB image.

    `draft_side` lets a JPEG decode at a reduced scale that still covers that many pixels on each
    side (much faster for large photos); leave it None where preprocessing must be exact.
    Raises InvalidImage with a message for the user.
    """
    name = name or (Path(source).name if not isinstance(source, bytes | bytearray) else "The image")
    data = _read_bytes(source, name, limits)
    image = _open_header(data, name, limits)
    try:
        if image.format == "GIF":
            image.seek(0)
        if draft_side and image.format == "JPEG":
            image.draft("RGB", (draft_side, draft_side))
        image.load()
        upright = ImageOps.exif_transpose(image)
    except Image.DecompressionBombError:
        raise _too_many_pixels(name, *image.size, limits) from None
    except (OSError, SyntaxError, ValueError, EOFError) as exc:
        text = str(exc).lower()
        if "truncat" in text or "broken data stream" in text or isinstance(exc, EOFError) or "premature" in text:
            raise InvalidImage(MSG_IMAGE_TRUNCATED.format(name=name)) from None
        raise InvalidImage(MSG_IMAGE_UNREADABLE.format(name=name, detail=exc)) from None
    return to_rgb(upright if upright is not None else image)


def image_format(source: str | os.PathLike | bytes) -> str | None:
    """The format name Pillow reads from the header, or None for a non-image (no decoding)."""
    try:
        data = source if isinstance(source, bytes | bytearray) else Path(source).read_bytes()
        with Image.open(io.BytesIO(data)) as image:
            return image.format
    except (UnidentifiedImageError, OSError, SyntaxError, ValueError):
        return None
