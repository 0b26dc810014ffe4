"""Kosmos-2's grounded text: `<phrase>a cat</phrase><object><patch_index_0044><patch_index_0863></object>`.

Parsed into the clean text and its phrases, each with its place in that text and its boxes, with the rules of
upstream's processor (facts and the transformers version read: tests/data/upstream/family_outputs.yaml;
tests compare the results with the installed transformers' own functions):

- only the text after the last `</image>` counts (the prompt's image tokens come before it);
- an `<object>` holds one or more pairs of patch indices (upper-left cell, lower-right cell on a 32 x 32
  grid), pairs separated by `</delimiter_of_multi_objects/>`; the phrase right before it names it, and an
  object without a phrase is named by its indices;
- a pair in one row or one column covers whole cells, any other pair spans from cell centre to cell centre;
- the clean text drops every `<...>` tag and surrounding spaces; phrase positions index the clean text.

`grounded_phrase` writes the markup back (the CPU twin answers in Kosmos-2's own format).
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass

GRID = 32  # patches per side: 1024 patch index tokens
END_OF_IMAGE = "</image>"
PHRASE_OPEN, PHRASE_CLOSE = "<phrase>", "</phrase>"
OBJECT_OPEN, OBJECT_CLOSE = "<object>", "</object>"
BOX_SEPARATOR = "</delimiter_of_multi_objects/>"
PATCH_TOKEN = "<patch_index_{:04d}>"

_TAG = re.compile(r"<.*?>")
_PATCH = r"<patch_index_(\d+)>"
_PAIR = re.compile(_PATCH + _PATCH)
_BARE_PAIR = r"<patch_index_\d+><patch_index_\d+>"
_ENTITY = re.compile(
    f"(?:{re.escape(PHRASE_OPEN)}([^<]+){re.escape(PHRASE_CLOSE)})?"
    f"{re.escape(OBJECT_OPEN)}((?:{_BARE_PAIR}{re.escape(BOX_SEPARATOR)})*{_BARE_PAIR}){re.escape(OBJECT_CLOSE)}"
)


@dataclass(frozen=True)
class Box:
    """A box in coordinates normalised to the picture (0..1, x to the right, y down) and its two patch cells."""

    x1: float
    y1: float
    x2: float
    y2: float
    first_patch: int
    last_patch: int

    @property
    def coordinates(self) -> tuple[float, float, float, float]:
        return (self.x1, self.y1, self.x2, self.y2)

    def pixels(self, width: int, height: int) -> tuple[int, int, int, int]:
        """(left, top, right, bottom) in a picture of that size, ordered and kept inside it."""
        xs = sorted(min(max(v, 0.0), 1.0) * width for v in (self.x1, self.x2))
        ys = sorted(min(max(v, 0.0), 1.0) * height for v in (self.y1, self.y2))
        return (round(xs[0]), round(ys[0]), round(xs[1]), round(ys[1]))


@dataclass(frozen=True)
class GroundedPhrase:
    """A phrase of the clean text (`text[start:end]`) and the boxes it names."""

    text: str
    start: int
    end: int
    boxes: tuple[Box, ...]

    @property
    def named(self) -> bool:
        """False for an object the model gave no phrase (its text is then its patch indices)."""
        return not self.text.startswith("<patch_index_")


@dataclass(frozen=True)
class Grounding:
    """The clean text and its grounded phrases, in the order they appear."""

    text: str
    phrases: tuple[GroundedPhrase, ...]


def patch_box(first: int, last: int, grid: int = GRID) -> Box:
    """The box of an upper-left and a lower-right patch index."""
    cell = 1.0 / grid
    left, top = first % grid, first // grid
    right, bottom = last % grid, last // grid
    if left == right or top == bottom:  # one row or one column (or one cell): whole cells
        x1, y1, x2, y2 = left * cell, top * cell, right * cell + cell, bottom * cell + cell
    else:  # from the centre of the first cell to the centre of the last
        x1, y1 = left * cell + cell / 2, top * cell + cell / 2
        x2, y2 = right * cell + cell / 2, bottom * cell + cell / 2
    return Box(x1, y1, x2, y2, first, last)


def box_patches(x1: float, y1: float, x2: float, y2: float, grid: int = GRID) -> tuple[int, int]:
    """The patch indices of the cells holding a box's upper-left and lower-right corners (normalised box)."""
    if not (x2 > x1 and y2 > y1):
        raise ValueError(f"a box needs x2 > x1 and y2 > y1, not ({x1}, {y1}, {x2}, {y2})")
    left, top = math.floor(x1 * grid), math.floor(y1 * grid)
    right, bottom = math.ceil(x2 * grid - 1), math.ceil(y2 * grid - 1)
    return top * grid + left, bottom * grid + right


def _visible_length(raw: str) -> int:
    return len(_TAG.sub("", raw))


def parse_grounding(generated: str, grid: int = GRID) -> Grounding:
    """Kosmos-2's generated text as clean text and grounded phrases; text without markup has no phrases."""
    text = generated.split(END_OF_IMAGE)[-1]
    found: list[tuple[str, int, int, list[tuple[int, int]]]] = []
    for match in _ENTITY.finditer(text):
        pairs = [(int(a), int(b)) for a, b in _PAIR.findall(match.group(2))]
        if match.group(1):
            found.append((match.group(1), *match.span(1), pairs))
        else:  # an object without a phrase: one entry per box, named by its indices, placed where it starts
            found += [(f"<patch_index_{a}><patch_index_{b}>", match.start(), match.start(), [(a, b)])
                      for a, b in pairs]
    clean = _TAG.sub("", text)
    lead = len(clean) - len(clean.lstrip())
    phrases = []
    for name, start, end, pairs in found:
        name_lead, name_trail = len(name) - len(name.lstrip()), len(name) - len(name.rstrip())
        phrases.append(GroundedPhrase(
            name.strip(),
            _visible_length(text[:start]) - lead + name_lead,
            _visible_length(text[:end]) - lead - name_trail,
            tuple(patch_box(a, b, grid) for a, b in pairs),
        ))
    return Grounding(clean.strip(), tuple(phrases))


def grounded_phrase(phrase: str, boxes: Sequence[tuple[float, float, float, float]], grid: int = GRID) -> str:
    """`phrase` with its boxes (normalised x1, y1, x2, y2) in Kosmos-2's generated markup."""
    if not boxes:
        raise ValueError("a grounded phrase needs at least one box")
    if "<" in phrase:
        raise ValueError("a phrase cannot hold '<' in Kosmos-2's markup")
    pairs = [box_patches(*box, grid=grid) for box in boxes]
    objects = BOX_SEPARATOR.join(PATCH_TOKEN.format(a) + PATCH_TOKEN.format(b) for a, b in pairs)
    return f"{PHRASE_OPEN}{phrase}{PHRASE_CLOSE}{OBJECT_OPEN}{objects}{OBJECT_CLOSE}"
