"""The OCR's quick check: photos without text skip the full reading; signs and small text read as before."""

from __future__ import annotations

import numpy as np
import pytest
from PIL import Image, ImageDraw, ImageFont

from tests.unit.cpu_runtime.encoder.conftest import photo, sign


def letterbox(image: Image.Image) -> np.ndarray:
    """The 1024 x 1024 BGR letterbox the encoder's OCR reads, as the demo's preprocessing makes it."""
    from app.vision.preprocess import pixel_batch
    from setup.catalog.families import get_family
    from tests.unit.cpu_runtime.encoder.conftest import encoder_package

    spec = get_family("cpu-ocr").preprocess
    pixels = pixel_batch([image], spec)[0][0]
    return encoder_package().ocr.to_bgr_uint8(pixels, spec.mean, spec.std, spec.rescale)


def caption(size: int, on: str | None = None) -> Image.Image:
    """'Cafe 24 Main St' in a Pillow font of `size` pixels, on white 900 x 600 or outlined on a photo."""
    image = Image.fromarray(photo(on)) if on else Image.new("RGB", (900, 600), "white")
    ImageDraw.Draw(image).text((20, 20), "Cafe 24 Main St", fill="white" if on else "black", stroke_width=2 if on else 0,
                               stroke_fill="black", font=ImageFont.load_default(size=size))
    return image


class Recorder:
    """A RapidOCR engine that counts full readings."""

    def __init__(self, engine):
        self.engine, self.text_det, self.calls = engine, engine.text_det, 0

    def __call__(self, bgr):
        self.calls += 1
        return self.engine(bgr)


@pytest.fixture(scope="module")
def engines(lib):
    from rapidocr_onnxruntime import RapidOCR

    reader = lib.text_reader.TextReader()
    reader.engine = Recorder(reader.engine)
    return reader, RapidOCR()  # the new reader, and the full-resolution OCR the encoder used before


def words(result, min_score: float = 0.85) -> str:
    return " ".join(str(item[1]).strip() for item in result or [] if float(item[2]) >= min_score)


@pytest.mark.parametrize("name", ["chelsea", "rocket", "astronaut"])
def test_a_photo_without_text_is_not_read_in_full(engines, name):
    reader, _ = engines
    calls, skipped = reader.engine.calls, reader.skipped
    assert reader(letterbox(Image.fromarray(photo(name)))) == (None, None)
    assert reader.engine.calls == calls and reader.skipped == skipped + 1


@pytest.mark.parametrize("picture", [
    pytest.param(lambda: Image.fromarray(sign()), id="sign"),
    pytest.param(lambda: caption(10), id="10px-on-white"),
    pytest.param(lambda: caption(28), id="28px-on-white"),
    pytest.param(lambda: caption(28, "coffee"), id="28px-on-a-photo"),
])
def test_text_reads_as_the_full_resolution_ocr_read_it(engines, picture):
    reader, full = engines
    bgr = letterbox(picture())
    calls = reader.engine.calls
    before, now = words(full(bgr)[0]), words(reader(bgr)[0])
    assert before and now == before
    assert reader.engine.calls == calls + 1


def small_caption_on_a_photo() -> Image.Image:
    """Pillow's size-9 font (9-pixel text) on scikit-image's astronaut enlarged to 1024 x 683, a photo the
    1024 letterbox keeps at its own scale, so the text is 9 pixels high where the encoder reads it."""
    image = Image.fromarray(photo("astronaut")).resize((1024, 683), Image.Resampling.BICUBIC)
    ImageDraw.Draw(image).text((20, 20), "Cafe 24 Main St", fill="white", stroke_width=1, stroke_fill="black",
                               font=ImageFont.load_default(size=9))
    return image


@pytest.mark.xfail(strict=True, reason="known (#21): the quick check at 512 pixels sees 9-pixel text at 4.5 pixels, "
                   "where the PP-OCR detector gives it no score (on this photo 0.00 at 512, 576 and 640 pixels, area "
                   "or linear resizing); the full-resolution OCR reads it. A check at full size reads 4 times the pixels.")
def test_nine_pixel_text_on_a_photo_reads_as_the_full_resolution_ocr_read_it(engines):
    reader, full = engines
    bgr = letterbox(small_caption_on_a_photo())
    before = words(full(bgr)[0])
    assert "Cafe" in before and "Main" in before, before  # the full-resolution OCR reads it
    assert words(reader(bgr)[0]) == before


def test_boxes_come_back_in_the_letterbox_pixels(engines):
    reader, full = engines
    bgr = letterbox(Image.fromarray(sign()))
    (box, text, _), = reader(bgr)[0]
    (old_box, old_text, _), = full(bgr)[0]
    assert text == old_text == "OPEN DAILY 9-17"
    np.testing.assert_allclose(np.asarray(box), np.asarray(old_box), atol=4)


def test_the_region_read_keeps_a_margin_inside_the_picture(lib):
    region = lib.text_reader.TextReader.region
    boxes = np.float32([[100, 50, 300, 70], [120, 90, 200, 100]])  # x0, y0, x1, y1
    assert region(boxes, 1000, 1000) == (10, 140, 60, 340)  # margin: twice the tallest box (20 px)
    assert region(np.float32([[5, 5, 20, 10]]), 30, 40) == (0, 30, 0, 40)  # at least 32 px, clipped


def test_margin_box_finds_the_picture_in_a_letterbox(lib):
    boxed = np.full((1024, 1024, 3), 255, np.uint8)
    boxed[171:853, :, 0] = 7
    assert lib.margins.margin_box(boxed) == (171, 853, 0, 1024)
    assert lib.margins.margin_box(np.full((4, 5, 3), 255, np.uint8)) == (0, 4, 0, 5)
