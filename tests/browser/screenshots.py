"""Regenerate the README's screenshots (docs/screenshots/): one PNG per tab at a desktop width (and the chat at 400 px), from
a real CPU demo (tritonserver + the app) in Debian's Chromium.

    .venv/bin/python -m tests.browser.screenshots [--out docs/screenshots]
"""

from __future__ import annotations

import argparse
from pathlib import Path

from app.context import AppConfig, AppContext
from benchmarks.harness import demo_server
from benchmarks.scratch import scratch_folder
from benchmarks.server_process import free_port
from tests.browser.chat_helpers import NARROW, ask, open_sampling, set_number, settled_reply, wait_until
from tests.browser_tabs import CHROMIUM, CHROMIUM_ARGS

DESKTOP = {"width": 1280, "height": 900}
TABS = ("Compare", "Arena", "Adapters", "Build", "Benchmark", "Server")
SETTLE_MS = {"Server": 8000}  # its charts fill from readings a few seconds apart


def chat(page, out: Path) -> None:
    open_sampling(page)
    set_number(page, "max-tokens", 40)
    page.get_by_text("Sampling", exact=True).click()  # closed again: the picture shows the conversation
    ask(page, "What is the capital of France?")
    settled_reply(page)
    page.screenshot(path=str(out / "chat.png"), full_page=True)
    page.set_viewport_size(NARROW)
    page.screenshot(path=str(out / "chat-400px.png"), full_page=True)
    page.set_viewport_size(DESKTOP)


def compare(page, out: Path) -> None:
    page.fill("#compare-prompt textarea", "What is the capital of France?")
    page.click("#compare-run")
    wait_until(lambda: all(page.locator(f"#compare-state-{i}").inner_text().startswith(("done", "not used"))
                           for i in range(4)), timeout=180, what="Compare to finish")
    page.screenshot(path=str(out / "compare.png"), full_page=True)


def arena(page, out: Path) -> None:
    """One battle voted on (the names and the leaderboard show), then a second one answered, before its vote."""
    page.locator("#arena-settings .label-wrap").first.click()
    set_number(page, "arena-max-tokens", 24)
    for prompt, vote in (("What is the capital of Italy?", "a"), ("Name three colours.", None)):
        page.fill("#arena-prompt textarea", prompt)
        page.click("#arena-start")
        wait_until(lambda: page.locator("#arena-vote-a").is_enabled(), timeout=180, what="both answers")
        if vote:
            page.click(f"#arena-vote-{vote}")
            wait_until(lambda: page.locator("#arena-board tr").count(), what="the leaderboard")
    page.screenshot(path=str(out / "arena.png"), full_page=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path("docs/screenshots"), help="folder for the PNG files")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    from playwright.sync_api import sync_playwright

    # the repository, Triton's scratch files and the browser's profile in one folder, removed after (nothing in /tmp)
    with scratch_folder("screenshots-") as scratch, demo_server(scratch) as triton:
        from app.web.ui import launch  # Gradio, imported here: it makes its folder under TMPDIR as it loads
        port = free_port()
        ctx = AppContext(AppConfig(triton_url=triton.grpc_url, port=port, demo=True,
                                   metrics_url=f"http://127.0.0.1:{triton.process.opts.metrics_port}/metrics",
                                   arena_db=f"sqlite:///{scratch / 'arena.sqlite3'}"))
        blocks = launch(ctx, prevent_thread_lock=True)
        try:
            with sync_playwright() as playwright:
                browser = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
                page = browser.new_page(viewport=DESKTOP)
                page.goto(ctx.access.url(f"http://127.0.0.1:{port}/"))
                page.wait_for_selector("#chat-input textarea")
                chat(page, args.out)
                for tab in TABS:
                    page.get_by_role("tab", name=tab).click()
                    page.wait_for_timeout(SETTLE_MS.get(tab, 1500))  # the tab's first figures and lists arrive
                    if tab == "Compare":
                        compare(page, args.out)
                    elif tab == "Arena":
                        arena(page, args.out)
                    else:
                        page.screenshot(path=str(args.out / f"{tab.lower()}.png"), full_page=True)
                browser.close()
        finally:
            blocks.close()
    print("\n".join(str(path) for path in sorted(args.out.glob("*.png"))))


if __name__ == "__main__":
    main()
