"""Small pictures for the tests: one plain shape on white drawn with Pillow (a file or a data: URL), and
scikit-image's chelsea photo as a file."""

from __future__ import annotations

import base64
import io
from pathlib import Path

from PIL import Image, ImageDraw

RED, BLUE = (220, 20, 20), (20, 40, 220)


def shape_image(shape: str = "ellipse", fill: tuple[int, int, int] = RED, size: int = 400) -> Image.Image:
    """A `shape` ("ellipse" or "rectangle") of colour `fill` in the middle half of a white square."""
    image = Image.new("RGB", (size, size), "white")
    getattr(ImageDraw.Draw(image), shape)((size // 4, size // 4, 3 * size // 4, 3 * size // 4), fill=fill)
    return image


def shape_picture(path: Path, shape: str = "ellipse", fill: tuple[int, int, int] = RED, size: int = 400) -> Path:
    """shape_image() saved at `path` (its folder made when missing)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    shape_image(shape, fill, size).save(path)
    return path


def chelsea_picture(path: Path) -> Path:
    """scikit-image's chelsea (a tabby cat indoors, from its wheel) saved at `path` (its folder made when missing)."""
    from skimage import data

    path.parent.mkdir(parents=True, exist_ok=True)
    Image.fromarray(data.chelsea()).save(path)
    return path


def data_url(image: Image.Image) -> str:
    """The image as a PNG data: URL (what an OpenAI client sends)."""
    buffer = io.BytesIO()
    image.save(buffer, format="PNG")
    return "data:image/png;base64," + base64.b64encode(buffer.getvalue()).decode()
