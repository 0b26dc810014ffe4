"""A reply is running: a message sent meanwhile waits in view and is answered next; Stop is usable only
then; the conversation's own trash icon cancels like Clear. At a desktop width and at 400 px."""

from tests.browser.chat_helpers import (
    ask,
    bot_texts,
    named_adapter,
    open_sampling,
    replying,
    set_number,
    user_texts,
    wait_until,
)
from tests.browser.test_adapters import pick


def engine_cancellations(triton) -> int:
    return triton.process.log_path.read_text().count("cpu engine: request")


def start_long_reply(page, tokens: int) -> None:
    open_sampling(page)
    set_number(page, "max-tokens", tokens)
    ask(page, "Tell me a long story about a dragon and a knight.")
    wait_until(lambda: replying(page) and any(len(t) > 10 for t in bot_texts(page)), what="the reply to stream")


def test_a_message_sent_while_replying_waits_and_is_answered_next(sized_page):
    page = sized_page
    assert not replying(page)  # nothing runs yet: Stop is disabled
    start_long_reply(page, 100)
    pick(page, "adapter", "pirate")  # for the next message only
    set_number(page, "max-tokens", 12)  # ... and a short reply: a queued message keeps the settings it was sent with
    ask(page, "Second question")
    wait_until(lambda: page.locator("#chat-input textarea").input_value() == "",
               what="the box to be emptied")  # the server took the message
    waiting = wait_until(lambda: [t for t in user_texts(page) if "waiting to be sent" in t],
                         what="the queued message to show")
    assert "Second question" in waiting[0]
    assert replying(page) and len(bot_texts(page)) == 1  # the first reply is still the one streaming
    wait_until(lambda: not replying(page) and len(bot_texts(page)) == 2, timeout=180, what="both replies")
    assert user_texts(page) == ["Tell me a long story about a dragon and a knight.", "Second question"]
    story, second = bot_texts(page)
    assert named_adapter(story) == "base model" and named_adapter(second) == "pirate"  # each with its own adapter
    assert len(story.split()) > 40 >= len(second.split())  # each with its own token limit (100, then 12)


def test_stop_is_enabled_only_while_a_reply_runs(sized_page):
    page = sized_page
    assert not page.locator("#stop").is_enabled()
    start_long_reply(page, 300)
    page.click("#stop")
    wait_until(lambda: "(stopped)" in bot_texts(page)[-1], what="(stopped)")
    wait_until(lambda: not page.locator("#stop").is_enabled(), what="Stop to be disabled")
    assert page.locator("#regenerate").is_enabled()


def test_the_trash_icon_cancels_a_running_reply(sized_page, triton):
    page = sized_page
    before = engine_cancellations(triton)
    start_long_reply(page, 300)
    page.click("#chatbot button[aria-label=Clear]")
    wait_until(lambda: not replying(page), what="the reply to end")
    wait_until(lambda: engine_cancellations(triton) > before, what="the engine to log the cancellation")
    page.wait_for_timeout(1500)  # a late update of the cancelled reply would bring the conversation back
    assert page.locator("#chatbot .message").count() == 0
