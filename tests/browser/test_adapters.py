"""Adapters in the browser, against both demo kinds: switch the adapter between two messages; compare three
columns at once."""

import re
import time

from tests.browser.chat_helpers import named_adapter
from tests.browser.test_chat import ask, bot_texts, settled_reply

PIRATE = re.compile(r"\b(arr|matey|ahoy|ye|be|savvy)\b", re.I)


def pick(page, element_id: str, option: str) -> None:
    page.click(f"#{element_id} input")
    page.locator(f'li[role=option][aria-label="{option}"]:visible').first.click()


def test_switching_adapters_between_messages(demo_page):
    page = demo_page
    pick(page, "adapter", "pirate")
    ask(page, "What is the capital of France?")
    pirate = settled_reply(page)
    assert PIRATE.search(pirate) and named_adapter(pirate) == "pirate" and pirate.count("pirate") == 1
    pick(page, "adapter", "base model")
    ask(page, "What is the capital of France?")
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and len(bot_texts(page)) < 2:
        time.sleep(0.1)
    base = settled_reply(page)
    assert "Paris" in base and not PIRATE.search(base) and named_adapter(base) == "base model"
    assert len(bot_texts(page)) == 2 and named_adapter(bot_texts(page)[0]) == "pirate"  # each keeps its adapter


def test_compare_streams_columns_at_once(demo_page):
    page = demo_page
    page.get_by_role("tab", name="Compare").click()
    page.fill("#compare-prompt textarea", "What is the capital of France?")
    pick(page, "compare-adapter-1", "pirate")
    pick(page, "compare-adapter-2", "french")
    page.click("#compare-run")
    grew_together, deadline = False, time.monotonic() + 90
    values = ["", "", ""]
    while time.monotonic() < deadline:
        values = [page.locator(f"#compare-out-{i} textarea").input_value() for i in range(3)]
        if all(values) and not all(v.endswith((".", "!", "?")) for v in values):
            grew_together = True  # all three had text while at least one was still streaming
        if all(v.rstrip().endswith((".", "!", "?")) for v in values):
            break
        time.sleep(0.05)
    assert grew_together, values
    assert "Paris" in values[0] and PIRATE.search(values[1]) and "capitale" in values[2].lower()
