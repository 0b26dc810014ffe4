"""Browser tabs on the app: Debian's Chromium's path and flags, the launch-token cookie, a tab opened like a first
visit.

Only the test suite imports this module; it imports nothing of the app.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from pathlib import Path

CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync"]



def grant_access(browser_context, ctx, url: str) -> None:
    """Give the browser the app's launch-token cookie (what opening the printed ?token= URL does)."""
    browser_context.add_cookies([{"name": ctx.access.cookie, "value": ctx.access.token, "url": url,
                                  "httpOnly": True, "sameSite": "Strict"}])


# No CSS animations or transitions in test tabs: a spinner or a pulsing "generating" mark repaints the page every
# frame, and in headless Chromium every frame is drawn on the CPU the servers need.
STILL_PAGES_JS = """document.addEventListener("DOMContentLoaded", () => {
    const style = document.createElement("style");
    style.textContent = "*, *::before, *::after { animation: none !important; transition: none !important; }";
    document.head.appendChild(style);
});"""

BROWSER_TIMEOUT_MS = 90_000  # waits without a limit of their own: a page on a loaded 2-core machine can take a while



# Each test's tab starts like a first visit (no conversations kept by earlier tests in this browser's
# local storage); reloads within the test keep what the test stored.
FIRST_VISIT_JS = """if (!sessionStorage.getItem("test-started")) {
    localStorage.clear(); sessionStorage.setItem("test-started", "1");
}"""


def first_visit(browser_context, url: str, timeout_ms: int | None = None):
    """A new tab on the app at `url`, opened like a person's first visit, once the chat input shows (within
    `timeout_ms`, else the context's wait); the caller closes it."""
    page = browser_context.new_page()
    page.add_init_script(FIRST_VISIT_JS)
    page.goto(url)
    page.wait_for_selector("#chat-input textarea", timeout=timeout_ms)
    return page


@contextlib.contextmanager
def app_tab(browser_context, served, timeout_ms: int = 30_000):
    """A new tab on the app `served` ((context, URL)) opened like a first visit with the URL the console prints (its
    token becomes a cookie), once the chat input shows; closed afterwards."""
    ctx, app_url = served
    page = first_visit(browser_context, ctx.access.url(app_url), timeout_ms)
    try:
        yield page
    finally:
        page.close()


@contextlib.contextmanager
def served_page(browser_context, ctx, port: int, build: Callable[[], object], css: str | None = None
                ) -> Iterator[object]:
    """The page `build()` lays out (a page module's build, alone, styled with `css` when given), served in this
    process on `port` for the block's length, and a tab on it holding the app's launch-token cookie; the tab (closed
    afterwards)."""
    import gradio as gr

    with gr.Blocks() as blocks:
        build()
    blocks.queue().launch(server_name="127.0.0.1", server_port=port, prevent_thread_lock=True, quiet=True, css=css)
    url = f"http://127.0.0.1:{port}/"
    grant_access(browser_context, ctx, url)
    page = browser_context.new_page()
    try:
        page.goto(url)
        yield page
    finally:
        page.close()
        blocks.close()
