"""Deplot's job on the CPU: a bar chart's data table in Deplot's linearised format.

Bars are the solid regions of one saturated colour (each colour's connected regions that fill their bounding
box); the value axis is calibrated from the numeric tick labels OCR reads left of the bars (a straight line
through their heights and values, anchored at the bars' common base when that reads as zero); each bar's value
is the calibrated value at its top, and its label the text OCR reads just under it. The title is the text
above the plot. Written as Deplot writes it: `TITLE | title`, the header, the rows, joined by ` <0x0A> `.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from statistics import median

import numpy as np

from .layout import TextBox
from .messages import MSG_NO_BARS

NEWLINE_TOKEN = " <0x0A> "
CELL_SEPARATOR = " | "
TITLE_KEY = "TITLE"
SATURATION = 60          # max - min channel above this: a coloured pixel
COLOUR_STEP = 48         # colours are grouped in steps of this many levels per channel
MIN_SHARE = 0.0015       # a bar covers at least this share of the picture
MIN_FILL = 0.85          # and fills this share of its bounding box
BASE_SLACK = 3           # pixels a bar's bottom may be off the bars' common base
HEADER = ("Label", "Value")
NUMBER = re.compile(r"^[-+−]?[$€£]?\d[\d,]*(\.\d+)?%?$|^[-+−]?[$€£]?\.\d+%?$")


@dataclass(frozen=True)
class Bar:
    """A vertical bar: its box in pixels (x0, y0 top-left, x1, y1 bottom-right, exclusive) and its colour."""

    x0: int
    y0: int
    x1: int
    y1: int
    colour: tuple[int, int, int]

    @property
    def centre_x(self) -> float:
        return (self.x0 + self.x1) / 2


@dataclass(frozen=True)
class Axis:
    """value = offset + slope * y (y in pixels, down), and the tick step between labels."""

    offset: float
    slope: float
    step: float

    def value(self, y: float) -> float:
        return self.offset + self.slope * y

    def text(self, value: float) -> str:
        """The value as a reading of the chart: snapped to a tenth of the tick step when that is within a pixel,
        else to the precision one pixel gives; no trailing zeros."""
        fine = self.step / 10
        pixel = abs(self.slope)
        snapped = round(value / fine) * fine if fine > 0 else value
        if abs(snapped - value) <= pixel:
            value, decimals = snapped, _decimals(fine)
        else:
            decimals = _decimals(pixel)
        shown = f"{value:.{decimals}f}"
        if "." in shown:
            shown = shown.rstrip("0").rstrip(".")
        return "0" if float(shown) == 0 else shown


def find_bars(rgb: np.ndarray) -> list[Bar]:
    """Solid single-colour vertical bars in an [H, W, 3] uint8 RGB picture, left to right."""
    import cv2

    pixels = rgb.astype(np.int16)
    coloured = (pixels.max(axis=2) - pixels.min(axis=2)) > SATURATION
    keys = (pixels // COLOUR_STEP) @ np.array([64, 8, 1], np.int16)
    least = MIN_SHARE * rgb.shape[0] * rgb.shape[1]
    bars = []
    for key in np.unique(keys[coloured]):
        mask = (coloured & (keys == key)).astype(np.uint8)
        if mask.sum() < least:
            continue
        count, labels, stats, _ = cv2.connectedComponentsWithStats(mask, connectivity=4)
        for index in range(1, count):
            x, y, w, h, area = (int(v) for v in stats[index])
            if area >= least and w >= 3 and h >= 2 and area >= MIN_FILL * w * h:
                colour = tuple(int(c) for c in np.median(rgb[labels == index], axis=0))
                bars.append(Bar(x, y, x + w, y + h, colour))
    return sorted(bars, key=lambda b: b.x0)


def number(text: str) -> float | None:
    """A tick label's value ("1,000", "25%", "$5", "0.5"); None for other text."""
    cleaned = text.strip().replace(" ", "").replace("−", "-").rstrip("-–—_")  # a tick mark read with its label
    if not NUMBER.match(cleaned):
        return None
    return float(cleaned.replace(",", "").replace("%", "").lstrip("$€£").replace("-$", "-"))


def _decimals(size: float) -> int:
    """Decimals that show steps of this size (2.5 -> 1, 0.25 -> 2, 25 -> 0; one pixel's 0.33 -> 1)."""
    if size <= 0:
        return 2
    written = f"{size:.2g}"
    exact = "e" not in written and abs(float(written) - size) < 1e-9
    return len(written.partition(".")[2]) if exact else max(0, math.ceil(-math.log10(size)))


