"""PDF intake on PDFs made on the fly: pages drawn with Pillow, and hand-written files (protected, damaged)."""

import numpy as np
import pytest
from PIL import Image

from app.core.errors import InvalidDocument, InvalidImage
from app.vision import messages as M
from app.vision.documents import DocumentLimits, parse_page_range, pdf_page_count, render_pdf
from tests.media import ONE_PAGE, hand_made_pdf, page_with_heading, password_pdf, pdf_of_pages

COLOURS = [(200, 0, 0), (0, 150, 0), (0, 0, 200), (200, 150, 0)]


def four_pages() -> bytes:
    return pdf_of_pages([page_with_heading(f"Page {i + 1}", fill=colour) for i, colour in enumerate(COLOURS)])


def block_colour(page: Image.Image) -> tuple[int, int, int]:
    """The colour in the middle of the block each test page has under its heading (at 72 dpi: y 60..120)."""
    w, h = page.size
    return tuple(int(v) for v in np.asarray(page)[int(h * 90 / 400), w // 2])


def test_every_page_is_rendered_in_order_at_the_asked_resolution():
    rendered = render_pdf(four_pages(), name="four.pdf", dpi=144)
    assert (rendered.name, rendered.page_count, rendered.numbers) == ("four.pdf", 4, (1, 2, 3, 4))
    assert all(page.mode == "RGB" and page.size == (600, 800) for page in rendered.pages)
    for page, colour in zip(rendered.pages, COLOURS, strict=True):
        assert np.allclose(block_colour(page), colour, atol=6)
    top_left = np.asarray(rendered.pages[0])[5, 5]
    assert top_left.min() > 245  # the page's white, not a transparent black


def test_a_page_range_picks_those_pages(tmp_path):
    path = tmp_path / "four.pdf"
    path.write_bytes(four_pages())
    rendered = render_pdf(path, pages="3-4, 1", dpi=72)
    assert rendered.name == "four.pdf" and rendered.numbers == (3, 4, 1)
    for page, colour in zip(rendered.pages, (COLOURS[2], COLOURS[3], COLOURS[0]), strict=True):
        assert np.allclose(block_colour(page), colour, atol=6)
    assert render_pdf(path, pages=[2], dpi=72).numbers == (2,)
    assert pdf_page_count(path) == 4


@pytest.mark.parametrize(("text", "numbers"), [
    ("1", (1,)), ("2-4", (2, 3, 4)), ("4-", (4, 5, 6)), ("-2", (1, 2)), (" 1 , 3-3 ", (1, 3)), ("2,1-3", (2, 1, 3)),
])
def test_page_ranges(text, numbers):
    assert parse_page_range(text, 6) == numbers


@pytest.mark.parametrize("text", ["", "a", "1 3", "3-1", "-", "1,,2", "1.5"])
def test_a_range_that_is_not_one_says_how_to_write_it(text):
    with pytest.raises(InvalidDocument) as caught:
        parse_page_range(text, 6)
    assert str(caught.value) == M.MSG_PDF_BAD_RANGE.format(pages=text)


@pytest.mark.parametrize(("text", "page"), [("7", 7), ("0", 0), ("5-9", 9)])
def test_a_page_past_the_end_is_named(text, page):
    with pytest.raises(InvalidDocument) as caught:
        parse_page_range(text, 6, "doc.pdf")
    assert str(caught.value) == M.MSG_PDF_PAGE_OUT_OF_RANGE.format(name="doc.pdf", count=6, page=page)


def test_too_many_pages_need_a_range_and_a_range_is_held_to_the_limit():
    limits = DocumentLimits(max_pages=3)
    with pytest.raises(InvalidDocument) as caught:
        render_pdf(four_pages(), name="four.pdf", limits=limits)
    assert str(caught.value) == M.MSG_PDF_TOO_MANY_PAGES.format(name="four.pdf", count=4, limit=3)
    with pytest.raises(InvalidDocument) as caught:
        render_pdf(four_pages(), name="four.pdf", pages="1-4", limits=limits)
    assert str(caught.value) == M.MSG_PDF_RANGE_TOO_LONG.format(pages="1-4", count=4, limit=3)
    assert render_pdf(four_pages(), pages="2-4", limits=limits, dpi=36).numbers == (2, 3, 4)


def test_a_page_over_the_pixel_limit_is_rendered_smaller_not_refused():
    rendered = render_pdf(four_pages(), pages="1", dpi=288, limits=DocumentLimits(max_page_pixels=300 * 400))
    width, height = rendered.pages[0].size
    assert width * height <= 300 * 400 * 1.02 and abs(width / height - 0.75) < 0.01


@pytest.mark.parametrize(("data", "message"), [
    (b"", M.MSG_PDF_EMPTY.format(name="doc.pdf")),
    (b"PK\x03\x04 a zip file", M.MSG_PDF_NOT_A_PDF.format(name="doc.pdf")),
    (password_pdf(), M.MSG_PDF_ENCRYPTED.format(name="doc.pdf")),
    (b"%PDF-1.4\n garbage without objects", M.MSG_PDF_BROKEN.format(name="doc.pdf", detail="data format error")),
])
def test_files_that_cannot_be_used_are_refused_with_a_sentence(data, message):
    with pytest.raises(InvalidDocument) as caught:
        render_pdf(data, name="doc.pdf")
    assert str(caught.value) == message


def test_a_hand_made_pdf_without_protection_renders():
    rendered = render_pdf(hand_made_pdf(ONE_PAGE), dpi=72)
    assert rendered.page_count == 1 and rendered.pages[0].size == (200, 200)


def test_the_size_limit_is_checked_before_the_file_is_read(tmp_path):
    path = tmp_path / "big.pdf"
    path.write_bytes(four_pages())
    limits = DocumentLimits(max_bytes=100)
    with pytest.raises(InvalidDocument) as caught:
        render_pdf(path, limits=limits)
    size = path.stat().st_size
    assert str(caught.value) == M.MSG_PDF_TOO_LARGE_BYTES.format(name="big.pdf", size_mb=size / 2**20,
                                                                 limit_mb=100 / 2**20)


def test_document_refusals_are_refused_like_images_everywhere():
    assert issubclass(InvalidDocument, InvalidImage)
