"""Kosmos-2's job on the CPU: phrases grounded to boxes, written in Kosmos-2's generated markup.

A box becomes two patch index tokens on the 32 x 32 grid as upstream's processor computes them
(Kosmos2Processor's coordinate_to_patch_index: the upper-left cell floor(x1*32), floor(y1*32), the lower-right
cell ceil(x2*32 - 1), ceil(y2*32 - 1), index = row * 32 + column; facts in tests/data/upstream/family_outputs.yaml),
several boxes of one phrase separated by `</delimiter_of_multi_objects/>`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from .messages import NOTHING_GROUNDED

GRID = 32
PATCH_TOKEN = "<patch_index_{:04d}>"
DELIMITER = "</delimiter_of_multi_objects/>"
GROUNDING = "<grounding>"
CAPTION = "An image of"  # Kosmos-2's caption prompt (run.py's default input text), continued by the phrases
ANSWER_LEAD = "It shows"  # what the answer to any other prompt starts with


@dataclass(frozen=True)
class Grounded:
    """A phrase and its boxes in pixels (x0, y0, x1, y1) of a picture `size` (width, height)."""

    phrase: str
    boxes: tuple[tuple[float, float, float, float], ...]


def patch_indices(box: tuple[float, float, float, float], width: int, height: int, grid: int = GRID) -> tuple[int, int]:
    """(upper-left, lower-right) patch indices of a pixel box; ValueError for an empty box."""
    x0, y0, x1, y1 = (max(0.0, min(1.0, v)) for v in (box[0] / width, box[1] / height, box[2] / width,
                                                        box[3] / height))
    if not (x1 > x0 and y1 > y0):
        raise ValueError(f"The box {box} is empty: it needs x1 > x0 and y1 > y0.")
    first = math.floor(y0 * grid) * grid + math.floor(x0 * grid)
    last_x, last_y = math.ceil(x1 * grid - 1), math.ceil(y1 * grid - 1)
    first_x, first_y = first % grid, first // grid
    last = max(first_y, last_y) * grid + max(first_x, last_x)
    return first, last


def object_markup(boxes, width: int, height: int) -> str:
    """`<object><patch_index_A><patch_index_B>...</object>` for one phrase's boxes."""
    pairs = [PATCH_TOKEN.format(a) + PATCH_TOKEN.format(b) for a, b in
             (patch_indices(box, width, height) for box in boxes)]
    return "<object>" + DELIMITER.join(pairs) + "</object>"


def grounded_text(prompt: str, found: list[Grounded], width: int, height: int) -> str:
    """Each phrase and its boxes in Kosmos-2's markup, after the caption prompt ("An image of") or, for anything
    else asked, after "It shows": the answer alone, the question not repeated (the runner returns only the new
    tokens)."""
    asked = prompt.replace(GROUNDING, "").strip()
    lead = CAPTION if not asked or asked.lower() == CAPTION.lower() else ANSWER_LEAD
    if not found:
        return f"{lead} {NOTHING_GROUNDED}."
    parts = [f"<phrase> {g.phrase}</phrase>{object_markup(g.boxes, width, height)}" for g in found if g.boxes]
    joined = parts[0] if len(parts) == 1 else ",".join(parts[:-1]) + " and" + parts[-1]
    return f"{lead}{joined}."
