"""Text found by OCR as typed boxes, and boxes grouped into lines in reading order."""

from __future__ import annotations

from dataclasses import dataclass, field
from statistics import median


@dataclass(frozen=True)
class TextBox:
    """One piece of text OCR found: its axis-aligned box in pixels (x0, y0 top-left; x1, y1 bottom-right)."""

    x0: float
    y0: float
    x1: float
    y1: float
    text: str
    score: float = 1.0

    @property
    def height(self) -> float:
        return self.y1 - self.y0

    @property
    def centre_x(self) -> float:
        return (self.x0 + self.x1) / 2

    @property
    def centre_y(self) -> float:
        return (self.y0 + self.y1) / 2


@dataclass
class Line:
    """Boxes side by side on one line, left to right."""

    boxes: list[TextBox] = field(default_factory=list)

    @property
    def x0(self) -> float:
        return min(b.x0 for b in self.boxes)

    @property
    def x1(self) -> float:
        return max(b.x1 for b in self.boxes)

    @property
    def y0(self) -> float:
        return min(b.y0 for b in self.boxes)

    @property
    def y1(self) -> float:
        return max(b.y1 for b in self.boxes)

    @property
    def height(self) -> float:
        return median(b.height for b in self.boxes)

    @property
    def text(self) -> str:
        return " ".join(b.text for b in self.boxes)


def from_ocr(result, min_score: float = 0.5) -> list[TextBox]:
    """RapidOCR's [[four corner points, text, score], ...] (or None) as TextBoxes, low scores and blanks dropped."""
    boxes = []
    for corners, text, score in result or []:
        text = str(text).strip()
        if not text or float(score) < min_score:
            continue
        xs, ys = [float(p[0]) for p in corners], [float(p[1]) for p in corners]
        boxes.append(TextBox(min(xs), min(ys), max(xs), max(ys), text, float(score)))
    return boxes


def group_lines(boxes: list[TextBox]) -> list[Line]:
    """Boxes whose vertical centres fall inside one another's extent form a line; lines top to bottom."""
    lines: list[Line] = []
    for box in sorted(boxes, key=lambda b: (b.centre_y, b.x0)):
        for line in lines:
            if line.y0 <= box.centre_y <= line.y1 and box.y0 <= (line.y0 + line.y1) / 2 <= box.y1:
                line.boxes.append(box)
                break
        else:
            lines.append(Line([box]))
    for line in lines:
        line.boxes.sort(key=lambda b: b.x0)
    return sorted(lines, key=lambda ln: ln.y0)


INK_CONTRAST = 60  # a pixel this far from its box's median grey level is ink


EDGE_LINE = 0.9   # an inked column (row) at the box's edge covering this share of its height (width) is a line


def without_edge_lines(ink):
    """The [h, w] ink mask without the lines OCR boxed along with the text at its edges (a chart's axis beside
    its tick labels, a rule under a heading): edge columns or rows inked across nearly the whole box."""
    ink = ink.copy()
    if ink.size == 0:
        return ink
    height, width = ink.shape
    for columns in (range(width), range(width - 1, -1, -1)):
        for column in columns:
            if ink[:, column].mean() < EDGE_LINE:
                break
            ink[:, column] = False
    for rows in (range(height), range(height - 1, -1, -1)):
        for row in rows:
            if ink[row].mean() < EDGE_LINE:
                break
            ink[row] = False
    return ink


def tighten(boxes: list[TextBox], grey) -> list[TextBox]:
    """Each box shrunk to the ink inside it ([H, W] uint8 grey picture): OCR pads its boxes, which hides the
    difference in size between a heading and body text."""
    import numpy as np

    out = []
    height, width = grey.shape[:2]
    for box in boxes:
        x0, y0 = max(0, int(box.x0)), max(0, int(box.y0))
        x1, y1 = min(width, int(np.ceil(box.x1))), min(height, int(np.ceil(box.y1)))
        crop = grey[y0:y1, x0:x1].astype(np.int16)
        ink = np.abs(crop - np.median(crop)) > INK_CONTRAST if crop.size else crop.astype(bool)
        ink = without_edge_lines(ink)
        rows, cols = np.flatnonzero(ink.any(axis=1)), np.flatnonzero(ink.any(axis=0))
        if rows.size == 0:
            out.append(box)
            continue
        out.append(TextBox(float(x0 + cols[0]), float(y0 + rows[0]), float(x0 + cols[-1] + 1), float(y0 + rows[-1] + 1),
                           box.text, box.score))
    return out


WORD_GAP = 0.22      # a run of blank columns this many ink heights wide separates words
SPACED_GAP = 0.6     # widened to this many ink heights for a second reading
PAD = 0.5            # blank margin around the re-read line, in ink heights


def word_gaps(ink_columns, height: float) -> list[tuple[int, int]]:
    """(start, end) of the runs of blank columns between inked ones at least WORD_GAP * height wide."""
    import numpy as np

    inked = np.flatnonzero(ink_columns)
    if inked.size < 2:
        return []
    gaps = []
    for before, after in zip(inked, inked[1:], strict=False):
        if after - before - 1 >= WORD_GAP * height:
            gaps.append((int(before) + 1, int(after)))
    return gaps


def widened(crop, gaps: list[tuple[int, int]], height: float):
    """The [h, w] grey crop with each gap made at least SPACED_GAP * height wide and a blank margin around it
    (blank = the crop's median level), so a recogniser that ran words together sees their spaces."""
    import numpy as np

    blank = np.median(crop)
    least, pad = int(round(SPACED_GAP * height)), int(round(PAD * height))
    pieces, start = [], 0
    for gap_start, gap_end in gaps:
        pieces.append(crop[:, start:gap_start])
        pieces.append(np.full((crop.shape[0], max(least, gap_end - gap_start)), blank, crop.dtype))
        start = gap_end
    pieces.append(crop[:, start:])
    line = np.concatenate(pieces, axis=1)
    out = np.full((line.shape[0] + 2 * pad, line.shape[1] + 2 * pad), blank, crop.dtype)
    out[pad:pad + line.shape[0], pad:pad + line.shape[1]] = line
    return out


def starts_with_mark(ink, gaps: list[tuple[int, int]], height: float) -> bool:
    """Whether the line's first inked piece (before its first word gap) is a bullet or dash: narrower and much
    shorter than the line's ink, and clear of its top and bottom."""
    import numpy as np

    if not gaps:
        return False
    piece = ink[:, :gaps[0][0]]
    rows = np.flatnonzero(piece.any(axis=1))
    cols = np.flatnonzero(piece.any(axis=0))
    if rows.size == 0:
        return False
    tall, wide = rows[-1] - rows[0] + 1, cols[-1] - cols[0] + 1
    return bool(tall <= 0.45 * height and wide <= 0.8 * height and rows[0] > 0.15 * height
                and rows[-1] < ink.shape[0] - 0.15 * height)
