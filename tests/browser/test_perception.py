"""The CPU demo sees a photo in the browser: scikit-image's chelsea uploaded, the reply names the cat, and
the folded "What the model saw" under it shows the encoder's labels and the description the model read."""

import pytest

from tests.browser.chat_helpers import ask_about_image
from tests.pictures import chelsea_picture


@pytest.fixture
def chelsea(tmp_path):
    return chelsea_picture(tmp_path / "chelsea.png")


def test_uploaded_photo_of_a_cat_is_answered_with_cat(demo_page, chelsea):
    reply = ask_about_image(demo_page, chelsea, "What is in this picture?")
    assert "cat" in reply.lower(), reply


def test_what_the_model_saw_unfolds_under_the_reply(page, chelsea):
    """Engine topology (the demo's default): its encoder model reports what it found."""
    ask_about_image(page, chelsea, "What is in this picture?")
    saw = page.locator("#chatbot .message.bot").last.locator("details.model-saw")
    assert saw.locator("summary").inner_text() == "What the model saw"
    assert not saw.evaluate("d => d.open")  # folded until asked
    saw.locator("summary").click()
    shown = saw.inner_text()
    assert "Labels: " in shown and "cat" in shown.split("Labels: ")[1].split("\n")[0], shown
    assert "Given to the model as: “It shows" in shown, shown
