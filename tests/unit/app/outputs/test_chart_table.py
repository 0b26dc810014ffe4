"""Deplot's linearised table against the recorded facts (tests/data/upstream/family_outputs.yaml)."""

import csv
import io
from pathlib import Path

import pytest
import yaml

from app.outputs import chart_table as T
from app.outputs.chart_table import (
    ChartTable,
    cell_number,
    deplot_text,
    parse_deplot,
    table_csv,
    table_markdown,
)

FACTS = yaml.safe_load((Path(__file__).parents[3] / "data/upstream/family_outputs.yaml").read_text())["deplot"]


def test_the_format_constants_are_the_recorded_ones():
    assert T.NEWLINE_TOKEN == FACTS["newline_token"]
    assert set(T.ROW_BREAKS) | {"\n"} == set(FACTS["row_breaks"])
    assert T.CELL_SEPARATOR == FACTS["cell_separator"] and T.TITLE_KEY == FACTS["title_key"]


def test_the_recorded_raw_output_parses_to_its_table():
    table = parse_deplot(FACTS["raw_example"])
    expected = FACTS["raw_example_table"]
    assert table.title == expected["title"]
    assert table.header == tuple(expected["header"])
    assert table.rows == tuple(tuple(row) for row in expected["rows"])


def test_holes_stay_empty_cells_in_their_columns():
    table = parse_deplot(FACTS["holes_example"])
    assert table.rows == tuple(tuple(row) for row in FACTS["holes_example_rows"])


def test_the_linearised_text_is_written_back_as_the_model_writes_it():
    assert deplot_text(parse_deplot(FACTS["raw_example"])) == FACTS["raw_example"]
    table = ChartTable("Sales", ("Year", "Sales"), (("2019", "10"), ("2020", "12.5")))
    assert parse_deplot(deplot_text(table)) == table
    assert parse_deplot(deplot_text(table, row_break="\n")) == table


def test_ragged_rows_are_padded_to_the_widest_row():
    table = parse_deplot("Year | Sales | Profit <0x0A> 2019 | 10 <0x0A> 2020 | 12 | 3 | 7")
    assert table.title is None and table.width == 4
    assert table.header == ("Year", "Sales", "Profit", "")
    assert table.rows == (("2019", "10", "", ""), ("2020", "12", "3", "7"))
    assert table.column(1) == ("10", "12")


@pytest.mark.parametrize(("text", "title"), [
    ("TITLE | My chart <0x0A> a | b", "My chart"),
    ("title|Lower case<0x0A>a | b", "Lower case"),
    ("TITLE | <0x0A> a | b", None),
    ("a | b", None),
])
def test_the_title_row_is_optional(text, title):
    table = parse_deplot(text)
    assert table.title == title and table.header == ("a", "b")


def test_other_row_breaks_blank_lines_and_end_tokens_are_ignored():
    text = "<pad> TITLE | T [SEP] x | y\n\n 1 | 2 <0x0A> <0x0A> 3 | 4</s>"
    assert parse_deplot(text) == ChartTable("T", ("x", "y"), (("1", "2"), ("3", "4")))


@pytest.mark.parametrize("text", ["", "  ", "<0x0A> <0x0A>", "</s>"])
def test_no_table_is_an_empty_table_shown_as_nothing(text):
    table = parse_deplot(text)
    assert table.is_empty and table.title is None
    assert table_markdown(table) == "" and table_csv(table) == ""


def test_markdown_has_the_title_over_the_table_and_escapes_cells():
    table = ChartTable("Fruit *sales*", ("Name", "Count"), (("a|b", "3"), ("<b>x</b>", ""), ("_y_", "2")))
    assert table_markdown(table) == "\n".join([
        "**Fruit \\*sales\\***",
        "",
        "| Name | Count |",
        "| --- | --- |",
        "| a\\|b | 3 |",
        "| \\<b\\>x\\</b\\> |   |",
        "| \\_y\\_ | 2 |",
    ])
    assert table_markdown(parse_deplot("a | b <0x0A> 1 | 2")) == "| a | b |\n| --- | --- |\n| 1 | 2 |"


def test_csv_holds_header_and_rows_and_disarms_formulas():
    table = parse_deplot('TITLE | T <0x0A> Item | Value <0x0A> =SUM(A1:A9) | -5 <0x0A> "quoted", comma | @x')
    rows = list(csv.reader(io.StringIO(table_csv(table))))
    assert rows == [["Item", "Value"], ["'=SUM(A1:A9)", "-5"], ['"quoted", comma', "'@x"]]


@pytest.mark.parametrize(("text", "value"), [
    ("10", 10.0), (" 12.5 ", 12.5), ("1,234", 1234.0), ("45%", 45.0), ("-3e2", -300.0), (".5", 0.5),
    ("nan", None), ("", None), ("2019a", None), ("inf", None), ("1e999", None), ("$5", None),
])
def test_cell_numbers(text, value):
    assert cell_number(text) == value