def calibrate(ticks: list[TextBox], base: float | None = None) -> Axis | None:
    """The value axis from numeric tick labels (at least two heights); anchored at `base` (the bars' bottom
    edge) when the labels put zero within half a step of it."""
    points = sorted({(t.centre_y, v) for t in ticks if (v := number(t.text)) is not None})
    if len({y for y, _ in points}) < 2:
        return None
    ys, values = np.array([p[0] for p in points]), np.array([p[1] for p in points])
    # Theil-Sen: the median of the pairwise slopes, so one label boxed with a stray line does not tilt the axis
    pairs = [(values[j] - values[i]) / (ys[j] - ys[i]) for i in range(len(ys)) for j in range(i + 1, len(ys))
             if ys[j] != ys[i]]
    slope = float(np.median(pairs))
    offset = float(np.median(values - slope * ys))
    if slope >= 0:  # values must grow upwards
        return None
    steps = np.diff(np.sort(np.unique(values)))
    step = float(median(steps)) if len(steps) else abs(float(values[0]))
    if base is not None and abs(offset + slope * base) < step / 2:
        offset = -slope * base  # zero exactly at the bars' base
    return Axis(float(offset), float(slope), step)


def _label(bar: Bar, boxes: list[TextBox], base: float, reach: float) -> TextBox | None:
    """The text nearest under the bar (years and other numbers too: the ticks are left of the plot)."""
    under = [b for b in boxes if b.y0 >= base - 2 and abs(b.centre_x - bar.centre_x) <= reach]
    return min(under, key=lambda b: b.y0) if under else None


def _printed(bar: Bar, boxes: list[TextBox]) -> TextBox | None:
    """A number printed over the bar or on its top (a chart that labels its bars): Deplot writes that value, not a
    reading of the bar's height. The nearest to the bar's top."""
    over = [b for b in boxes if number(b.text) is not None and bar.x0 - 2 <= b.centre_x <= bar.x1 + 2
            and bar.y0 - 3 * max(1.0, b.y1 - b.y0) <= b.centre_y <= bar.y1]
    return min(over, key=lambda b: abs(b.centre_y - bar.y0)) if over else None


def chart_rows(rgb: np.ndarray, boxes: list[TextBox]) -> tuple[str, tuple[str, str], list[tuple[str, str]]] | None:
    """(title, header, [(label, value)]) of a bar chart; None when no bars are found."""
    bars = find_bars(rgb)
    if not bars:
        return None
    base = float(median(b.y1 for b in bars))
    bars = [b for b in bars if abs(b.y1 - base) <= BASE_SLACK]  # a legend's swatches stand apart from the base
    left = min(b.x0 for b in bars)
    top = min(b.y0 for b in bars)
    ticks = [b for b in boxes if b.x1 <= left + 2 and number(b.text) is not None]
    axis = calibrate(ticks, base)
    gaps = [b.x0 - a.x1 for a, b in zip(bars, bars[1:], strict=False)]
    widths = [b.x1 - b.x0 for b in bars]
    reach = float(median(widths)) / 2 + (max(0.0, float(median(gaps))) / 2 if gaps else float(median(widths)))
    used, rows = set(), []
    for number_, bar in enumerate(bars, 1):
        label = _label(bar, [b for b in boxes if b.x1 > left + 2], base, reach)
        if label is not None:
            used.add(label)
        printed = _printed(bar, [b for b in boxes if b.x1 > left + 2])
        if printed is not None:
            used.add(printed)
            value = printed.text.strip()
        else:
            value = axis.text(axis.value(bar.y0)) if axis else f"{(base - bar.y0):.0f}px"
        rows.append((label.text if label else f"Bar {number_}", value))
    highest_tick = min((t.y0 for t in ticks), default=top)
    above = [b for b in boxes if b.y1 <= min(top, highest_tick) and b.x1 > left and b not in used
             and number(b.text) is None]
    title = " ".join(b.text for b in sorted(above, key=lambda b: (round(b.y0), b.x0)))
    below = [b for b in boxes if b.y0 > base and b not in used and number(b.text) is None
             and b.y0 > max((u.y1 for u in used), default=base)]
    header = (" ".join(b.text for b in sorted(below, key=lambda b: b.x0)) or HEADER[0], HEADER[1])
    return title, header, rows


def deplot_table(rgb: np.ndarray, boxes: list[TextBox]) -> str:
    """The chart's table as Deplot writes it (`TITLE | ...`, the header, one row per bar, ` <0x0A> ` between)."""
    found = chart_rows(rgb, boxes)
    if found is None:
        return MSG_NO_BARS
    title, header, rows = found
    lines = [f"{TITLE_KEY}{CELL_SEPARATOR}{title}".rstrip(), CELL_SEPARATOR.join(header)]
    lines += [CELL_SEPARATOR.join(row) for row in rows]
    return NEWLINE_TOKEN.join(lines)
