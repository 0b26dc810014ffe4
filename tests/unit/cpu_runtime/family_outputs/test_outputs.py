"""TwinOutputs with the real OCR (the PP-OCR models in the rapidocr-onnxruntime wheel) and OpenCV's cascades on
pictures drawn with Pillow: each family's job end to end inside the CPU runtime."""

import numpy as np
import pytest
from PIL import Image

from app.outputs.chart_table import cell_number, parse_deplot
from cpu_runtime.family_outputs.outputs import KINDS, TwinOutputs, foreground_box, unmarked
from tests.family_media import CHART_BARS, CHART_TITLE, PAGE_HEADING, PAGE_SECTION, bar_chart, document_page
from tests.media import ball_frame


def test_a_chart_comes_back_as_its_table():
    table = parse_deplot(TwinOutputs("chart_table")([bar_chart()]))
    assert table.title == CHART_TITLE
    assert [(row[0], cell_number(row[1])) for row in table.rows] == [(label, value) for label, value, _ in CHART_BARS]


def test_a_page_comes_back_as_markdown_with_its_words_spaced():
    markdown = TwinOutputs("markdown")([document_page()])
    assert markdown.startswith(f"# {PAGE_HEADING}\n\n")
    assert f"\n\n## {PAGE_SECTION}\n\n" in markdown
    assert "- New store opened in Leeds\n- Online orders doubled" in markdown


def test_frames_of_a_video_are_described_and_one_picture_is_left_to_the_llm():
    outputs = TwinOutputs("frame_changes")
    text = outputs([ball_frame(i, 6) for i in range(6)])
    assert text.startswith("The video shows a red circle that moves to the right")
    assert outputs([ball_frame(0, 6)]) is None


def test_unknown_jobs_are_refused_with_the_known_ones():
    with pytest.raises(ValueError, match="markdown, chart_table, grounding, frame_changes"):
        TwinOutputs("poetry")
    assert KINDS == ("markdown", "chart_table", "grounding", "frame_changes")


def test_the_foreground_is_what_differs_from_the_border_and_marks_are_dropped():
    rgb = np.full((100, 200, 3), 255, np.uint8)
    rgb[20:40, 50:90] = (0, 0, 200)
    assert foreground_box(rgb) == (50, 20, 90, 40)
    assert foreground_box(np.full((10, 10, 3), 9, np.uint8)) == (0, 0, 10, 10)
    assert unmarked(": Online orders") == "Online orders"


def test_the_astronauts_face_is_grounded():
    from skimage import data

    text = TwinOutputs("grounding")([Image.fromarray(data.astronaut())], "<grounding>An image of")
    assert text.startswith("An image of<phrase>") and "<phrase> a face</phrase><object><patch_index_" in text


def test_text_in_a_picture_is_grounded_where_it_is():
    from PIL import ImageDraw, ImageFont

    from app.outputs.grounding import parse_grounding

    image = Image.new("RGB", (512, 512), "white")
    ImageDraw.Draw(image).text((280, 380), "EXIT", fill="black", font=ImageFont.load_default(64))
    grounding = parse_grounding(TwinOutputs("grounding")([image], "<grounding>An image of"))
    (phrase,) = [p for p in grounding.phrases if p.text == 'the text "EXIT"']
    left, top, right, bottom = phrase.boxes[0].pixels(512, 512)
    assert 260 <= left <= 300 and 370 <= top <= 410 and right >= 380 and bottom <= 470, (left, top, right, bottom)
