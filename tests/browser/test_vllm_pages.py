"""The pages against vLLM's CPU build (`python -m app --openai ...`): chat with the adapter dropdown, Stop
(checked on vLLM's /metrics), Compare, and the Adapters tab's runtime add and adapter check."""

from __future__ import annotations

import time
import uuid

import pytest

from setup.paths import PROJECT_ROOT
from tests.browser.chat_helpers import named_adapter, open_sampling, set_number, status_line, wait_until
from tests.browser.test_adapters import PIRATE, pick
from tests.browser.test_chat import ask, bot_texts, settled_reply
from tests.browser_tabs import grant_access
from tests.integration.vllm_fixtures import metrics_value, zero_b_adapter


@pytest.fixture
def vpage(browser_context, vllm_app):
    ctx, url = vllm_app
    grant_access(browser_context, ctx, url)
    page = browser_context.new_page()
    page.goto(url)
    page.wait_for_selector("#chat-input textarea")
    yield page
    page.close()


def test_chat_adapter_dropdown_changes_the_style(vpage):
    assert "OpenAI-compatible server (vllm)" in status_line(vpage)
    pick(vpage, "adapter", "pirate")
    ask(vpage, "What is the capital of France?")
    reply = settled_reply(vpage)
    assert PIRATE.search(reply) and named_adapter(reply) == "pirate"


def test_stop_cancels_on_vllm(vpage, vllm):
    open_sampling(vpage)
    set_number(vpage, "max-tokens", 1500)
    ask(vpage, "Write a very long story about a dragon and a knight.")
    wait_until(lambda: any(len(t) > 20 for t in bot_texts(vpage)), timeout=180, what="the reply to stream")
    wait_until(lambda: metrics_value(vllm.url, "vllm:num_requests_running") >= 1, step=0.2,
               what="vLLM to count the request as running")
    vpage.click("#stop")
    wait_until(lambda: "(stopped)" in (bot_texts(vpage) or [""])[-1], what="the reply to say (stopped)")
    wait_until(lambda: metrics_value(vllm.url, "vllm:num_requests_running") == 0, step=0.2,
               what="vLLM to end the request")  # far sooner than 1,500 tokens would take


def test_compare_streams_base_and_both_adapters(vpage):
    vpage.get_by_role("tab", name="Compare").click()
    vpage.fill("#compare-prompt textarea", "What is the capital of France?")
    pick(vpage, "compare-adapter-1", "pirate")
    pick(vpage, "compare-adapter-2", "french")
    vpage.click("#compare-run")
    values, deadline = ["", "", ""], time.monotonic() + 240
    while time.monotonic() < deadline:
        values = [vpage.locator(f"#compare-out-{i} textarea").input_value() for i in range(3)]
        if all(v.rstrip().endswith((".", "!", "?")) for v in values):
            break
        time.sleep(0.1)
    assert "Paris" in values[0] and PIRATE.search(values[1]) and "capitale" in values[2].lower()


def test_adapters_tab_adds_at_runtime_and_checks(vpage, vllm_app, tmp_path):
    ctx, _ = vllm_app
    name = f"flat{uuid.uuid4().hex[:6]}"
    source = zero_b_adapter(PROJECT_ROOT / "adapters" / "pirate", tmp_path / name)
    vpage.get_by_role("tab", name="Adapters").click()
    vpage.get_by_label("Add from a folder on the server").fill(str(source))
    vpage.click("#add-adapter-folder")
    message = vpage.locator("#adapter-message")
    message.filter(has_text="Added").wait_for()
    assert "Registered with the server at run time" in message.inner_text()
    pick(vpage, "check-adapter-name", name)
    vpage.click("#check-adapter")
    message.filter(has_text="does not seem to be applied").wait_for()
    pick(vpage, "check-adapter-name", "pirate")
    vpage.click("#check-adapter")
    message.filter(has_text="Adapter 'pirate' is applied").wait_for()
