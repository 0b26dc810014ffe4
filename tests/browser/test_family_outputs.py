"""What each family answers with, in Chromium on the CPU demo (issue #31): a video upload shows its strip of
sampled frames and the reply says how the frames went; a PDF page shows as a page; replies in Deplot's,
Kosmos-2's and Nougat's formats (a saved conversation imported, holding each) show a table with its CSV file, the
astronaut with a box and its phrase marked in the box's colour, and a markdown page with its copy block."""

from __future__ import annotations

import json
import shutil

import pytest
from PIL import Image
from skimage import data as skimage_data

from app.chat.chat_files import FORMAT, VERSION
from app.chat.media_intake import upload_root
from app.outputs.grounding import grounded_phrase
from app.outputs.grounding_picture import phrase_colour
from setup.cpu.runner_demo import model_name
from tests.browser.chat_helpers import (
    ask,
    bot_texts,
    open_accordion,
    open_sampling,
    set_number,
    settled_reply,
    user_texts,
    wait_until,
)
from tests.browser_tabs import app_tab
from tests.family_media import CHART_BARS, CHART_TITLE, PAGE_HEADING, bar_chart, document_page
from tests.media import ball_video, page_with_heading, pdf_of_pages
from tests.servers import free_port

CHART = "TITLE | Sales <0x0A> Year | Sales <0x0A> 2021 | 12 <0x0A> 2022 | 30"
PAGE = "# Results\n\nThe method works on small pages.\n\n- fast\n- small"


def attach(page, path, question: str, timeout: float = 240) -> str:
    """Attach a file, ask, and return the settled reply."""
    replies = len(bot_texts(page))
    page.set_input_files("#chat-input input[type=file]", str(path))
    wait_until(lambda: "Uploading" not in page.locator("#chat-input").inner_text() and
               page.locator("#chat-input .thumbnail-item, #chat-input img").count() > 0, what="the upload")
    ask(page, question)
    wait_until(lambda: len(bot_texts(page)) > replies, timeout=timeout, what="the reply to start")
    return settled_reply(page, quiet=30, timeout=timeout)


def user_pictures(page) -> list[str]:
    return page.evaluate("[...document.querySelectorAll('#chatbot .message.user img')].map(i => i.src)")


def test_a_video_shows_its_strip_of_sampled_frames_and_the_reply_says_how_they_went(page, tmp_path):
    open_sampling(page)
    set_number(page, "max-tokens", 8)
    video = ball_video(tmp_path / "ball.gif", frames=30)
    reply = attach(page, video, "What colour is the ball?")
    wait_until(lambda: any("frames.png" in src for src in user_pictures(page)), what="the strip")
    strip = page.locator("#chatbot .message.user img").first
    box = strip.bounding_box()
    assert box["width"] > box["height"] * 1.5  # frames side by side
    caption = next(text for text in user_texts(page) if "ball.gif" in text)
    # the demo's deployment takes 2 pictures a message: the 8 default frames are sampled down to 2
    assert "GIF video (3.0 s, 30 frames): 2 frames sampled evenly, sent as 2 pictures" in caption, caption
    assert "2 frames sampled evenly, sent as 2 pictures" in reply.splitlines()[-1], reply


def test_a_pdf_page_is_sent_as_its_picture(page, tmp_path):
    open_sampling(page)
    set_number(page, "max-tokens", 8)
    pdf = tmp_path / "report.pdf"
    pdf.write_bytes(pdf_of_pages([page_with_heading("Quarterly Report")]))
    reply = attach(page, pdf, "What is the heading?")
    wait_until(lambda: any("frames.png" in src for src in user_pictures(page)), what="the page")
    assert any("report.pdf: PDF (1 page): page 1 sent as pictures" in t for t in user_texts(page)), user_texts(page)
    assert "page 1 sent as pictures" in reply.splitlines()[-1], reply


