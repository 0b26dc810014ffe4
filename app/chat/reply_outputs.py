"""What a reply's text holds besides prose, parsed once when the reply ends: a chart's data table (Deplot's
linearised format), phrases grounded to boxes (Kosmos-2's patch-index markup) or a markdown page (Nougat's mmd).

Any deployment's reply is read: the format decides, and the served family where the format alone is not
telling (a Nougat page). `as_fields` is the structured form the APIs return next to the raw text.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from app.outputs.chart_table import NEWLINE_TOKEN, ChartTable, parse_deplot, table_csv
from app.outputs.grounding import Grounding, parse_grounding

MARKDOWN_FAMILIES = ("nougat",)  # families whose replies are markdown pages whatever they look like
_PATCH = "<patch_index_"
_HEADING = re.compile(r"^(#{1,6} \S|\\section\*?\{)", re.MULTILINE)
_MMD_MARKS = re.compile(r"\\\(|\\\[|^\s*[-*] \S|^\|.*\|\s*$", re.MULTILINE)


@dataclass(frozen=True)
class ReplyOutputs:
    """What a reply was parsed into: at most one of a table, a grounding or a markdown page; `picture` is the
    picture (path or bytes) the boxes are drawn on (the message's last one), None when there was none."""

    table: ChartTable | None = None
    grounding: Grounding | None = None
    picture: str | bytes | None = None
    markdown: str | None = None

    @property
    def clean_text(self) -> str | None:
        """The reply's words without markup (grounded text) where that differs from its raw text."""
        return self.grounding.text if self.grounding else None


def looks_like_deplot(text: str) -> bool:
    """Deplot's linearised table: rows broken by `<0x0A>` (or lines), every row cut into cells by '|', at least
    a header and one row of two or more columns."""
    rows = [row.strip() for row in text.replace(NEWLINE_TOKEN, "\n").splitlines() if row.strip()]
    if len(rows) < 2 or not all("|" in row for row in rows):
        return False
    table = parse_deplot(text)
    return table.width >= 2 and len(table.rows) >= 1


def looks_like_mmd(text: str) -> bool:
    """A markdown page (Nougat's mmd): a heading, and another markdown mark or several paragraphs."""
    if not _HEADING.search(text):
        return False
    return bool(_MMD_MARKS.search(text)) or text.count("\n\n") >= 2


def parse_reply(text: str, family: str | None = None, picture: str | bytes | None = None) -> ReplyOutputs | None:
    """The reply's outputs, None for plain prose."""
    if _PATCH in text:
        grounding = parse_grounding(text)
        if grounding.phrases:
            return ReplyOutputs(grounding=grounding, picture=picture)
    if looks_like_deplot(text):
        return ReplyOutputs(table=parse_deplot(text))
    if (family in MARKDOWN_FAMILIES and text.strip()) or looks_like_mmd(text):
        return ReplyOutputs(markdown=text.strip())
    return None


def outputs_kind(outputs: ReplyOutputs) -> str:
    """"table", "grounding" or "markdown": what a saved conversation records, to parse the reply again."""
    return "table" if outputs.table is not None else "grounding" if outputs.grounding is not None else "markdown"


def as_fields(outputs: ReplyOutputs | None) -> dict:
    """The structured fields an API returns: `table` {title, header, rows, csv}, `grounding` {text, phrases:
    [{text, start, end, boxes: [[x1, y1, x2, y2], ...]}]} (boxes normalised to the picture, 0..1), `markdown`."""
    if outputs is None:
        return {}
    fields: dict = {}
    if outputs.table is not None:
        table = outputs.table
        fields["table"] = {"title": table.title, "header": list(table.header), "rows": [list(r) for r in table.rows],
                           "csv": table_csv(table)}
    if outputs.grounding is not None:
        fields["grounding"] = {"text": outputs.grounding.text, "phrases": [
            {"text": p.text, "start": p.start, "end": p.end,
             "boxes": [[round(v, 4) for v in box.coordinates] for box in p.boxes]}
            for p in outputs.grounding.phrases]}
    if outputs.markdown is not None:
        fields["markdown"] = outputs.markdown
    return fields
