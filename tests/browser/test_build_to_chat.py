"""Build page -> chat: launch the CPU twin of the family chosen in the form from the Build tab, then chat with it."""

import pytest
from playwright.sync_api import TimeoutError as PlaywrightTimeout

from app.build.engine import family_choices
from app.context import AppConfig, AppContext
from app.deployments.runner.deployment import RunnerDeployment
from app.web.pages.build import twin_of
from app.web.ui import build_app
from tests.browser.chat_helpers import ask_about_image, set_number, status_line, wait_until
from tests.browser_tabs import grant_access
from tests.pictures import chelsea_picture
from tests.servers import free_port, free_ports


@pytest.fixture
def fresh_app():
    """An app whose chat points at a server that does not exist yet."""
    port = free_port()
    ctx = AppContext(AppConfig(triton_url=f"127.0.0.1:{free_port()}", port=port))
    blocks = build_app(ctx)
    blocks.launch(server_name="127.0.0.1", server_port=port, prevent_thread_lock=True, quiet=True)
    yield ctx, f"http://127.0.0.1:{port}/"
    blocks.close()


def pick_family(page, name: str) -> None:
    page.locator("#build-family input").click()
    page.locator("#build-family input").fill(name)
    page.get_by_role("option", name=name, exact=True).click()


def test_launch_the_chosen_familys_twin_from_the_build_page_then_chat(browser_context, fresh_app, tmp_path):
    """The CPU twin offered follows the form's family; Kosmos-2 picked, the button starts its runner twin (not the cpu-ocr demo), the page says so, and the chat (the runner kind) answers
    an image question."""
    ctx, url = fresh_app
    picture = chelsea_picture(tmp_path / "chelsea.png")
    grant_access(browser_context, ctx, url)
    page = browser_context.new_page()
    try:
        page.goto(url)
        page.wait_for_selector("#status")
        assert "Waiting" in status_line(page)
        page.get_by_role("tab", name="Build").click()
        page.get_by_text("Server ports").click()
        http, grpc = free_ports(2)
        set_number(page, "build-http-port", http)
        set_number(page, "build-grpc-port", grpc)
        assert page.input_value("#build-cpu-twin input") == twin_of(family_choices()[0][1])  # the first family's
        pick_family(page, "Kosmos-2")
        page.wait_for_function("document.querySelector('#build-cpu-twin input').value === 'kosmos-2'")
        page.click("#build-cpu-demo")
        page.wait_for_function("document.querySelector('#build-server').innerText.includes('CPU twin of kosmos-2')")
        try:
            page.wait_for_selector("#build-open-chat", state="visible", timeout=400_000)
        except PlaywrightTimeout as exc:  # say what the page showed: was the server ready, did its poll run?
            shown = {sel: page.inner_text(sel) for sel in ("#build-server", "#build-status")}
            raise AssertionError(f"no 'Chat with this server' button; the page showed {shown}") from exc
        assert "Serving the CPU twin of kosmos-2" in page.inner_text("#build-server")
        page.click("#build-open-chat")
        page.wait_for_selector("#chat-input textarea", state="visible")
        twin = ctx.servers.get("build").deployment  # listed, and this browser session's choice
        assert isinstance(twin, RunnerDeployment) and twin.family == "kosmos-2" and twin.url == f"127.0.0.1:{grpc}"
        # the picker follows once the page has the new list (a round trip after the tab switch)
        wait_until(lambda: "Build page: CPU twin of kosmos-2" in page.input_value("#server input"), timeout=60,
                   what="this session's server picker on the twin")
        reply = ask_about_image(page, picture, "What animal is this?", timeout=400)
        assert "cat" in reply.lower(), reply
        page.get_by_role("tab", name="Build").click()
        page.click("#build-stop-server")
        page.wait_for_selector("text=Triton stopped.")
    finally:
        page.close()