def test_table_boxes_and_markdown_replies_render(page, tmp_path):
    folder = upload_root() / "family-outputs-test"
    folder.mkdir(parents=True, exist_ok=True)
    astronaut = folder / "astronaut.png"
    Image.fromarray(skimage_data.astronaut()).save(astronaut)
    grounded = "The astronaut's " + grounded_phrase("face", [(0.34, 0.08, 0.62, 0.42)]) + " smiles."
    saved = {"format": FORMAT, "version": VERSION, "title": "family outputs", "turns": [
        {"role": "user", "text": "Where is the face?", "media": [
            {"kind": "image", "name": "astronaut.png", "path": str(astronaut)}]},
        {"role": "assistant", "versions": [{"text": grounded, "parsed": "grounding"}]},
        {"role": "user", "text": "Generate underlying data table of the figure below:", "media": []},
        {"role": "assistant", "versions": [{"text": CHART, "parsed": "table"}]},
        {"role": "user", "text": "Read the page", "media": []},
        {"role": "assistant", "versions": [{"text": PAGE, "parsed": "markdown"}]},
    ]}
    file = tmp_path / "family-outputs.json"
    file.write_text(json.dumps(saved), encoding="utf-8")
    open_accordion(page, "export-import")
    page.set_input_files("#export-import input[type=file]", str(file))
    wait_until(lambda: len(bot_texts(page)) >= 3, what="the import")

    mark = page.locator("#chatbot mark.grounded-phrase")
    wait_until(lambda: mark.count() == 1, what="the grounded phrase")
    assert mark.inner_text() == "face" and phrase_colour(0).lower() in (mark.get_attribute("style") or "").lower()
    assert not any("patch_index" in text for text in bot_texts(page))
    drawn = page.locator("#chatbot .message.bot img").first
    wait_until(lambda: drawn.evaluate("i => i.complete && i.naturalWidth") == 512, what="the picture with its box")

    table = page.locator("#chatbot .message.bot table")
    wait_until(lambda: table.count() == 1, what="the table")
    assert table.locator("th").all_inner_texts() == ["Year", "Sales"]
    assert table.locator("td").all_inner_texts() == ["2021", "12", "2022", "30"]
    assert page.locator("#chatbot .message.bot", has_text="Sales.csv").count() >= 1

    heading = page.locator("#chatbot .message.bot h1")
    wait_until(lambda: heading.count() == 1, what="the markdown heading")
    assert heading.inner_text() == "Results"
    page.locator("#chatbot details.copy-markdown summary").click()
    code = page.locator("#chatbot details.copy-markdown pre")
    wait_until(lambda: code.count() == 1 and code.is_visible(), what="the markdown source")
    assert "# Results" in code.inner_text() and "- fast" in code.inner_text()
    shutil.rmtree(folder, ignore_errors=True)


# ---- through the families' CPU twins (`python -m app --demo --twin <family>`: the runner kind) ------------
TWIN_REPLY_SECONDS = 300  # a twin's reply on a loaded 2-core machine (whole at once for Nougat and Deplot)


@pytest.fixture(scope="module")
def twins(family_outputs_triton):
    """The session's server of the four twins as runner-<family> models (tests/conftest.py)."""
    return family_outputs_triton


@pytest.fixture
def twin_page(request, twins, browser_context):
    """A tab on the app served as the runner kind against one twin (the family the test names)."""
    from app.context import AppConfig, AppContext
    from app.web.ui import launch

    family = request.param
    port = free_port()
    ctx = AppContext(AppConfig(triton_url=twins.grpc_url, port=port, demo=True, deployment="runner",
                               model=model_name(family, several=True)))
    blocks = launch(ctx, prevent_thread_lock=True)
    try:
        with app_tab(browser_context, (ctx, f"http://127.0.0.1:{port}/"), timeout_ms=60_000) as page:
            yield page
    finally:
        blocks.close()


def twin_reply(page, path, question: str) -> str:
    return attach(page, path, question, timeout=TWIN_REPLY_SECONDS)


@pytest.mark.parametrize("twin_page", ["deplot"], indirect=True)
def test_the_deplot_twin_answers_a_chart_with_a_table_of_its_values(twin_page, tmp_path):
    chart = tmp_path / "chart.png"
    bar_chart().save(chart)
    twin_reply(twin_page, chart, "Generate underlying data table of the figure below:")
    table = twin_page.locator("#chatbot .message.bot table")
    wait_until(lambda: table.count() == 1, what="the table")
    cells = table.locator("td").all_inner_texts()
    assert [cells[i] for i in range(0, len(cells), 2)] == [label for label, _, _ in CHART_BARS], cells
    for (label, value, _), shown in zip(CHART_BARS, cells[1::2], strict=True):
        assert abs(float(shown) - value) <= 2.0, (label, value, shown)
    assert twin_page.locator("#chatbot .message.bot", has_text=".csv").count() >= 1
    assert CHART_TITLE in twin_page.locator("#chatbot .message.bot").first.inner_text()


