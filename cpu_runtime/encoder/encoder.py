"""The CPU demo's image encoder as the models use it: the OCR-only encoder, or with perception.

`make_encoder(folder)` reads the encoder folder's config.json: with a "perception" section the
encoder describes each picture (objects, faces, colours, shapes and text, perception.py) and the
LLM's embeddings of that description become the image's rows; without one it reads text only.
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np

from .ocr import OcrEncoder, load_encoder_config
from .perception import Perceiver, Perception

LATIN = re.compile(r"[A-Za-z0-9]")


class PerceptionEncoder(OcrEncoder):
    """OcrEncoder whose block for an image is the embedding of its Perception's sentence.

    One image's block is "[Image: ...]" (`text_format`); when a message has several, each says which
    it is, "[Image 1: ...]", "[Image 2: ...]" (`numbered_format`): unnumbered, SmolLM2-135M named only
    the second of two pictures.
    """

    def __init__(self, folder, hf_dir=None, ocr_engine=None, perceiver=None):
        super().__init__(folder, hf_dir, ocr_engine)
        self.perception_settings = self.config.get("perception", {})
        self.format = self.perception_settings.get("text_format", "[Image: {text}]")
        self.numbered_format = self.perception_settings.get("numbered_format", "[Image {number}: {text}]")
        self.close_ids = self._ids(self.format.split("{text}")[-1])
        self.perceiver = perceiver or Perceiver(self.perception_settings, folder=Path(folder))
        self.ocr_min_score = float(self.perceiver.settings["ocr_min_score"])

    def describe(self, bgr: np.ndarray) -> Perception:
        """What the parts find in one uint8 BGR image."""
        rgb = np.ascontiguousarray(bgr[:, :, ::-1])
        return self.perceiver.perceive(rgb, self.photo_text)

    def photo_text(self, bgr: np.ndarray) -> str:
        """OCR text of a picture: stricter score, and words without Latin letters or digits dropped
        (on photos PP-OCR's Chinese-and-English model reads stray shapes as CJK characters)."""
        words = self.read_text(bgr, self.ocr_min_score).split()
        return " ".join(w for w in words if LATIN.search(w))

    def description_ids(self, sentence: str, number: int | None = None) -> list[int]:
        """Exactly `tokens` ids for one description (cut before the closing bracket, or padded); `number`:
        the image's place among several of one message (None: the only one)."""
        text = self.format.format(text=sentence) if number is None else \
            self.numbered_format.format(number=number, text=sentence)
        return self.fit_block(self._ids(text), self.close_ids)

    def see(self, bgr: np.ndarray) -> Perception:
        return self.describe(bgr)

    def block_ids(self, seen: Perception, number: int | None = None) -> list[int]:
        return self.description_ids(seen.sentence(), number)


def make_encoder(folder, hf_dir=None) -> OcrEncoder:
    """The encoder the folder's config.json asks for (PerceptionEncoder when it has "perception")."""
    config = load_encoder_config(folder)
    cls = PerceptionEncoder if config.get("perception") else OcrEncoder
    return cls(folder, hf_dir)
