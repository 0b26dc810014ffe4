"""Reading the text in a picture with PP-OCR (the models in the rapidocr-onnxruntime wheel), cheaply when
there is none.

A photo without text is the common case, and text detection over the whole 1024 x 1024 letterbox was
nearly all of its cost. So reading goes in two steps:

1. The letterbox's white margins are cut off, and the text detector runs once on a copy whose long side
   is CHECK_SIDE pixels (a quarter of the pixels of a 1024 picture; its own session). Text about 11
   pixels high in the 1024 letterbox is still found there; 9-pixel text, which the full-resolution
   detector also read, is not (test_text_reader.py reads Pillow's size-10 font on a 900-pixel-wide
   picture; its strict xfail is size 9 on a 1024-pixel photo: the detector gives 4.5-pixel text no score
   at all, so no threshold or resizing of the check finds it). Nothing found: no text, and nothing else runs.
2. Otherwise the full OCR (detection at the picture's own scale, as before, then direction and
   recognition) reads the part of the picture around the boxes found, so a stray box in a photo costs
   a small crop, and a sign is read as it was before.

Every ONNX session here (the check's, and the engine's detection, direction and recognition) uses one
thread: the encoder runs its parts side by side on the 2 cores.
"""

from __future__ import annotations

import numpy as np

from .margins import margin_box

CHECK_SIDE = 512
MIN_MARGIN = 32  # pixels of context kept around the text found by the check (or twice the tallest box)
PIXEL_THRESHOLD, MIN_PIXELS, MIN_MEAN = 0.3, 4, 0.5  # the detector's own binarisation and box score; specks dropped
DETECTOR = "ch_PP-OCRv4_det_infer.onnx"


def _multiple_of_32(value: float) -> int:
    return max(32, int(round(value / 32)) * 32)


def cpu_session(path, threads: int = 1):
    """An onnxruntime CPU session with `threads` intra-op threads that sleep rather than spin when idle."""
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.intra_op_num_threads, options.inter_op_num_threads = threads, 1
    options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    options.log_severity_level = 3
    return ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])


def detector_path():
    """The PP-OCRv4 text detector inside the rapidocr-onnxruntime wheel."""
    from pathlib import Path

    import rapidocr_onnxruntime

    return Path(rapidocr_onnxruntime.__file__).parent / "models" / DETECTOR


class TextReader:
    """Called like a RapidOCR engine: `reader(bgr)` -> ([[box, text, score], ...] or None, timings)."""

    def __init__(self, engine=None, check_side: int = CHECK_SIDE, threads: int = 1):
        if engine is None:
            from rapidocr_onnxruntime import RapidOCR

            # "min" 32: the detector keeps the picture's own scale (the default would enlarge a crop
            # until its short side is 736 pixels)
            engine = RapidOCR(det_limit_side_len=32, det_limit_type="min", intra_op_num_threads=threads)
        self.engine = engine
        self.check_side = check_side
        self.detector = cpu_session(detector_path(), threads)
        self.input_name = self.detector.get_inputs()[0].name
        self.checked = self.skipped = 0  # pictures checked, and those found without text

    def candidates(self, bgr: np.ndarray) -> np.ndarray:
        """[n, 4] boxes (x0, y0, x1, y1 in `bgr`'s pixels) of what the detector takes for text at CHECK_SIDE."""
        import cv2

        height, width = bgr.shape[:2]
        scale = min(1.0, self.check_side / max(height, width))
        size = (_multiple_of_32(width * scale), _multiple_of_32(height * scale))
        small = cv2.resize(bgr, size, interpolation=cv2.INTER_AREA)
        x = small.astype(np.float32) * np.float32(2 / 255) - np.float32(1)  # the detector's (v - 0.5) / 0.5
        chance = self.detector.run(None, {self.input_name: x.transpose(2, 0, 1)[None]})[0][0, 0]
        count, labels, stats, _ = cv2.connectedComponentsWithStats((chance > PIXEL_THRESHOLD).astype(np.uint8))
        boxes = [(x0, y0, x0 + w, y0 + h) for i, (x0, y0, w, h, area) in enumerate(stats) if i and area >= MIN_PIXELS
                 and chance[y0:y0 + h, x0:x0 + w][labels[y0:y0 + h, x0:x0 + w] == i].mean() >= MIN_MEAN]
        scaled = np.asarray(boxes, np.float32).reshape(-1, 4)
        return scaled * np.float32([width / size[0], height / size[1]] * 2)

    @staticmethod
    def region(boxes: np.ndarray, height: int, width: int) -> tuple[int, int, int, int]:
        """(top, bottom, left, right) around all boxes, with a margin of twice the tallest box's height (32 px at least)."""
        margin = max(MIN_MARGIN, 2 * float((boxes[:, 3] - boxes[:, 1]).max()))
        top, left = np.floor(boxes[:, 1].min() - margin), np.floor(boxes[:, 0].min() - margin)
        bottom, right = np.ceil(boxes[:, 3].max() + margin), np.ceil(boxes[:, 2].max() + margin)
        return max(0, int(top)), min(height, int(bottom)), max(0, int(left)), min(width, int(right))

    def __call__(self, bgr: np.ndarray):
        """The full OCR's result for one uint8 BGR image (boxes in its pixels), or (None, None) without text."""
        self.checked += 1
        top, bottom, left, right = margin_box(bgr)
        picture = bgr[top:bottom, left:right]
        boxes = self.candidates(picture)
        if not len(boxes):
            self.skipped += 1
            return None, None
        y0, y1, x0, x1 = self.region(boxes, *picture.shape[:2])
        result, timings = self.engine(np.ascontiguousarray(picture[y0:y1, x0:x1]))
        for item in result or []:
            item[0] = (np.asarray(item[0], np.float32) + np.float32([left + x0, top + y0])).tolist()
        return result, timings
