"""What a person does in the chat tab, in Debian's Chromium driven by Playwright."""

import time

from tests.browser.chat_helpers import (
    ask,
    bot_texts,
    open_sampling,
    progress_shown,
    reply_body,
    set_number,
    settled_reply,
    status_line,
    wait_until,
)

__all__ = ["ask", "bot_texts", "settled_reply"]  # other test files import them from here too


def test_reply_streams_into_the_chatbot(page):
    # a reply of many tokens: a short one ("The capital of France is Paris.") came in two updates on a loaded
    # machine, where the app coalesces tokens that arrive within one update interval (app/chat/throttle.py)
    open_sampling(page)
    set_number(page, "max-tokens", 60)
    ask(page, "What is the capital of France? Tell me about it.")
    seen, deadline = [], time.monotonic() + 240
    while time.monotonic() < deadline:
        texts = bot_texts(page)
        if texts and (not seen or texts[-1] != seen[-1]):
            seen.append(texts[-1])
        if texts and "Paris" in texts[-1] and page.locator("#chatbot .pending").count() == 0:
            break
        time.sleep(0.05)
    assert "Paris" in seen[-1]
    assert len(set(seen)) >= 3, seen  # the reply grew in steps: streaming is visible in the page
    assert status_line(page).startswith("Ready")
    assert not progress_shown(page, "#status")  # its refreshes hide their progress


def test_stop_ends_the_reply_and_the_server_request(page, triton):
    log = triton.process.log_path
    before = log.read_text().count("cpu engine: request")
    open_sampling(page)
    set_number(page, "max-tokens", 400)
    ask(page, "Write a very long story about a dragon and a knight.")
    wait_until(lambda: any(len(t) > 20 for t in bot_texts(page)), timeout=180, what="the reply to stream")
    page.click("#stop")
    wait_until(lambda: "(stopped)" in (bot_texts(page) or [""])[-1], what="the reply to say (stopped)")
    wait_until(lambda: log.read_text().count("cpu engine: request") > before, step=0.1,
               what="the engine to log the cancellation")


def test_clear_and_regenerate(page):
    ask(page, "Say hello.")
    first = settled_reply(page)
    page.click("#regenerate")
    again = settled_reply(page)
    assert len(bot_texts(page)) == 1 and reply_body(again) == reply_body(first)  # greedy: the same reply
    page.click("#clear")  # asks first: nothing is gone yet
    page.wait_for_selector("#chat-confirm-question:has-text('Clear this conversation?')")
    assert len(bot_texts(page)) == 1
    page.click("#chat-confirm-keep")
    page.wait_for_selector("#chat-confirm", state="hidden")
    assert len(bot_texts(page)) == 1
    page.click("#clear")
    page.click("#chat-confirm-yes")
    page.wait_for_function("document.querySelectorAll('#chatbot .message').length === 0")
    page.click("#chat-undo")  # and it comes back
    page.wait_for_function("document.querySelectorAll('#chatbot .message.bot').length === 1")
    page.wait_for_selector("#chat-undo", state="hidden")


def test_empty_message_gets_a_clear_message(page):
    ask(page, "   ")
    page.wait_for_selector("text=Type a message first.")
    assert bot_texts(page) == []
