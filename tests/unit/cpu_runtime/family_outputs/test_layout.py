"""OCR boxes shrunk to their ink, word gaps found in the ink and widened for a second reading, a leading bullet
told from a word (cpu_runtime/family_outputs/layout.py)."""

import numpy as np
from PIL import Image, ImageDraw, ImageFont

from cpu_runtime.family_outputs.layout import TextBox, from_ocr, starts_with_mark, tighten, widened, word_gaps


def grey_line(text: str, size: int = 18) -> np.ndarray:
    image = Image.new("L", (400, 40), 255)
    ImageDraw.Draw(image).text((10, 8), text, fill=0, font=ImageFont.load_default(size))
    return np.asarray(image)


def test_ocr_results_become_boxes_and_low_scores_are_dropped():
    result = [[[[10, 5], [90, 6], [90, 20], [10, 19]], " Hello ", 0.9], [[[0, 0], [5, 0], [5, 5], [0, 5]], "x", 0.2]]
    assert from_ocr(result) == [TextBox(10, 5, 90, 20, "Hello", 0.9)]
    assert from_ocr(None) == []


def test_a_padded_box_is_shrunk_to_its_ink():
    grey = grey_line("Heading")
    ink = np.flatnonzero((grey < 128).any(axis=1))
    (box,) = tighten([TextBox(0, 0, 400, 40, "Heading")], grey)
    assert (box.y0, box.y1) == (ink[0], ink[-1] + 1) and box.x0 >= 10


def test_word_gaps_are_found_and_widened_but_letter_gaps_are_not():
    grey = grey_line("one two three")
    ink = np.abs(grey.astype(int) - 255) > 60
    height = np.flatnonzero(ink.any(axis=1)).ptp() + 1
    gaps = word_gaps(ink.any(axis=0), height)
    assert len(gaps) == 2
    wide = widened(grey, gaps, height)
    wide_ink = np.abs(wide.astype(int) - 255) > 60
    assert len(word_gaps(wide_ink.any(axis=0), height)) == 2
    assert wide.shape[1] > grey.shape[1] and wide.shape[0] > grey.shape[0]


def test_a_leading_dash_is_a_mark_and_a_leading_letter_is_not():
    for text, marked in (("- apples and pears", True), ("Apples and pears", False)):
        grey = grey_line(text)
        rows = np.flatnonzero((grey < 128).any(axis=1))
        crop = grey[rows[0]:rows[-1] + 1]
        ink = np.abs(crop.astype(int) - 255) > 60
        assert starts_with_mark(ink, word_gaps(ink.any(axis=0), crop.shape[0]), crop.shape[0]) is marked, text


def test_a_line_at_the_box_edge_is_not_ink_of_the_text():
    from cpu_runtime.family_outputs.layout import without_edge_lines

    ink = np.zeros((20, 30), bool)
    ink[8:12, 5:20] = True   # the text
    ink[:, 29] = True        # an axis line along the box's right edge
    cleaned = without_edge_lines(ink)
    assert not cleaned[:, 29].any() and cleaned[8:12, 5:20].all()
