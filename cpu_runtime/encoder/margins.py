"""The padding a letterbox adds around a picture, and the picture without it."""

from __future__ import annotations

import numpy as np


def margin_box(image: np.ndarray, value: int = 255) -> tuple[int, int, int, int]:
    """(top, bottom, left, right) of the picture inside a letterbox's `value` bands at two opposite edges.

    The whole image when there are no such bands, when all of it is `value`, or when the picture's own
    background is that colour on all four sides.
    """
    height, width = image.shape[:2]
    differs = image != value  # rows as one long axis: reducing over the 3 channels last is slow
    rows = np.flatnonzero(differs.reshape(height, -1).any(axis=1))
    cols = np.flatnonzero(differs.any(axis=0).reshape(width, -1).any(axis=1))
    if rows.size == 0 or cols.size == 0:
        return 0, height, 0, width
    top, bottom, left, right = int(rows[0]), int(rows[-1]) + 1, int(cols[0]), int(cols[-1]) + 1
    if (top > 0 or bottom < height) and (left > 0 or right < width):
        return 0, height, 0, width
    return top, bottom, left, right


def trim_margins(image: np.ndarray, value: int = 255) -> np.ndarray:
    """The image without a letterbox's padding (a view; the image itself when there is none)."""
    top, bottom, left, right = margin_box(image, value)
    if (top, left) == (0, 0) and (bottom, right) == image.shape[:2]:
        return image
    return image[top:bottom, left:right]
