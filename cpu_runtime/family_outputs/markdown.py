"""Nougat's job on the CPU: a page's markdown rebuilt from its OCR layout.

Lines (layout.group_lines) much taller than the page's body text are headings, the tallest size `#`, the next
`##` and so on; a short, centred line at the top of the page stands out as a heading too. Lines that start
with a bullet or a number are list items; runs of lines split into the same number of cells by wide gaps are a
table (the first row its header); the other lines are joined into paragraphs, which break at a wider gap
between lines or after a short line that ends a sentence.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from statistics import median

from .layout import Line, TextBox, group_lines
from .messages import MSG_NO_PAGE_TEXT

HEADING_RATIO = 1.25     # a line this many times the body text's height is a heading
LEVEL_STEP = 1.12        # heading sizes within this ratio of one another share a level
MAX_LEVEL = 4
CELL_GAP = 1.5           # a gap this many line heights wide separates table cells
PARAGRAPH_GAP = 0.9      # a gap this many body heights between lines starts a new paragraph
SHORT_LINE = 0.8         # a sentence ending on a line shorter than this share of the text's width ends a paragraph
BULLET = re.compile(r"^[•·▪●◦‣∙*–—-]\s*(?P<text>.+)$")
NUMBERED = re.compile(r"^(?P<number>\d{1,3})[.)]\s*(?P<text>.+)$")


@dataclass(frozen=True)
class Block:
    """One markdown block: heading (level 1..), paragraph, list item (bullet or number), or table (rows)."""

    kind: str
    text: str = ""
    level: int = 0
    rows: tuple[tuple[str, ...], ...] = ()

    def markdown(self) -> str:
        if self.kind == "heading":
            return f"{'#' * self.level} {self.text}"
        if self.kind == "table":
            header, *body = self.rows
            out = [_row(header), "| " + " | ".join("---" for _ in header) + " |"]
            return "\n".join(out + [_row(r) for r in body])
        return self.text


def _row(cells: tuple[str, ...]) -> str:
    return "| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |"


def cells(line: Line) -> list[str]:
    """The line's text split where boxes are separated by a gap wider than CELL_GAP line heights."""
    parts, current = [], [line.boxes[0]]
    for before, box in zip(line.boxes, line.boxes[1:], strict=False):
        if box.x0 - before.x1 > CELL_GAP * line.height:
            parts.append(current)
            current = []
        current.append(box)
    parts.append(current)
    return [" ".join(b.text for b in part) for part in parts]


def heading_levels(heights: list[float]) -> dict[float, int]:
    """Heading heights -> level, the tallest 1; heights within LEVEL_STEP of the previous size share its level."""
    levels, level, previous = {}, 0, None
    for height in sorted(set(heights), reverse=True):
        if previous is None or previous / height > LEVEL_STEP:
            level = min(MAX_LEVEL, level + 1)
            previous = height
        levels[height] = level
    return levels


def _is_title_line(line: Line, index: int, lines: list[Line], width: float, body: float) -> bool:
    """Position: the first line, short, centred on the page and set apart from the next line."""
    if index != 0 or len(lines) < 2 or len(line.text.split()) > 12:
        return False
    centre = (line.x0 + line.x1) / 2
    gap = lines[1].y0 - line.y1
    return abs(centre - width / 2) < 0.08 * width and (line.x1 - line.x0) < 0.7 * width and gap > PARAGRAPH_GAP * body


def page_blocks(boxes: list[TextBox], page_width: float) -> list[Block]:
    """The page's markdown blocks in reading order (top to bottom)."""
    lines = group_lines(boxes)
    if not lines:
        return []
    body = median(line.height for line in lines)
    tall = [line.height for line in lines if line.height >= HEADING_RATIO * body]
    levels = heading_levels(tall)
    kinds = []
    for index, line in enumerate(lines):
        split = cells(line)
        if line.height in levels:
            kinds.append(("heading", levels[line.height]))
        elif _is_title_line(line, index, lines, page_width, body):
            kinds.append(("heading", 1 if not levels else min(MAX_LEVEL, max(levels.values()) + 1)))
        elif len(split) >= 2:
            kinds.append(("row", len(split)))
        else:
            kinds.append(("text", 0))
    return _blocks(lines, kinds, body)


def _blocks(lines: list[Line], kinds: list[tuple[str, int]], body: float) -> list[Block]:
    blocks: list[Block] = []
    paragraph: list[Line] = []
    right = max(line.x1 for line in lines)
    left = min(line.x0 for line in lines)

    def flush():
        if paragraph:
            blocks.append(Block("paragraph", join_lines([ln.text for ln in paragraph])))
            paragraph.clear()

    index = 0
    while index < len(lines):
        line, (kind, value) = lines[index], kinds[index]
        if kind == "row":
            run = index
            while run < len(lines) and kinds[run] == ("row", value):
                run += 1
            if run - index >= 2:
                flush()
                blocks.append(Block("table", rows=tuple(tuple(cells(ln)) for ln in lines[index:run])))
                index = run
                continue
            kind = "text"
        if kind == "heading":
            flush()
            blocks.append(Block("heading", line.text, level=value))
        else:
            item = list_item(line.text)
            if item is not None:
                flush()
                blocks.append(Block("item", item))
            elif blocks and blocks[-1].kind == "item" and not paragraph and _continues(lines[index - 1], line, body):
                last = blocks.pop()
                blocks.append(Block("item", join_lines([last.text, line.text])))
            else:
                if paragraph and _breaks(paragraph[-1], line, body, left, right):
                    flush()
                paragraph.append(line)
        index += 1
    flush()
    return blocks


def _continues(before: Line, line: Line, body: float) -> bool:
    """A list item's wrapped line: close below it and indented past the bullet."""
    return line.y0 - before.y1 <= PARAGRAPH_GAP * body and line.x0 > before.x0 + 0.5 * body


def _breaks(before: Line, line: Line, body: float, left: float, right: float) -> bool:
    if line.y0 - before.y1 > PARAGRAPH_GAP * body:
        return True
    short = (before.x1 - left) < SHORT_LINE * (right - left)
    return short and before.text.rstrip().endswith((".", "!", "?", ":"))


def list_item(text: str) -> str | None:
    """'- text' or '3. text' for a line starting with a bullet or a number; None for other lines."""
    number = NUMBERED.match(text)
    if number:
        return f"{int(number['number'])}. {number['text'].strip()}"
    bullet = BULLET.match(text)
    if bullet and bullet["text"].strip():
        return f"- {bullet['text'].strip()}"
    return None


def join_lines(texts: list[str]) -> str:
    """Lines of one paragraph joined by spaces; a word hyphenated at a line's end joined again."""
    out = ""
    for text in texts:
        text = text.strip()
        if out.endswith("-") and len(out) > 1 and out[-2].isalpha() and text[:1].islower():
            out = out[:-1] + text
        else:
            out = f"{out} {text}" if out else text
    return out


def page_markdown(boxes: list[TextBox], page_width: float) -> str:
    """The page as markdown (Nougat's mmd): blocks separated by blank lines."""
    blocks = page_blocks(boxes, page_width)
    if not blocks:
        return MSG_NO_PAGE_TEXT
    out = blocks[0].markdown()
    for before, block in zip(blocks, blocks[1:], strict=False):
        together = before.kind == block.kind == "item"  # one list: its items on consecutive lines
        out += ("\n" if together else "\n\n") + block.markdown()
    return out
