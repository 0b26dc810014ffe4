"""Nougat's markdown from an OCR layout (cpu_runtime/family_outputs/markdown.py), on boxes laid out by hand."""

from cpu_runtime.family_outputs.layout import TextBox, group_lines
from cpu_runtime.family_outputs.markdown import cells, heading_levels, join_lines, list_item, page_markdown
from cpu_runtime.family_outputs.messages import MSG_NO_PAGE_TEXT

WIDTH = 800


def line(y: float, text: str, height: float = 14, x: float = 60, width: float | None = None) -> TextBox:
    return TextBox(x, y, x + (width if width is not None else 9 * len(text)), y + height, text)


def test_headings_by_size_paragraphs_by_gaps_and_a_list():
    boxes = [line(40, "Annual Report", 36), line(110, "Sales rose in every region this", width=600),
             line(130, "year, and costs fell.", width=200), line(170, "A second paragraph starts here.", width=600),
             line(220, "Results", 24), line(260, "- North grew most"), line(282, "• South held steady"),
             line(304, "2) East was new")]
    assert page_markdown(boxes, WIDTH) == (
        "# Annual Report\n\n"
        "Sales rose in every region this year, and costs fell.\n\n"
        "A second paragraph starts here.\n\n"
        "## Results\n\n"
        "- North grew most\n- South held steady\n2. East was new")


def test_a_paragraph_breaks_after_a_short_line_ending_a_sentence():
    boxes = [line(100, "This line runs the full width of the text.", width=600), line(118, "It ends here.", width=150),
             line(136, "A new paragraph follows at once.", width=600)]
    assert page_markdown(boxes, WIDTH) == ("This line runs the full width of the text. It ends here.\n\n"
                                           "A new paragraph follows at once.")


def test_rows_split_into_the_same_number_of_cells_are_a_table():
    boxes = []
    for y, row in ((100, ("Region", "Sales", "Staff")), (120, ("North", "40", "12")), (140, ("South", "25", "9"))):
        boxes += [TextBox(60 + 200 * i, y, 60 + 200 * i + 8 * len(c), y + 14, c) for i, c in enumerate(row)]
    assert page_markdown(boxes, WIDTH) == ("| Region | Sales | Staff |\n| --- | --- | --- |\n"
                                           "| North | 40 | 12 |\n| South | 25 | 9 |")


def test_a_short_centred_first_line_set_apart_is_a_title_even_at_body_size():
    boxes = [TextBox(340, 40, 460, 54, "Minutes"), line(100, "The meeting opened at nine.", width=600)]
    assert page_markdown(boxes, WIDTH).startswith("# Minutes\n\n")


def test_boxes_side_by_side_are_one_line_and_near_words_one_cell():
    boxes = [TextBox(100, 10, 140, 24, "world"), TextBox(10, 11, 90, 25, "hello"), TextBox(10, 40, 60, 54, "next")]
    lines = group_lines(boxes)
    assert [ln.text for ln in lines] == ["hello world", "next"]
    assert cells(lines[0]) == ["hello world"]


def test_heading_sizes_close_together_share_a_level():
    assert heading_levels([40, 38, 28, 20]) == {40: 1, 38: 1, 28: 2, 20: 3}


def test_list_items_and_hyphenated_words():
    assert list_item("• apples") == "- apples"
    assert list_item("12. pears") == "12. pears"
    assert list_item("Plain text") is None
    assert join_lines(["an exam-", "ple of it"]) == "an example of it"
    assert join_lines(["well-", "Known"]) == "well- Known"


def test_an_empty_page_says_so():
    assert page_markdown([], WIDTH) == MSG_NO_PAGE_TEXT
