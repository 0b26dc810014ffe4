"""Media and parsed replies as the Chatbot shows them: a video's or PDF's strip and what was sent, a chart's
table with its CSV file, the grounded picture with each phrase marked in its box's colour, a markdown page
with its copy block."""

from __future__ import annotations

import csv
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from app.chat.media_intake import media_for
from app.chat.reply_outputs import parse_reply
from app.core.conversation import ReplyVersion, Turn
from app.outputs.chart_table import deplot_text, parse_deplot
from app.outputs.grounding import grounded_phrase
from app.outputs.grounding_picture import phrase_colour
from app.web.chat_view import reply_content, turn_messages
from tests.media import ball_video, page_with_heading, pdf_of_pages
from tests.pictures import shape_picture

CHART = "TITLE | Sales <0x0A> Year | Sales <0x0A> 2021 | 12 <0x0A> 2022 | 30"


@pytest.fixture(autouse=True)
def uploads(tmp_path, monkeypatch):
    monkeypatch.setenv("GRADIO_TEMP_DIR", str(tmp_path / "uploads"))
    return tmp_path / "uploads"


def test_a_video_is_shown_as_a_strip_of_its_frames_and_what_was_sent(tmp_path, uploads):
    media = media_for(str(ball_video(tmp_path / "ball.gif", frames=20)), family="video-neva")
    strip, caption, text = turn_messages(Turn.user("What colour is the ball?", (media,)))
    path = Path(strip["content"]["path"])
    assert path.is_file() and str(uploads) in str(path)
    with Image.open(path) as picture:
        assert picture.width > 12 * 60  # twelve frames side by side
    assert "ball.gif: GIF video" in caption["content"] and "12 frames sampled evenly" in caption["content"]
    assert text["content"] == "What colour is the ball?"


def test_a_pdf_is_shown_as_its_pages(tmp_path):
    media = media_for(pdf_of_pages([page_with_heading("Results")]), name="paper.pdf")
    strip, caption, _ = turn_messages(Turn.user("Read it", (media,)))
    assert Path(strip["content"]["path"]).is_file() and "page 1 sent as pictures" in caption["content"]


def test_a_chart_reply_is_a_table_with_its_csv_file():
    version = ReplyVersion(CHART, outputs=parse_reply(CHART), figures="4 tokens")
    content, csv_message = turn_messages(Turn.reply(version))
    body = content["content"]
    assert body.startswith("**Sales**\n\n| Year | Sales |\n| --- | --- |\n| 2021 | 12 |") and "<0x0A>" not in body
    path = Path(csv_message["content"]["path"])
    assert path.name == "Sales.csv"
    assert list(csv.reader(path.read_text().splitlines())) == [["Year", "Sales"], ["2021", "12"], ["2022", "30"]]
    assert parse_deplot(deplot_text(version.outputs.table)) == version.outputs.table


def test_a_grounded_reply_marks_each_phrase_in_the_colour_of_its_box_drawn_on_the_picture(tmp_path):
    picture = shape_picture(tmp_path / "white.png", fill=(255, 255, 255))
    text = "An astronaut with " + grounded_phrase("a face", [(0.25, 0.25, 0.75, 0.75)]) + "."
    version = ReplyVersion(text, outputs=parse_reply(text, picture=str(picture)))
    content, drawn = turn_messages(Turn.reply(version))
    body = content["content"]
    assert "patch_index" not in body and body.startswith('An astronaut with <mark class="grounded-phrase"')
    assert phrase_colour(0) in body and ">a face</mark>." in body
    with Image.open(drawn["content"]["path"]) as shown:
        pixels = np.asarray(shown.convert("RGB"))
    colour = tuple(int(phrase_colour(0)[i:i + 2], 16) for i in (1, 3, 5))
    left, top, right, bottom = version.outputs.grounding.phrases[0].boxes[0].pixels(pixels.shape[1], pixels.shape[0])
    edge = pixels[(top + bottom) // 2, left + 1]
    assert tuple(edge) == colour  # the box's left edge crosses the middle row in the phrase's colour


def test_a_markdown_page_is_rendered_with_a_copy_block_of_its_source():
    page = "# Results\n\nThe method works.\n\n- fast\n- small"
    content = reply_content(ReplyVersion(page, outputs=parse_reply(page, family="nougat")))
    assert content.startswith(page + '\n\n<details class="copy-markdown"><summary>Copy as markdown</summary>')
    assert "~~~~markdown\n" + page + "\n~~~~" in content


def test_prose_and_failed_replies_are_unchanged():
    assert turn_messages(Turn.reply(ReplyVersion("A red ball."))) == [{"role": "assistant", "content": "A red ball."}]
