"""The CPU demo sees a photo in the browser: scikit-image's chelsea uploaded, the reply names the cat."""

import pytest
from PIL import Image

from tests.browser.test_chat import settled_reply


@pytest.fixture
def chelsea(tmp_path):
    from skimage import data

    path = tmp_path / "chelsea.png"
    Image.fromarray(data.chelsea()).save(path)
    return path


def test_uploaded_photo_of_a_cat_is_answered_with_cat(demo_page, chelsea):
    page = demo_page
    page.set_input_files("#chat-input input[type=file]", str(chelsea))
    page.wait_for_selector("#chat-input img", timeout=30_000)
    page.fill("#chat-input textarea", "What is in this picture?")
    page.keyboard.press("Enter")
    reply = settled_reply(page, timeout=240)
    assert "cat" in reply.lower(), reply
