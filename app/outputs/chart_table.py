"""Deplot's linearised data table: parsed into a `ChartTable`, written back, shown as Markdown or CSV.

The format (facts with sources: tests/data/upstream/family_outputs.yaml): rows are separated by a line break,
which the decoded text carries as the byte token `<0x0A>` (some servers give `\\n` or `[SEP]`); cells by
` | `; an optional first row `TITLE | <title>`; the next row is the header. Model output can be ragged
(rows shorter or longer than the header) and have holes (empty cells) or `nan`: every row is padded to the
widest one, and nothing is dropped.
"""

from __future__ import annotations

import csv
import io
import math
import re
from dataclasses import dataclass

NEWLINE_TOKEN = "<0x0A>"
ROW_BREAKS = (NEWLINE_TOKEN, "[SEP]")
CELL_SEPARATOR = " | "
TITLE_KEY = "TITLE"
_SPECIAL_TOKENS = ("<pad>", "</s>")
_TITLE = re.compile(rf"^{TITLE_KEY}\s*\|", re.IGNORECASE)
_MARKDOWN_SPECIAL = re.compile(r"([\\|`*_\[\]<>#])")
_CSV_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")
_NUMBER = re.compile(r"^[-+]?(\d[\d,]*(\.\d*)?|\.\d+)([eE][-+]?\d+)?$")


@dataclass(frozen=True)
class ChartTable:
    """A chart's data: an optional title, the header row and the data rows, all as text, all one width."""

    title: str | None
    header: tuple[str, ...]
    rows: tuple[tuple[str, ...], ...]

    @property
    def width(self) -> int:
        return len(self.header)

    @property
    def is_empty(self) -> bool:
        return not self.header and not self.rows

    def column(self, index: int) -> tuple[str, ...]:
        """The cells of one column, header excluded."""
        return tuple(row[index] for row in self.rows)


def _cells(line: str) -> list[str]:
    return [cell.strip() for cell in line.split("|")]


def parse_deplot(text: str) -> ChartTable:
    """Deplot's output (raw with `<0x0A>`, or with real line breaks) as a table; never raises."""
    for token in ROW_BREAKS:
        text = text.replace(token, "\n")
    for token in _SPECIAL_TOKENS:
        text = text.replace(token, "")
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    title = None
    if lines and _TITLE.match(lines[0]):
        title = lines.pop(0).split("|", 1)[1].strip() or None
    table = [_cells(line) for line in lines]
    width = max((len(row) for row in table), default=0)
    table = [tuple(row + [""] * (width - len(row))) for row in table]
    return ChartTable(title, table[0] if table else (), tuple(table[1:]))


def deplot_text(table: ChartTable, row_break: str = f" {NEWLINE_TOKEN} ") -> str:
    """The table in Deplot's linearised format, rows joined as the decoded model output joins them."""
    lines = [f"{TITLE_KEY}{CELL_SEPARATOR}{table.title}"] if table.title else []
    lines += [CELL_SEPARATOR.join(row) for row in (table.header, *table.rows) if row]
    return row_break.join(lines)


def _markdown_cell(text: str) -> str:
    return _MARKDOWN_SPECIAL.sub(r"\\\1", text) or " "


def table_markdown(table: ChartTable) -> str:
    """The title in bold over a Markdown table (cells escaped); "" for an empty table."""
    if table.is_empty:
        return ""
    header = table.header or ("",) * table.width
    lines = [f"**{_markdown_cell(table.title)}**", ""] if table.title else []
    lines.append("| " + " | ".join(_markdown_cell(cell) for cell in header) + " |")
    lines.append("|" + "|".join(" --- " for _ in header) + "|")
    lines += ["| " + " | ".join(_markdown_cell(cell) for cell in row) + " |" for row in table.rows]
    return "\n".join(lines)


def cell_number(text: str) -> float | None:
    """A cell's value as a number ("1,234.5", "12%" -> 12.0, "-3e2"); None for text, holes and nan."""
    cleaned = text.strip().removesuffix("%").strip()
    if not _NUMBER.match(cleaned):
        return None
    value = float(cleaned.replace(",", ""))
    return value if math.isfinite(value) else None


def _csv_cell(text: str) -> str:
    """A cell that a spreadsheet would run as a formula is quoted with a leading apostrophe (numbers stay)."""
    if text.startswith(_CSV_FORMULA_START) and cell_number(text) is None:
        return "'" + text
    return text


def table_csv(table: ChartTable) -> str:
    """Header and rows as CSV (the title is not a row: name the file after it); "" for an empty table."""
    if table.is_empty:
        return ""
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    for row in (table.header, *table.rows):
        writer.writerow([_csv_cell(cell) for cell in row])
    return buffer.getvalue()
