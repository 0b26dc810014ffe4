"""Small pictures drawn with Pillow for the tests: one plain shape on white."""

from __future__ import annotations

from pathlib import Path

from PIL import Image, ImageDraw

RED, BLUE = (220, 20, 20), (20, 40, 220)


def shape_picture(path: Path, shape: str = "ellipse", fill: tuple[int, int, int] = RED, size: int = 400) -> Path:
    """A `shape` ("ellipse" or "rectangle") of colour `fill` in the middle half of a white square, saved at `path`."""
    image = Image.new("RGB", (size, size), "white")
    getattr(ImageDraw.Draw(image), shape)((size // 4, size // 4, 3 * size // 4, 3 * size // 4), fill=fill)
    path.parent.mkdir(parents=True, exist_ok=True)
    image.save(path)
    return path
