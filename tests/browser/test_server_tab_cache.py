"""The Server tab's adapter-cache section per browser session, in Debian's Chromium: a session that added vLLM's CPU
build in the chat and asked it through pirate sees vLLM's own LoRA figures (vllm:lora_requests_info) with pirate
among the adapters in use lately; another session keeps the app's own (the demo: what the app saw of its cache)."""

from __future__ import annotations

from tests.browser.chat_helpers import ask, settled_reply, wait_until
from tests.browser.test_adapters import pick
from tests.browser_tabs import first_visit, grant_access

OWN_CACHE = "Adapters in the server's LoRA cache"
VLLM_FIGURES = "vllm:lora_requests_info (vLLM 0.32.0)"


def cache_text(page) -> str:
    return page.inner_text("#server-adapter-cache")


def open_server_tab(page) -> None:
    page.get_by_role("tab", name="Server").click()
    page.wait_for_selector("#server-adapter-cache", state="visible")


def test_the_cache_section_follows_the_sessions_server(browser_context, app_served, vllm):
    ctx, url = app_served
    grant_access(browser_context, ctx, url)
    keeps, switches = first_visit(browser_context, url), first_visit(browser_context, url)
    listed = {s.id for s in ctx.servers.listed()}
    try:
        switches.get_by_text("Add a server").click()
        switches.fill("#server-address input, #server-address textarea", vllm.url)
        switches.click("#server-add")
        wait_until(lambda: "OpenAI-compatible" in switches.input_value("#server input"), what="vLLM picked")
        pick(switches, "adapter", "pirate")
        ask(switches, "What is the capital of France?")
        assert settled_reply(switches)
        open_server_tab(switches)
        wait_until(lambda: VLLM_FIGURES in cache_text(switches), timeout=30, what="vLLM's own figures",
                   explain=lambda: cache_text(switches))
        shown = cache_text(switches)
        assert "pirate" in shown and "(max loras): 1" in shown and vllm.url in shown
        open_server_tab(keeps)  # the other session: the app's own demo, as before
        wait_until(lambda: OWN_CACHE in cache_text(keeps), timeout=30, what="the app's own cache",
                   explain=lambda: cache_text(keeps))
        assert VLLM_FIGURES not in cache_text(keeps)
    finally:
        for server in ctx.servers.listed():  # the session-wide app: the added vLLM goes off its list again
            if server.id not in listed:
                ctx.servers.remove(server.id)
        keeps.close()
        switches.close()
