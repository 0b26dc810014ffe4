"""Faces and cat faces with OpenCV's Haar cascades (the XML files in the opencv-python 4.x wheel).

No weights are downloaded: `cv2.data.haarcascades` is the wheel's own folder. Images are searched
at a reduced size (faces smaller than an eighth of the short side are not looked for), which keeps
one search near 25 ms on one core (256 pixels: the same smallest face, an eighth of the short side, for
landscape pictures; two thirds of the time of 320).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

PERSON_CASCADE = "haarcascade_frontalface_alt2.xml"
CAT_CASCADE = "haarcascade_frontalcatface_extended.xml"
SEARCH_SIDE = 256


def grey(rgb: np.ndarray) -> np.ndarray:
    """[H, W] uint8: the mean of the three channels, rounded down (integer sums: a float mean over the
    last axis costs tens of milliseconds for a 1024-pixel picture)."""
    total = rgb[..., 0].astype(np.uint16) + rgb[..., 1] + rgb[..., 2]
    return (total // 3).astype(np.uint8)


@dataclass(frozen=True)
class Face:
    """One face: box in the original image's pixels (x, y, width, height) and where it is."""

    box: tuple[int, int, int, int]
    where: str


def place(box: tuple[int, int, int, int], width: int, height: int) -> str:
    """'left', 'centre' or 'right' (and 'top'/'bottom' when clearly so) for a box's centre."""
    x, y, w, h = box
    cx, cy = (x + w / 2) / width, (y + h / 2) / height
    horizontal = "left" if cx < 1 / 3 else "right" if cx > 2 / 3 else "centre"
    vertical = "top " if cy < 1 / 4 else "bottom " if cy > 3 / 4 else ""
    return f"{vertical}{horizontal}"


class FaceFinder:
    """Both cascades loaded once; `find(gray)` per image."""

    def __init__(self):
        import cv2

        self.cv2 = cv2
        folder = Path(cv2.data.haarcascades)
        self.people = self._load(folder / PERSON_CASCADE)
        self.cats = self._load(folder / CAT_CASCADE)

    def _load(self, path: Path):
        cascade = self.cv2.CascadeClassifier(str(path))
        if cascade.empty():
            raise RuntimeError(f"OpenCV could not load the cascade {path}.")
        return cascade

    def _search(self, cascade, gray: np.ndarray, neighbours: int) -> list[Face]:
        height, width = gray.shape
        scale = min(1.0, SEARCH_SIDE / max(height, width))
        small = gray if scale == 1.0 else self.cv2.resize(gray, None, fx=scale, fy=scale,
                                                          interpolation=self.cv2.INTER_AREA)
        small = self.cv2.equalizeHist(small)
        least = max(20, min(small.shape) // 8)
        found = cascade.detectMultiScale(small, scaleFactor=1.15, minNeighbors=neighbours, minSize=(least, least))
        faces = []
        for x, y, w, h in (found if len(found) else []):
            box = tuple(int(round(v / scale)) for v in (x, y, w, h))
            faces.append(Face(box, place(box, width, height)))
        return sorted(faces, key=lambda f: f.box[0])

    def find(self, gray: np.ndarray) -> tuple[list[Face], list[Face]]:
        """(people's faces, cat faces) in one [H, W] uint8 grey image, left to right."""
        return self._search(self.people, gray, 4), self._search(self.cats, gray, 4)
