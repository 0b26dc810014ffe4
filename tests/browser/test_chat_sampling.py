"""Greedy / Sample: the default is greedy (what the server does unasked) with the sampling controls
disabled; Sample enables them and Regenerate then gives another reply."""

from tests.browser.chat_helpers import (
    ask,
    bot_texts,
    open_sampling,
    reply_body,
    set_number,
    settled_reply,
    wait_until,
)

SAMPLE_ONLY = ("#temperature input[type=number]", "#top-k input[type=number]", "#top-p input[type=number]",
               "#seed textarea, #seed input")


def enabled(page) -> list[bool]:
    return [page.locator(selector).first.is_enabled() for selector in SAMPLE_ONLY]


def test_sample_enables_its_controls_and_regenerate_varies(page):
    open_sampling(page)
    assert page.locator("#decoding input[value=greedy]").is_checked()
    assert enabled(page) == [False] * 4
    page.locator("#decoding label", has_text="Sample").click()
    page.wait_for_function("!document.querySelector('#temperature input[type=number]').disabled")
    assert enabled(page) == [True] * 4
    set_number(page, "max-tokens", 24)
    set_number(page, "temperature", 1.5)
    ask(page, "Write one sentence about the sea.")
    shown = settled_reply(page)
    replies = [reply_body(shown)]
    for _ in range(2):
        page.click("#regenerate")
        # a new reply replaces the old one (its figures line alone differs run to run)
        wait_until(lambda previous=shown: bot_texts(page) != [previous], what="the new reply")
        shown = settled_reply(page)
        replies.append(reply_body(shown))
    assert len(bot_texts(page)) == 1
    assert len(set(replies)) > 1, replies  # a fresh seed per reply: sampling is not the same reply again


def test_the_settings_and_the_system_prompt_survive_a_reload(page):
    """They were reset to their defaults on every reload."""
    open_sampling(page)
    page.locator("#decoding label", has_text="Sample").click()
    page.wait_for_function("!document.querySelector('#temperature input[type=number]').disabled")
    set_number(page, "temperature", 1.3)
    set_number(page, "max-tokens", 77)
    page.fill("#system-prompt textarea", "Answer like a sailor.")
    page.locator("#system-prompt textarea").blur()
    page.wait_for_timeout(1500)  # the saves are queued jobs: let them reach the browser's storage
    page.reload()
    page.wait_for_selector("#chat-input textarea")
    open_sampling(page)
    wait_until(lambda: page.input_value("#system-prompt textarea") == "Answer like a sailor.", what="the prompt")
    assert page.locator("#decoding input[value=sample]").is_checked()
    assert float(page.input_value("#temperature input[type=number]")) == 1.3
    assert float(page.input_value("#max-tokens input[type=number]")) == 77
    assert enabled(page) == [True] * 4  # Sample's controls are on again
