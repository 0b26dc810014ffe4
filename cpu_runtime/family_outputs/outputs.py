"""The twin's output for one request: the family format's `twin_output` names the job (markdown, chart_table,
grounding, frame_changes), and TwinOutputs runs it with the encoder's parts (its OCR, face cascades and
classifier when the encoder has them; its own otherwise)."""

from __future__ import annotations

import numpy as np

from .chart import deplot_table
from .frames import describe_frames
from .grounding import Grounded, grounded_text
from .jobs import KINDS
from .layout import INK_CONTRAST, TextBox, from_ocr, starts_with_mark, tighten, widened, word_gaps
from .markdown import page_markdown
from .messages import MSG_UNKNOWN_OUTPUT

PAGE_MIN_SCORE = 0.5     # OCR scores kept on documents and charts
PHOTO_MIN_SCORE = 0.85   # and on photos (stray shapes read as text score lower)
MAX_TEXT_REGIONS = 5
RESPACE_SCORE_DROP = 0.05  # a second reading may score this much lower and still be taken
BACKGROUND_DIFFERENCE = 60
MAIN_OBJECT_CONFIDENCE = 0.3  # the classifier's (group's) confidence below which the main object is not named


class TwinOutputs:
    """`outputs(pictures, prompt)` -> the family's reply text for RGB PIL pictures (a video's frames for
    frame_changes, else the first picture), or None to let the LLM answer."""

    def __init__(self, kind: str, encoder=None):
        if kind not in KINDS:
            raise ValueError(MSG_UNKNOWN_OUTPUT.format(name=kind, known=", ".join(KINDS)))
        self.kind = kind
        self.encoder = encoder
        self._parts: dict = {}

    # ---- the encoder's parts, or our own -----------------------------------------------------------------
    def _part(self, name: str, make):
        if name not in self._parts:
            self._parts[name] = make()
        return self._parts[name]

    def reader(self):
        def make():
            from cpu_runtime.encoder.text_reader import TextReader
            return getattr(self.encoder, "ocr", None) or TextReader()
        return self._part("ocr", make)

    def ocr(self, rgb: np.ndarray, min_score: float, respace: bool = False) -> list[TextBox]:
        """The text boxes OCR reads, shrunk to their ink; with `respace`, lines whose words ran together
        (fewer spaces than gaps in the ink) read again with their gaps widened."""
        from cpu_runtime.encoder.faces import grey

        result, _ = self.reader()(np.ascontiguousarray(rgb[:, :, ::-1]))
        gray = grey(rgb)
        boxes = tighten(from_ocr(result, min_score), gray)
        return [self.respaced(box, gray) for box in boxes] if respace else boxes

    def respaced(self, box: TextBox, gray: np.ndarray) -> TextBox:
        """The box with its text read again from a copy whose word gaps are widened, when that reading has the
        same letters, more spaces and a score at least as good; else the box as it was."""
        crop = gray[int(box.y0):int(np.ceil(box.y1)), int(box.x0):int(np.ceil(box.x1))]
        if crop.size == 0:
            return box
        ink = np.abs(crop.astype(np.int16) - np.median(crop)) > INK_CONTRAST
        gaps = word_gaps(ink.any(axis=0), box.height)
        if len(gaps) <= box.text.count(" "):
            return box
        recognise = getattr(self.reader(), "engine", None)
        if recognise is None:
            return box
        line = widened(crop, gaps, box.height)
        result, _ = recognise(np.ascontiguousarray(np.repeat(line[:, :, None], 3, axis=2)), use_det=False,
                              use_cls=False, use_rec=True)
        if not result:
            return box
        text, score = str(result[0][0]).strip(), float(result[0][1])
        marked = starts_with_mark(ink, gaps, box.height)
        if marked:  # a bullet either reading may have missed or misread: compared without it, written as "-"
            text, before = unmarked(text), unmarked(box.text)
        else:
            before = box.text
        if text.replace(" ", "") != before.replace(" ", "") or text.count(" ") <= before.count(" ") or \
                score < box.score - RESPACE_SCORE_DROP:
            return box
        return TextBox(box.x0, box.y0, box.x1, box.y1, f"- {text}" if marked else text, score)

    def _perceiver_part(self, attribute: str, make):
        perceiver = getattr(self.encoder, "perceiver", None)
        return self._part(attribute, lambda: getattr(perceiver, attribute, None) or make())

    def faces(self):
        from cpu_runtime.encoder.faces import FaceFinder
        return self._perceiver_part("faces", FaceFinder)

    def classifier(self):
        from cpu_runtime.encoder.classifier import ImageClassifier
        return self._perceiver_part("classifier", ImageClassifier)

    def name_colour(self, pixels: np.ndarray) -> str:
        """The most common colour name of [N, 3] uint8 RGB pixels."""
        import cv2

        from cpu_runtime.encoder.colours import ColourNamer
        namer = self._part("namer", ColourNamer)
        hsv = cv2.cvtColor(np.ascontiguousarray(pixels.reshape(-1, 1, 3), dtype=np.uint8), cv2.COLOR_RGB2HSV)
        names = namer.name_map(hsv).ravel()
        return namer.names[int(np.bincount(names).argmax())]

    # ---- the jobs ---------------------------------------------------------------------------------------
    def __call__(self, pictures: list, prompt: str = "") -> str | None:
        """The reply; None when the job does not apply (frame_changes on one picture: the family chats)."""
        arrays = [np.asarray(p.convert("RGB"), dtype=np.uint8) for p in pictures]
        if self.kind == "frame_changes":
            return describe_frames(arrays, self.name_colour) if len(arrays) > 1 else None
        rgb = arrays[0]
        if self.kind == "markdown":
            return page_markdown(self.ocr(rgb, PAGE_MIN_SCORE, respace=True), rgb.shape[1])
        if self.kind == "chart_table":
            return deplot_table(rgb, self.ocr(rgb, PAGE_MIN_SCORE))
        return grounded_text(prompt, self.grounded(rgb), rgb.shape[1], rgb.shape[0])

    def grounded(self, rgb: np.ndarray) -> list[Grounded]:
        """What the encoder finds, each with its boxes: the main object, faces, cat faces, text regions."""
        from cpu_runtime.encoder.faces import grey

        found = []
        main = self.main_object(rgb)
        if main is not None:
            found.append(main)
        people, cats = self.faces().find(grey(rgb))
        for faces, phrase in ((people, "a face"), (cats, "a cat's face")):
            if faces:
                found.append(Grounded(phrase if len(faces) == 1 else phrase.replace("a ", "", 1) + "s",
                                      tuple((x, y, x + w, y + h) for x, y, w, h in (f.box for f in faces))))
        for box in [b for b in self.ocr(rgb, PHOTO_MIN_SCORE) if any(c.isalnum() and c.isascii() for c in b.text)
                    ][:MAX_TEXT_REGIONS]:
            found.append(Grounded(f'the text "{box.text}"', ((box.x0, box.y0, box.x1, box.y1),)))
        return found

    def main_object(self, rgb: np.ndarray) -> Grounded | None:
        """What the classifier is fairly sure of (a group of close labels, "a cat", counted together), boxed by
        the region unlike the picture's border (the whole picture when that is most of it, as in a photo);
        None when it is unsure."""
        labels = self.classifier().top(rgb, 3, 0.05)
        if not labels:
            return None
        group = labels[0].group
        confidence = sum(label.confidence for label in labels if group and label.group == group) if group \
            else labels[0].confidence
        if confidence < MAIN_OBJECT_CONFIDENCE:
            return None
        return Grounded(article(group or labels[0].name), (foreground_box(rgb),))


def article(name: str) -> str:
    return f"{'an' if name[:1].lower() in 'aeiou' else 'a'} {name}"


def unmarked(text: str) -> str:
    """The text without the marks a bullet is read as at its start."""
    start = 0
    while start < len(text) and not text[start].isalnum():
        start += 1
    return text[start:]


def foreground_box(rgb: np.ndarray) -> tuple[float, float, float, float]:
    """(x0, y0, x1, y1) around the pixels unlike the border's median colour; the whole picture if none are."""
    height, width = rgb.shape[:2]
    border = np.concatenate([rgb[0], rgb[-1], rgb[:, 0], rgb[:, -1]])
    differs = np.abs(rgb.astype(np.int16) - np.median(border, axis=0).astype(np.int16)).sum(axis=2) \
        > BACKGROUND_DIFFERENCE
    rows, cols = np.flatnonzero(differs.any(axis=1)), np.flatnonzero(differs.any(axis=0))
    if rows.size == 0:
        return 0.0, 0.0, float(width), float(height)
    return float(cols[0]), float(rows[0]), float(cols[-1] + 1), float(rows[-1] + 1)
