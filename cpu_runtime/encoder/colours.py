"""Dominant named colours and simple shapes (circle, triangle, square, rectangle), without weights.

Each pixel of a small copy of the image gets a colour name from its hue, saturation and value (the
table is colour_names.json beside this module). The colours covering enough of the picture are its
dominant colours. On a plain background (one colour along most of the border), each other colour's
large solid regions are classified by their outline: three corners a triangle, four a square or a
rectangle, round and convex a circle.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np

NAMES_FILE = Path(__file__).with_name("colour_names.json")
SMALL_SIDE = 160


@dataclass(frozen=True)
class Shape:
    """A solid region of one colour with a simple outline, and its share of the picture."""

    colour: str
    kind: str
    share: float


class ColourNamer:
    """Names each pixel of an HSV image after colour_names.json."""

    def __init__(self, path: Path = NAMES_FILE):
        table = json.loads(path.read_text(encoding="utf-8"))
        self.names = ["black", "white", "grey", "brown"] + sorted({name for _, _, name in table["hues"]})
        lookup = np.zeros(180, np.uint8)
        for low, high, name in table["hues"]:
            lookup[low:high] = self.names.index(name)
        self.hue_lookup = lookup
        self.table = table

    def name_map(self, hsv: np.ndarray) -> np.ndarray:
        """[H, W, 3] uint8 HSV -> [H, W] indices into self.names."""
        t = self.table
        hue, sat, val = (hsv[..., i].astype(np.int32) for i in range(3))
        out = self.hue_lookup[np.clip(hue, 0, 179)].copy()
        low, high = t["brown"]["hues"]
        out[(hue >= low) & (hue < high) & (val < t["brown"]["below_value"])] = self.names.index("brown")
        grey = sat < t["grey_below_saturation"]
        out[grey] = self.names.index("grey")
        out[grey & (val >= t["white_above_value"])] = self.names.index("white")
        out[val < t["black_below_value"]] = self.names.index("black")
        return out


class ColourReader:
    """Dominant colours and simple shapes of one RGB image."""

    def __init__(self):
        import cv2

        self.cv2 = cv2
        self.namer = ColourNamer()

    def small(self, rgb: np.ndarray) -> np.ndarray:
        """The picture at most SMALL_SIDE pixels on its long side (the size colours are read at)."""
        height, width = rgb.shape[:2]
        scale = min(1.0, SMALL_SIDE / max(height, width))
        if scale == 1.0:
            return rgb
        return self.cv2.resize(rgb, None, fx=scale, fy=scale, interpolation=self.cv2.INTER_AREA)

    def read(self, rgb: np.ndarray, min_share: float = 0.1, limit: int = 3) -> tuple[list[tuple[str, float]], list[Shape]]:
        """([(colour, share)] most common first, [Shape]) for one [H, W, 3] uint8 RGB image."""
        names = self.names(self.small(rgb))
        counts = np.bincount(names.ravel(), minlength=len(self.namer.names)) / names.size
        order = np.argsort(counts)[::-1]
        colours = [(self.namer.names[i], float(counts[i])) for i in order[:limit] if counts[i] >= min_share]
        return colours, self._shapes(names)

    def names(self, small: np.ndarray) -> np.ndarray:
        """[H, W] indices into namer.names for a (small) RGB picture."""
        return self.namer.name_map(self.cv2.cvtColor(small, self.cv2.COLOR_RGB2HSV))

    @staticmethod
    def background(names: np.ndarray) -> int | None:
        """The colour index of a plain background (one colour along 90% of the border); None for a photo."""
        border = np.concatenate([names[0], names[-1], names[:, 0], names[:, -1]])
        background = int(np.bincount(border).argmax())
        return background if np.mean(border == background) >= 0.9 else None

    def _shapes(self, names: np.ndarray, min_share: float = 0.02, limit: int = 3) -> list[Shape]:
        background = self.background(names)
        if background is None:
            return []  # no plain background: a photo, where outlines mean little
        shapes = []
        for index in np.unique(names):
            if index == background:
                continue
            mask = (names == index).astype(np.uint8)
            contours, _ = self.cv2.findContours(mask, self.cv2.RETR_EXTERNAL, self.cv2.CHAIN_APPROX_SIMPLE)
            for contour in contours:
                share = self.cv2.contourArea(contour) / names.size
                kind = self._kind(contour) if share >= min_share else None
                if kind:
                    shapes.append(Shape(self.namer.names[index], kind, float(share)))
        return sorted(shapes, key=lambda s: -s.share)[:limit]

    def _kind(self, contour) -> str | None:
        cv2 = self.cv2
        area = cv2.contourArea(contour)
        hull = cv2.contourArea(cv2.convexHull(contour))
        if hull <= 0 or area / hull < 0.9:
            return None  # not solid and convex
        perimeter = cv2.arcLength(contour, True)
        corners = len(cv2.approxPolyDP(contour, 0.04 * perimeter, True))
        roundness = 4 * np.pi * area / (perimeter * perimeter)
        if corners == 3:
            return "triangle"
        if corners == 4:
            _, (w, h), _ = cv2.minAreaRect(contour)
            return "square" if 0.85 <= w / max(h, 1e-6) <= 1.18 else "rectangle"
        if roundness > 0.8:
            return "circle"
        return None
