"""Build page -> chat: launch the CPU demo server from the Build tab, then chat with it."""

import time

import pytest

from app.chat.context import AppConfig, AppContext
from app.web.ui import build_app
from tests.browser.test_chat import ask, settled_reply
from tests.conftest import free_port, grant_access


@pytest.fixture
def fresh_app():
    """An app whose chat points at a server that does not exist yet."""
    port = free_port()
    ctx = AppContext(AppConfig(triton_url=f"127.0.0.1:{free_port()}", port=port))
    blocks = build_app(ctx)
    blocks.launch(server_name="127.0.0.1", server_port=port, prevent_thread_lock=True, quiet=True)
    yield ctx, f"http://127.0.0.1:{port}/"
    blocks.close()


def test_launch_from_build_page_then_chat(browser_context, fresh_app):
    ctx, url = fresh_app
    grant_access(browser_context, ctx, url)
    page = browser_context.new_page()
    try:
        page.goto(url)
        page.wait_for_selector("#status")
        assert "Waiting" in page.locator("#status").inner_text()
        page.get_by_role("tab", name="Build").click()
        page.get_by_text("Server ports").click()
        http, grpc = free_port(), free_port()
        page.locator("#build-http-port input").fill(str(http))
        page.locator("#build-grpc-port input").fill(str(grpc))
        page.click("#build-cpu-demo")
        page.wait_for_selector("#build-open-chat", state="visible", timeout=240_000)
        page.click("#build-open-chat")
        page.wait_for_selector("#chat-input textarea", state="visible")
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and not page.locator("#status").inner_text().startswith("Ready"):
            time.sleep(0.5)
        assert f"127.0.0.1:{grpc}" in page.locator("#status").inner_text()
        assert ctx.deployment.url == f"127.0.0.1:{grpc}"
        ask(page, "What is the capital of France?")
        assert "Paris" in settled_reply(page, timeout=120)
        page.get_by_role("tab", name="Build").click()
        page.click("#build-stop-server")
        page.wait_for_selector("text=Triton stopped.")
    finally:
        page.close()
