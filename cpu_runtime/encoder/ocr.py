"""The CPU demo's visual encoder: read the text in each image, return the LLM's embeddings of it.

A stand-in for a vision tower: the image's text, found by the PP-OCR models shipped inside the
rapidocr-onnxruntime wheel (text_reader.py: a quick check first, so a picture without text is cheap), is written as "[Image text: ...]", tokenized with the LLM's tokenizer
and looked up in the LLM's own input-embedding matrix. Each image yields exactly
`num_visual_features` rows (longer text is cut, shorter text padded with newline embeddings), so
the rows line up with the fake ids the preprocessing step placed for it.
"""

import hashlib
import json
from collections import OrderedDict
from functools import lru_cache
from pathlib import Path

import numpy as np

from .token_ids import text_encoder

EMBEDDING_KEYS = ("model.embed_tokens.weight", "embed_tokens.weight", "transformer.wte.weight")
ZERO_ROW = -1  # a block's id for an all-zero row (a family twin's padding, `twin.padding: zero_rows_first`)


def load_encoder_config(folder):
    """config.json of the CPU encoder folder (builder_config + ocr settings). A family twin's folder records that
    family's model type and says so in its `twin` section."""
    path = Path(folder) / "config.json"
    config = json.loads(path.read_text())
    builder = config.get("builder_config", {})
    if builder.get("model_type") != "cpu-ocr" and not config.get("twin"):
        raise RuntimeError(f"{path} does not describe a cpu-ocr encoder (model_type {builder.get('model_type')}).")
    return config


def load_embeddings(hf_dir):
    """The input-embedding matrix (vocab x hidden, float32) from the safetensors files of `hf_dir`."""
    from safetensors import safe_open

    for file in sorted(Path(hf_dir).glob("*.safetensors")):
        with safe_open(str(file), framework="np") as weights:
            for key in EMBEDDING_KEYS:
                if key in weights.keys():
                    return weights.get_tensor(key).astype(np.float32)
    raise RuntimeError(f"No input-embedding weights ({', '.join(EMBEDDING_KEYS)}) in {hf_dir}.")


def to_bgr_uint8(pixels, mean, std, rescale):
    """One normalised [3, H, W] image back to the uint8 [H, W, 3] BGR array OCR reads.

    float16 pixels (what the app sends) are looked up in a table of every float16 value's result, made
    once with the same arithmetic (much faster than computing 3 million pixels, and the same bytes)."""
    if pixels.dtype == np.float16:
        tables = _float16_tables(tuple(map(float, mean)), tuple(map(float, std)), float(rescale))
        codes = pixels.view(np.uint16)
        bgr = np.empty((*pixels.shape[1:], 3), np.uint8)
        for channel in range(3):
            bgr[:, :, 2 - channel] = tables[channel][codes[channel]]
        return bgr
    return _to_bgr_arithmetic(pixels, mean, std, rescale)


def _to_bgr_arithmetic(pixels, mean, std, rescale):
    with np.errstate(invalid="ignore", over="ignore"):  # NaN/inf pixels: whatever the cast gives, either way
        chw = pixels.astype(np.float32) * np.asarray(std, np.float32)[:, None, None]
        chw += np.asarray(mean, np.float32)[:, None, None]
        rgb = np.clip(np.rint(chw / np.float32(rescale)), 0, 255).astype(np.uint8).transpose(1, 2, 0)
    return np.ascontiguousarray(rgb[:, :, ::-1])


@lru_cache(maxsize=4)
def _float16_tables(mean: tuple, std: tuple, rescale: float) -> np.ndarray:
    """[3, 65536] uint8: each channel's 8-bit value for every float16 bit pattern (to_bgr_uint8's arithmetic)."""
    every = np.arange(65536, dtype=np.uint32).astype(np.uint16).view(np.float16)
    column = np.broadcast_to(every[None, :, None], (3, 65536, 1))
    return np.ascontiguousarray(_to_bgr_arithmetic(column, mean, std, rescale)[:, 0, ::-1].T)


class ImageMemo:
    """The blocks of the last few images, keyed by their pixels' bytes (least recently used dropped)."""

    def __init__(self, size: int = 16):
        self.size, self.hits = size, 0
        self._items: OrderedDict = OrderedDict()

    def get_or_make(self, pixels: np.ndarray, make):
        key = hashlib.sha1(np.ascontiguousarray(pixels).tobytes()).hexdigest() + str(pixels.shape) + str(pixels.dtype)
        if key in self._items:
            self._items.move_to_end(key)
            self.hits += 1
            return self._items[key]
        value = self._items[key] = make()
        if len(self._items) > self.size:
            self._items.popitem(last=False)
        return value