@pytest.mark.parametrize("twin_page", ["nougat"], indirect=True)
def test_the_nougat_twin_answers_a_pdf_page_with_markdown_and_its_heading(twin_page, tmp_path):
    pdf = tmp_path / "report.pdf"
    pdf.write_bytes(pdf_of_pages([document_page()]))
    twin_reply(twin_page, pdf, "Convert this page to markdown.")
    heading = twin_page.locator("#chatbot .message.bot h1")
    wait_until(lambda: heading.count() == 1, what="the heading")
    assert heading.inner_text() == PAGE_HEADING
    assert twin_page.locator("#chatbot .message.bot details.copy-markdown").count() == 1


@pytest.mark.parametrize("twin_page", ["kosmos-2"], indirect=True)
def test_the_kosmos2_twin_boxes_the_astronauts_face(twin_page, tmp_path):
    astronaut = tmp_path / "astronaut.png"
    Image.fromarray(skimage_data.astronaut()).save(astronaut)
    reply = twin_reply(twin_page, astronaut, "Describe this picture.")
    face = twin_page.locator("#chatbot mark.grounded-phrase", has_text="a face")
    wait_until(lambda: face.count() == 1, what="the grounded face")
    assert not any("patch_index" in text for text in bot_texts(twin_page))
    assert reply.startswith("It shows") and "Describe this picture" not in reply, reply  # the question not echoed
    figures = twin_page.locator("#chatbot .message.bot .reply-figures").last
    line = figures.inner_text()  # one short line: speed, adapter, kind, how the reply came, the format by name
    assert "Kosmos-2 format" in line and "runner era" not in line and "prompt" not in line, line
    assert figures.bounding_box()["height"] < 2 * float(figures.evaluate("e => parseFloat(getComputedStyle(e)"
                                                                          ".lineHeight) || 20")), line
    twin_page.locator("#chatbot details.model-saw summary").last.click()  # the internals, folded
    saw = twin_page.locator("#chatbot details.model-saw").last.inner_text()
    assert "Prompt format: kosmos-2" in saw and "TensorRT-LLM runner era" in saw, saw
    drawn = twin_page.locator("#chatbot .message.bot img").first
    wait_until(lambda: drawn.evaluate("i => i.complete && i.naturalWidth") == 512, what="the picture with its boxes")


@pytest.mark.parametrize("twin_page", ["video-neva"], indirect=True)
def test_the_video_neva_twin_says_the_ball_is_red(twin_page, tmp_path):
    video = ball_video(tmp_path / "ball.gif", frames=30)
    reply = twin_reply(twin_page, video, "What happens in this video?")
    wait_until(lambda: any("frames.png" in src for src in user_pictures(twin_page)), what="the strip")
    assert "red" in reply.splitlines()[0].lower(), reply
    assert "12 frames sampled evenly, sent as the model's video input" in reply.splitlines()[-1], reply


@pytest.mark.parametrize("twin_page", ["kosmos-2"], indirect=True)
def test_compare_renders_the_kosmos2_twins_boxes_under_its_column(twin_page, tmp_path):
    from tests.browser.compare_helpers import run_compare

    astronaut = tmp_path / "astronaut.png"
    Image.fromarray(skimage_data.astronaut()).save(astronaut)
    texts = run_compare(twin_page, "Describe this picture.", astronaut, max_tokens=512, timeout=TWIN_REPLY_SECONDS)
    assert "patch_index" in texts[0], texts  # the column's raw text, as the model wrote it
    face = twin_page.locator("#compare-view-0 mark.grounded-phrase", has_text="a face")
    wait_until(lambda: face.count() == 1, what="the grounded face under the column")
    drawn = twin_page.locator("#compare-boxes-0 img")
    wait_until(lambda: drawn.count() == 1 and drawn.evaluate("i => i.complete && i.naturalWidth") == 512,
               what="the astronaut with its boxes under the column")
    assert not twin_page.locator("#compare-view-1").is_visible()  # an unused column renders nothing
