"""The InternLM-XComposer2 CPU twin in Chromium (`python -m app --demo --twin xcomposer2`, issue #22): a person
uploads a picture and asks about it; the twin's Partial LoRA is registered with the first request (its weights go
with it) and later requests carry only its 8-byte task id, as each reply's figures line says."""

from __future__ import annotations

import re

import pytest

from tests.browser.chat_helpers import (
    ask,
    bot_texts,
    open_sampling,
    reply_body,
    set_number,
    settled_reply,
    wait_until,
)
from tests.browser.compare_helpers import column_states, run_compare
from tests.browser.test_reply_figures import figures_line
from tests.browser_tabs import app_tab
from tests.pictures import BLUE, shape_picture

OPENING = "In the picture"  # how the twin's Partial LoRA makes image answers start
BASE_WITH_OWN = "base model + xc2-partial (part of the model, always on)"
REPLY_TIMEOUT = 300  # a reply through the twin's encoder and engine on a loaded 2-core machine
QUIET = 60  # a reply without figures counts as settled (an error said in its place) only after this long unchanged:
# on a loaded machine the next token can be seconds away


@pytest.fixture
def xc2_page(browser_context, xcomposer2_app_served):
    """A browser tab on the app against the twin; the server is taken to hold no adapter yet (as after its start),
    so the first request carries the weights whatever ran before."""
    xcomposer2_app_served[0].adapters.forget_server_state()
    with app_tab(browser_context, xcomposer2_app_served, timeout_ms=60_000) as page:
        yield page


@pytest.fixture
def pictures(tmp_path):
    """A red circle and a blue square on white. Two files: setting the file the composer sent last again shows no
    thumbnail (seen with Playwright and this Gradio), so the second question has its own."""
    return shape_picture(tmp_path / "circle.png"), shape_picture(tmp_path / "square.png", "rectangle", BLUE)


def ask_with_picture(page, picture, question: str, replies_before: int) -> str:
    """Attach the picture, wait for its thumbnail, ask; the new reply once it has settled."""
    page.set_input_files("#chat-input input[type=file]", str(picture))
    page.wait_for_selector("#chat-input img")
    ask(page, question)
    wait_until(lambda: len(bot_texts(page)) > replies_before, timeout=REPLY_TIMEOUT, what="the reply to start")
    return settled_reply(page, quiet=QUIET, timeout=REPLY_TIMEOUT)


def test_image_questions_send_the_partial_adapter_once_then_its_task_id(xc2_page, pictures):
    page, (circle, square) = xc2_page, pictures
    open_sampling(page)
    set_number(page, "max-tokens", 24)  # the opening is what counts; a short reply keeps the test quick

    first = ask_with_picture(page, circle, "What is in this picture?", replies_before=0)
    assert reply_body(first).startswith(OPENING), first
    line = figures_line(first)
    assert re.search(r" · xc2-partial · LoRA [\d.]+ (?:kB|MB) sent \(weights\) · ", line), line

    second = ask_with_picture(page, square, "Describe the image.", replies_before=1)
    assert reply_body(second).startswith(OPENING), second
    line = figures_line(second)
    assert " · xc2-partial · LoRA 8 B sent (task id only) · " in line, line
    assert len(bot_texts(page)) == 2


def test_compare_on_a_picture_runs_the_base_column_with_the_partial_adapter_on(xc2_page, pictures):
    """Compare takes the picture to its column; the model's own adapter stays on in the base column, the only one
    picked (another adapter would be refused: this deployment does not combine adapters)."""
    page, (circle, _) = xc2_page, pictures
    page.get_by_role("tab", name="Compare").click()
    assert page.locator("#compare-adapter-0 input").input_value() == BASE_WITH_OWN
    assert page.locator("#compare-adapter-1 input").input_value() == "(none)"
    texts = run_compare(page, "What is in this picture?", picture=circle, max_tokens=16, timeout=REPLY_TIMEOUT)
    assert texts[0].startswith(OPENING), texts
    state = column_states(page)[0]
    assert state.startswith("done · ") and re.search(r" · xc2-partial · LoRA [\d.]+ (?:B|kB|MB) sent ", state), state
