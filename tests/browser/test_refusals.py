"""Refused input shows a toast only: no "Error" overlay covers the conversation or the input, and what
was typed stays. At a desktop width and at 400 px; the shared style covers every tab (Build here)."""

import pytest
from PIL import Image

from tests.browser.chat_helpers import ask, bot_texts, error_overlays, progress_shown, toasts, wait_until

# Gradio's own rule for the overlay is a class on its status tracker; our style hides it. Removing our rule
# again shows that the refusal did raise an overlay, so "no overlay" is our style's doing, not luck.
DROP_OUR_OVERLAY_RULE = """() => { for (const sheet of document.styleSheets) {
    let rules; try { rules = sheet.cssRules; } catch (e) { continue; }
    for (let i = rules.length - 1; i >= 0; i--)
        if (rules[i].cssText.includes(".clear-status") && rules[i].cssText.includes("none")) sheet.deleteRule(i);
} }"""


def usable(page, selector: str) -> bool:
    """Whether a click in the middle of `selector` reaches it (nothing lies over it)."""
    return page.evaluate("""(selector) => { const el = document.querySelector(selector);
        el.scrollIntoView({block: "center"});
        const box = el.getBoundingClientRect();
        return el.contains(document.elementFromPoint(box.left + box.width / 2, box.top + box.height / 2)); }""",
                         selector)


def toast_says(page, text: str) -> bool:
    return any(text in toast for toast in toasts(page))


def wait_for_the_send_to_end(page) -> None:
    """The toast comes a moment (about 20 ms) before the refused send ends; until then Gradio's spinner of the send
    lies over the box and the conversation, as over every message being sent."""
    wait_until(lambda: not (progress_shown(page, "#chat-input") or progress_shown(page, "#chatbot")),
               what="the refused send to end")


def test_enter_on_an_empty_box_is_a_toast(sized_page):
    page = sized_page
    ask(page, "   ")
    wait_until(lambda: toast_says(page, "Type a message first."), what="the toast")
    wait_for_the_send_to_end(page)
    assert error_overlays(page) == 0 and bot_texts(page) == []
    assert usable(page, "#chat-input textarea") and usable(page, "#chatbot")
    page.fill("#chat-input textarea", "still typing")  # the box takes text at once
    assert page.locator("#chat-input textarea").input_value() == "still typing"


@pytest.fixture
def huge_image(tmp_path):
    path = tmp_path / "huge.png"
    Image.new("L", (12_000, 9_000), 255).save(path)  # 108 megapixels of white: a small file
    return path


def test_a_bad_or_huge_image_is_a_toast_and_the_text_stays(sized_page, tmp_path, huge_image):
    page = sized_page
    bad = tmp_path / "notes.png"
    bad.write_bytes(b"this is plain text, not a picture")
    for image, message in ((bad, "notes.png is not an image"), (huge_image, "108 megapixels")):
        page.set_input_files("#chat-input input[type=file]", str(image))
        page.fill("#chat-input textarea", "What does it say?")
        page.keyboard.press("Enter")
        wait_until(lambda message=message: toast_says(page, message), what=message)
        wait_for_the_send_to_end(page)
        assert error_overlays(page) == 0 and page.locator("#chatbot .message").count() == 0
        assert page.locator("#chat-input textarea").input_value() == "What does it say?"  # nothing lost
        assert usable(page, "#chat-input textarea") and usable(page, "#chatbot")
        page.click("#chat-input button[aria-label='Remove file']")


def test_the_shared_style_keeps_overlays_off_other_tabs_too(page):
    page.get_by_role("tab", name="Build").click()
    page.locator("#build-model-id input, #build-model-id textarea").first.fill("")
    page.click("#build-run")  # no model id, checkpoint or output folder: refused
    wait_until(lambda: toasts(page), what="the Build tab's refusal")
    assert error_overlays(page) == 0
    page.evaluate(DROP_OUR_OVERLAY_RULE)
    assert error_overlays(page) > 0  # the overlay was there, hidden by the app's style
