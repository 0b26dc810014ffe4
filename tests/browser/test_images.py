"""Images in the browser: upload a picture of text and ask about it, in the chat and in Compare (with a second
picture); a bad file gets its message."""

import pytest
from PIL import Image, ImageDraw, ImageFont

from tests.browser.chat_helpers import ask_about_image
from tests.browser.compare_helpers import column_states, run_compare
from tests.browser.test_adapters import pick


@pytest.fixture
def code_image(tmp_path):
    image = Image.new("RGB", (900, 260), "white")
    ImageDraw.Draw(image).text((30, 90), "The secret code is 4711", fill="black",
                               font=ImageFont.load_default(size=64))
    path = tmp_path / "code.png"
    image.save(path)
    return path


def test_uploaded_image_text_reaches_the_model(demo_page, code_image):
    page = demo_page
    reply = ask_about_image(page, code_image, "What is the secret code?", timeout=120)
    assert "4711" in reply
    assert page.locator("#chatbot .message.user img").count() >= 1  # the image shows in the history


def test_not_an_image_is_refused_with_its_message(page, tmp_path):
    bad = tmp_path / "notes.png"
    bad.write_bytes(b"this is plain text, not a picture")
    page.set_input_files("#chat-input input[type=file]", str(bad))
    page.fill("#chat-input textarea", "What does it say?")
    page.keyboard.press("Enter")
    page.wait_for_selector("text=notes.png is not an image")
    assert page.locator("#chatbot .message").count() == 0  # nothing was sent


def test_compare_sends_the_pictures_to_every_column(page, code_image, tmp_path):
    """Compare's image box takes several pictures: both go with the prompt to the base model and to pirate, and
    each column reads the code on the second one."""
    circle = tmp_path / "circle.png"
    image = Image.new("RGB", (336, 336), "white")
    ImageDraw.Draw(image).ellipse((68, 68, 268, 268), fill="red")
    image.save(circle)
    page.get_by_role("tab", name="Compare").click()
    pick(page, "compare-adapter-1", "pirate")
    pick(page, "compare-adapter-2", "(none)")
    texts = run_compare(page, "What is the secret code?", picture=[circle, code_image], max_tokens=48, timeout=240)
    assert "4711" in texts[0] and "4711" in texts[1], texts
    assert [state.split(" · ")[0] for state in column_states(page)][:2] == ["done", "done"]