class OcrEncoder:
    def __init__(self, folder, hf_dir=None, ocr_engine=None):
        self.config = load_encoder_config(folder)
        builder, self.ocr_settings = self.config["builder_config"], self.config.get("ocr", {})
        self.tokens = int(builder["num_visual_features"])
        self.mean, self.std = builder.get("mean", [0, 0, 0]), builder.get("std", [1, 1, 1])
        self.rescale = float(builder.get("rescale", 1 / 255))
        hf_dir = Path(hf_dir) if hf_dir else Path(folder) / self.config["hf_model_dir"]
        self.encode_text = text_encoder(hf_dir)
        self.embeddings = load_embeddings(hf_dir)
        self.hidden = self.embeddings.shape[1]
        self.pad_id = self._ids(self.ocr_settings.get("pad_text", "\n"))[-1]
        self.close_ids = self._ids(self.ocr_settings.get("text_format", "[Image text: {text}]").split("{text}")[-1])
        if ocr_engine is None:
            from .text_reader import TextReader

            ocr_engine = TextReader()
        self.ocr = ocr_engine
        self.memo = ImageMemo()
        # zero_rows_first (family twins with hundreds of rows per image): the block is zero rows, then the text;
        # SmolLM2-135M answers nothing after ~500 newline rows, while zero rows before the text leave it answering
        self.zero_rows_first = (self.config.get("twin") or {}).get("padding") == "zero_rows_first"

    def _ids(self, text):
        return self.encode_text(text) if text else []

    def read_text(self, bgr, min_score=None):
        """The text OCR finds in one image, lines in reading order joined by spaces."""
        result, _ = self.ocr(bgr)
        min_score = float(self.ocr_settings.get("min_score", 0.5) if min_score is None else min_score)
        words = [str(item[1]).strip() for item in result or [] if float(item[2]) >= min_score]
        return " ".join(w for w in words if w)

    def fit_block(self, ids, close_ids):
        """`ids` made exactly `tokens` long: cut before `close_ids` (kept, so the bracket still closes) or padded
        (pad_text after it, or ZERO_ROW before it for zero_rows_first)."""
        if len(ids) > self.tokens:
            keep = max(0, self.tokens - len(close_ids))
            ids = ids[:keep] + close_ids[: self.tokens - keep]
        if self.zero_rows_first:
            return [ZERO_ROW] * (self.tokens - len(ids)) + ids
        return ids + [self.pad_id] * (self.tokens - len(ids))

    def text_ids(self, text):
        """Exactly `tokens` token ids for one image's text (cut or padded)."""
        shown = text or self.ocr_settings.get("empty_text", "(no readable text)")
        ids = self._ids(self.ocr_settings.get("text_format", "[Image text: {text}]").format(text=shown))
        return self.fit_block(ids, self.close_ids)

    def see(self, bgr):
        """What one uint8 BGR image gives: here the text read in it."""
        return self.read_text(bgr)

    def block_ids(self, seen, number: int | None = None):
        """Exactly `tokens` ids for what an image gave (`number`: its place among several; unused here)."""
        return self.text_ids(seen)

    def image_block(self, bgr, number: int | None = None):
        """(exactly `tokens` ids, what was seen) for one uint8 BGR image; `number` as in block_ids."""
        seen = self.see(bgr)
        return self.block_ids(seen, number), seen

    def encode(self, images):
        """[n, 3, H, W] normalised pixels -> (table [n * tokens, hidden] float16, what each image gave).

        With several images each block is numbered (block_ids). Recent images are remembered by their
        pixels, so asking again what one showed (the app's "What the model saw") or a follow-up question
        about it does not run the parts again."""
        texts, ids = [], []
        several = len(images) > 1
        for number, pixels in enumerate(images, start=1):
            seen = self.memo.get_or_make(
                pixels, lambda p=pixels: self.see(to_bgr_uint8(p, self.mean, self.std, self.rescale)))
            texts.append(seen)
            ids += self.block_ids(seen, number if several else None)
        ids = np.asarray(ids, dtype=np.int64)
        table = self.embeddings[np.maximum(ids, 0)] if ids.size else np.zeros((0, self.hidden), np.float32)
        table[ids == ZERO_ROW] = 0.0
        return table.astype(np.float16), texts
