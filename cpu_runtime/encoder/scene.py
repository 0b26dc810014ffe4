"""Cues about a picture's setting that its pixels show, without weights: the colours of its middle (where the
main subject usually is), how light or dark it is, and a sky-like top or a grass-like bottom.

Only what is measured is said, and only of photos: a picture on a plain background (a drawing, a sign, a
screenshot) has no setting to speak of. The words (and thresholds) are in scene_cues.json beside this module. The
colours are the ColourReader's pixel names, so "the middle is orange and brown" means what "Colours:" means.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from .colours import ColourReader

CUES_FILE = Path(__file__).with_name("scene_cues.json")


@dataclass(frozen=True)
class Scene:
    """The setting cues of one picture."""

    middle: list[tuple[str, float]] = field(default_factory=list)  # (colour, share) of the central box
    light: str = ""  # "dark", "dim", "bright", or "" for an ordinary picture
    cues: list[str] = field(default_factory=list)  # sentences of scene_cues.json's bands that hold
    no_cue: str = ""  # said of a photo where no band holds
    plain: bool = False  # a plain background (one colour along the border): no setting cues are said


def _shares(names: np.ndarray, count: int) -> np.ndarray:
    return np.bincount(names.ravel(), minlength=count) / max(names.size, 1)


class SceneReader:
    """`read(rgb)` -> Scene for one [H, W, 3] uint8 RGB picture (margins already trimmed)."""

    def __init__(self, colours: ColourReader | None = None, path: Path = CUES_FILE):
        self.colours = colours or ColourReader()
        self.table = json.loads(path.read_text(encoding="utf-8"))

    def read(self, rgb: np.ndarray) -> Scene:
        small = self.colours.small(rgb)
        names = self.colours.names(small)
        palette = self.colours.namer.names
        if self.colours.background(names) is not None:
            return Scene(plain=True)
        return Scene(self._middle(names, palette), self._light(small), self._cues(names, palette),
                     self.table.get("no_cue", ""))

    def _middle(self, names: np.ndarray, palette: list[str]) -> list[tuple[str, float]]:
        spec = self.table["middle"]
        height, width = names.shape
        dy, dx = int(height * (1 - spec["side"]) / 2), int(width * (1 - spec["side"]) / 2)
        shares = _shares(names[dy:height - dy or None, dx:width - dx or None], len(palette))
        order = np.argsort(shares)[::-1][: int(spec["max_colours"])]
        return [(palette[i], float(shares[i])) for i in order if shares[i] >= float(spec["min_share"])]

    def _light(self, small: np.ndarray) -> str:
        value = float(small.max(axis=2).mean())
        return next((word for low, high, word in self.table["light"] if low <= value < high), "")

    def _cues(self, names: np.ndarray, palette: list[str]) -> list[str]:
        height = names.shape[0]
        said = []
        for band in self.table["bands"]:
            rows = max(1, int(round(height * float(band["share_of_height"]))))
            strip = names[:rows] if band["edge"] == "top" else names[height - rows:]
            shares = _shares(strip, len(palette))
            if sum(shares[palette.index(c)] for c in band["colours"]) >= float(band["min_share"]):
                said.append(band["words"])
        return said
