"""A reply's versions, Continue after the token limit, and the conversation's height, in the browser."""

import re

from tests.browser.chat_helpers import (
    ask,
    bot_texts,
    chat_state,
    figures_line,
    named_adapter,
    open_sampling,
    reply_body,
    set_number,
    settled_reply,
    wait_until,
)
from tests.browser.test_adapters import pick

CUT_MARK = "cut at the {limit}-token limit"


def shown_version(page) -> str:
    """The last reply's version stepper as shown ("" when it is hidden)."""
    stepper = page.locator("#reply-version")
    return stepper.inner_text().strip() if stepper.is_visible() else ""


def words(text: str) -> str:
    """A reply's words: without its figures line and cut mark."""
    return "\n".join(line for line in reply_body(text).splitlines() if "-token limit" not in line).strip()


def test_regenerate_keeps_each_version_and_steps_between_them(page):
    open_sampling(page)
    set_number(page, "max-tokens", 4)
    ask(page, "What is the capital of France?")
    short = settled_reply(page)
    assert shown_version(page) == ""  # one version: no stepper
    set_number(page, "max-tokens", 30)
    page.click("#regenerate")
    wait_until(lambda: shown_version(page) == "2/2", what="the second version")
    longer = settled_reply(page)
    assert len(bot_texts(page)) == 1 and words(longer) != words(short) and words(longer).startswith(words(short))
    page.click("#older-version")
    wait_until(lambda: shown_version(page) == "1/2", what="the first version")
    assert words(bot_texts(page)[0]) == words(short) and not page.locator("#older-version").is_enabled()
    page.reload()  # the versions are kept with the conversation in the browser
    wait_until(lambda: shown_version(page) == "1/2", what="the versions to come back")
    assert words(bot_texts(page)[0]) == words(short)
    page.click("#newer-version")
    wait_until(lambda: shown_version(page) == "2/2", what="the second version again")
    assert words(bot_texts(page)[0]) == words(longer)


def test_a_cut_reply_says_so_and_continue_goes_on_with_it(page):
    open_sampling(page)
    set_number(page, "max-tokens", 5)
    ask(page, "What is the capital of France?")
    cut = settled_reply(page)
    assert CUT_MARK.format(limit=5) in cut
    wait_until(lambda: page.locator("#continue").is_enabled(), what="Continue to be offered")
    set_number(page, "max-tokens", 40)
    page.click("#continue")
    wait_until(lambda: CUT_MARK.format(limit=5) not in bot_texts(page)[-1] and figures_line(bot_texts(page)[-1]),
               timeout=240, what="the continued reply", explain=lambda: chat_state(page))  # 40 tokens: beside busy_machine they took over 90 s
    whole = settled_reply(page)
    assert len(bot_texts(page)) == 1 and words(whole).startswith(words(cut)) and len(words(whole)) > len(words(cut))
    assert "Paris" in whole and not page.locator("#continue").is_enabled()
    counted = re.match(r"(\d+) tokens \((\d+) after Continue\) · ", figures_line(whole))  # the whole reply counted
    assert counted and int(counted[1]) == 5 + int(counted[2]), figures_line(whole)


def test_the_adapter_is_named_once_under_a_reply(page):
    pick(page, "adapter", "pirate")
    ask(page, "Say hello.")
    reply = settled_reply(page)
    assert named_adapter(reply) == "pirate" and reply.lower().count("pirate") == 1 and "adapter:" not in reply


def test_the_conversation_uses_the_screen_height(page):
    page.set_viewport_size({"width": 1280, "height": 1000})
    height = page.locator("#chatbot").bounding_box()["height"]
    # what the screen has left with the message box in view (test_layout checks 1280x900); was about 350-420 px
    assert height >= 500, height
    box = page.locator("#chat-input").bounding_box()
    assert box["y"] + box["height"] <= 1000, box
